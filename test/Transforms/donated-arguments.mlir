// RUN: offload-opt %s -split-input-file -offload-find-saved-activations="min-bytes=0" | FileCheck %s --check-prefix=FIND
// RUN: offload-opt %s -split-input-file --offload-activations="min-bytes=0 plan=all" | FileCheck %s --check-prefix=ALL
// RUN: offload-opt %s -split-input-file --offload-activations="min-bytes=0 plan=all report=text" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: offload-opt %s -split-input-file --offload-activations="min-bytes=0 plan=all release=at-wait" \
// RUN:   | offload-opt -split-input-file %{bufferize} --buffer-deallocation-pipeline %{lower} \
// RUN:   | FileCheck %s --check-prefix=LLVM

// A forward argument the caller donates (offload.donated: the activation a
// layer receives from the layer before, when each layer is its own graph)
// is offloaded like an intermediate; one it does not donate, and its views,
// stay where they are. The offload goes after the last forward use of the
// argument's storage (its view included).
// FIND-LABEL: func @donated_layer_input_is_offloaded_forward
// FIND-SAME: tensor<4096xf32> {offload.selected},
// FIND-SAME: tensor<1024xf32> {offload.selected},
// FIND-SAME: tensor<4096xf32> {offload.kept = "function argument"},
// FIND-SAME: tensor<1024xf32> {offload.kept = "view of a function argument"})
// ALL-LABEL: func @donated_layer_input_is_offloaded_forward
// ALL-SAME: (%[[X:.*]]: tensor<4096xf32> {offload.donated}, %[[W:.*]]: tensor<4096xf32>)
// ALL: math.exp %[[X]]
// ALL-NEXT: tensor.extract_slice %[[X]]
// ALL-NEXT: offload.offload_start %[[X]]
// ALL-LABEL: func @donated_layer_input_is_offloaded_backward
// ALL: offload.load_start %arg0
// REPORT: offload report: @donated_layer_input_is_offloaded_forward
// REPORT: 1  argument #0 {{ *}}tensor<4096xf32> {{ *}}16.0 KiB  #1 tensor.extract_slice
// REPORT: argument #1 {{.*}}kept: function argument
// The donated argument stays marked through bufferization (the verifier
// takes it on a memref), and its offload lowers like an intermediate's, the
// step releasing its device buffer.
// LLVM-LABEL: llvm.func @donated_layer_input_is_offloaded_forward
// LLVM: llvm.call @offload_rt_mlir_offload_start
// LLVM: llvm.call @offload_rt_mlir_release_source
func.func @donated_layer_input_is_offloaded_forward(
    %x: tensor<4096xf32> {offload.donated}, %w: tensor<4096xf32>)
    -> (tensor<4096xf32>, tensor<4096xf32>, tensor<1024xf32>, tensor<4096xf32>,
        tensor<1024xf32>)
    attributes {offload.backward = @donated_layer_input_is_offloaded_backward,
                offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<4096xf32>
  %xv = tensor.extract_slice %x[0] [1024] [1] : tensor<4096xf32> to tensor<1024xf32>
  %wv = tensor.extract_slice %w[0] [1024] [1] : tensor<4096xf32> to tensor<1024xf32>
  %t = math.tanh %e : tensor<4096xf32>
  return %t, %x, %xv, %w, %wv
      : tensor<4096xf32>, tensor<4096xf32>, tensor<1024xf32>, tensor<4096xf32>,
        tensor<1024xf32>
}
func.func @donated_layer_input_is_offloaded_backward(
    %x: tensor<4096xf32>, %xv: tensor<1024xf32>, %w: tensor<4096xf32>,
    %wv: tensor<1024xf32>, %g: tensor<4096xf32>) -> (tensor<4096xf32>, tensor<1024xf32>) {
  %0 = math.sqrt %g : tensor<4096xf32>
  %1 = arith.mulf %x, %0 : tensor<4096xf32>
  %2 = arith.mulf %1, %w : tensor<4096xf32>
  %3 = arith.addf %xv, %wv : tensor<1024xf32>
  return %2, %3 : tensor<4096xf32>, tensor<1024xf32>
}

// -----

// FIND-LABEL: func @undonated_argument_is_kept_forward
// FIND-SAME: {offload.kept = "function argument"}
func.func @undonated_argument_is_kept_forward(%x: tensor<4096xf32>)
    -> (tensor<4096xf32>, tensor<4096xf32>)
    attributes {offload.backward = @undonated_argument_is_kept_backward,
                offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<4096xf32>
  return %e, %x : tensor<4096xf32>, tensor<4096xf32>
}
func.func @undonated_argument_is_kept_backward(%x: tensor<4096xf32>, %g: tensor<4096xf32>)
    -> tensor<4096xf32> {
  %0 = arith.mulf %x, %g : tensor<4096xf32>
  return %0 : tensor<4096xf32>
}
