// A scatter (ATen's index_put, scatter, index_add and their kin) writes only
// the positions its indices name, into a destination that is a real buffer:
// the model neither fuses it away nor charges the whole destination's bytes
// as traffic. Where nothing else reads the destination, the scatter writes
// it in place, as Inductor does. So an embedding's backward (a 1 MiB fp32
// accumulator, then its 512 KiB bf16 copy) peaks at the copy with the
// 1 MiB weight, the accumulator and the copy live: 2.5 MiB. (On the bridge's
// bf16x8 Llama step this is the 2 GiB fp32 embedding gradient at the end of
// backward, the peak left once offloading has lowered the one at the
// output head: measured on the H100, 12.43 GiB.)
// RUN: offload-opt %s -split-input-file -offload-report="fuse-memory-bound=true release=at-wait" -o /dev/null 2>&1 | FileCheck %s

// CHECK-LABEL: offload report: @scatter_writes_named_positions_forward -> @scatter_writes_named_positions_backward
// CHECK: peak device memory 2.5 MiB -> 2.5 MiB
// CHECK: peak without offload: at {{.*}} @scatter_writes_named_positions_backward #2 prims.convert_element_type.default "convert_element_type"
func.func @scatter_writes_named_positions_forward(%w: tensor<1024x256xf32>, %ids: tensor<8xi64>) -> (tensor<8x256xf32>, tensor<8xi64>)
    attributes {offload.backward = @scatter_writes_named_positions_backward, offload.num_outputs = 1 : i64} {
  %e = trace.op "aten.embedding.default"(%w, %ids) {node = "embedding"} : (tensor<1024x256xf32>, tensor<8xi64>) -> tensor<8x256xf32>
  return %e, %ids : tensor<8x256xf32>, tensor<8xi64>
}
func.func @scatter_writes_named_positions_backward(%ids: tensor<8xi64>, %g: tensor<8x256xf32>) -> tensor<1024x256xbf16> {
  %zero = trace.op "aten.full.default"() {node = "full_default"} : () -> tensor<1024x256xf32>
  %acc = trace.op "aten.index_put.default"(%zero, %ids, %g) {node = "index_put"} : (tensor<1024x256xf32>, tensor<8xi64>, tensor<8x256xf32>) -> tensor<1024x256xf32>
  %grad = trace.op "prims.convert_element_type.default"(%acc) {node = "convert_element_type"} : (tensor<1024x256xf32>) -> tensor<1024x256xbf16>
  return %grad : tensor<1024x256xbf16>
}

// -----

// The destination is read again after the scatter: the scatter writes a
// new buffer, and the peak is at it, with the weight, the destination, the
// new buffer and the gradient read live (3.0 MiB and 8 KiB).
// CHECK-LABEL: offload report: @destination_read_after_scatter_forward -> @destination_read_after_scatter_backward
// CHECK: peak device memory 3.0 MiB -> 3.0 MiB
// CHECK: peak without offload: at {{.*}} @destination_read_after_scatter_backward #1 aten.index_put.default "index_put"
func.func @destination_read_after_scatter_forward(%w: tensor<1024x256xf32>, %ids: tensor<8xi64>) -> (tensor<8x256xf32>, tensor<8xi64>)
    attributes {offload.backward = @destination_read_after_scatter_backward, offload.num_outputs = 1 : i64} {
  %e = trace.op "aten.embedding.default"(%w, %ids) {node = "embedding"} : (tensor<1024x256xf32>, tensor<8xi64>) -> tensor<8x256xf32>
  return %e, %ids : tensor<8x256xf32>, tensor<8xi64>
}
func.func @destination_read_after_scatter_backward(%ids: tensor<8xi64>, %g: tensor<8x256xf32>) -> (tensor<1024x256xf32>, tensor<1024x256xf32>) {
  %zero = trace.op "aten.full.default"() {node = "full_default"} : () -> tensor<1024x256xf32>
  %acc = trace.op "aten.index_put.default"(%zero, %ids, %g) {node = "index_put"} : (tensor<1024x256xf32>, tensor<8xi64>, tensor<8x256xf32>) -> tensor<1024x256xf32>
  return %acc, %zero : tensor<1024x256xf32>, tensor<1024x256xf32>
}
