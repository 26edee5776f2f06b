// A copy moves a tensor without an encoding: a host tensor's encoding is
// #offload.host, so a sparse (or any other) encoding would be dropped on the
// way. The copy ops refuse such a tensor (offload-find-saved-activations
// keeps it, valid-or-diagnosed.mlir; offload-insert-offloads refuses it,
// insert-offloads-refused.mlir).
// RUN: offload-opt %s -split-input-file -verify-diagnostics

#csr = #sparse_tensor.encoding<{map = (d0, d1) -> (d0 : dense, d1 : compressed)}>
func.func @offload_of_sparse_tensor(%s: tensor<8x8xf32, #csr>) -> tensor<8x8xf32, #offload.host> {
  // expected-error @+1 {{copies 'tensor<8x8xf32, #sparse_tensor.encoding<{ map = (d0, d1) -> (d0 : dense, d1 : compressed) }>>', whose encoding has no host form}}
  %h = offload.offload_to_cpu %s : tensor<8x8xf32, #csr> -> tensor<8x8xf32, #offload.host>
  return %h : tensor<8x8xf32, #offload.host>
}

// -----

#csr = #sparse_tensor.encoding<{map = (d0, d1) -> (d0 : dense, d1 : compressed)}>
func.func @load_into_sparse_tensor(%h: tensor<8x8xf32, #offload.host>) -> tensor<8x8xf32, #csr> {
  // expected-error @+1 {{whose encoding has no host form}}
  %d = offload.load_to_gpu %h : tensor<8x8xf32, #offload.host> -> tensor<8x8xf32, #csr>
  return %d : tensor<8x8xf32, #csr>
}

// -----

#csr = #sparse_tensor.encoding<{map = (d0, d1) -> (d0 : dense, d1 : compressed)}>
func.func @offload_start_of_sparse_tensor(%s: tensor<8x8xf32, #csr>) -> tensor<8x8xf32, #offload.host> {
  // expected-error @+1 {{whose encoding has no host form}}
  %f = offload.offload_start %s : tensor<8x8xf32, #csr> -> !offload.future<tensor<8x8xf32, #offload.host>>
  %h = offload.wait %f : !offload.future<tensor<8x8xf32, #offload.host>>
  return %h : tensor<8x8xf32, #offload.host>
}

// -----

// An encoding of another dialect (not a sparse one) is refused the same.
func.func @load_start_into_encoded_tensor(%h: tensor<8xf32, #offload.host>) -> tensor<8xf32, "other"> {
  // expected-error @+1 {{copies 'tensor<8xf32, "other">', whose encoding has no host form}}
  %f = offload.load_start %h : tensor<8xf32, #offload.host> -> !offload.future<tensor<8xf32, "other">>
  %d = offload.wait %f : !offload.future<tensor<8xf32, "other">>
  return %d : tensor<8xf32, "other">
}

