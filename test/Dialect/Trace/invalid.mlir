// RUN: offload-opt %s -split-input-file -verify-diagnostics

func.func @operand_out_of_range(%a: tensor<4xf32>) {
  // expected-error @+1 {{argument spec refers to operand #1 but the op has 1 operands}}
  %0 = trace.op "aten.neg.default"(%a) {args = [#trace.operand<1>]} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @operand_not_placed(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{operand #1 does not appear in 'args' or 'kwargs'}}
  %0 = trace.op "aten.add.Tensor"(%a, %b) {args = [#trace.operand<0>]} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @mutates_out_of_range(%a: tensor<4xf32>) {
  // expected-error @+1 {{'mutates' names operand #2 but the op has 1 operands}}
  %0 = trace.op "aten.relu_.default"(%a) {mutates = array<i64: 2>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @empty_target(%a: tensor<4xf32>) {
  // expected-error @+1 {{requires a non-empty target name}}
  %0 = trace.op ""(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @view_two_results(%a: tensor<4xf32>) {
  // expected-error @+1 {{requires one result}}
  %0:2 = "trace.view"(%a) {target = "aten.t.default"} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}
