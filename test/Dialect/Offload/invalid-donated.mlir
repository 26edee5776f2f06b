// RUN: offload-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{expects 'offload.donated' to be a unit attribute}}
func.func @donated_must_be_unit(%x: tensor<4xf32> {offload.donated = 1 : i64}) {
  return
}

// -----

// expected-error @+1 {{expects 'offload.donated' on a ranked tensor or memref argument of a function}}
func.func @donated_must_be_a_ranked_tensor(%x: f32 {offload.donated}) {
  return
}

// -----

// expected-error @+1 {{unknown offload argument attribute 'offload.donate'}}
func.func @unknown_argument_attribute(%x: tensor<4xf32> {offload.donate}) {
  return
}
