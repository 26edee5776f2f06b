// RUN: offload-opt %s -split-input-file -offload-find-saved-activations | FileCheck %s
// RUN: offload-opt %s -split-input-file -offload-find-saved-activations="min-bytes=0 deny-ops=aten.mm.default" | FileCheck %s --check-prefix=OPTS

// Every saved result gets exactly one decision; forward outputs get none.
// CHECK-LABEL: func @one_decision_per_saved_result_forward
// CHECK-SAME: -> (tensor<256xf32>,
// CHECK-SAME: tensor<256xf32> {offload.selected},
// CHECK-SAME: tensor<256xf32> {offload.kept = "function argument"},
// CHECK-SAME: tensor<16xf32> {offload.kept = "view of a function argument"},
// CHECK-SAME: tensor<256xf32> {offload.kept = "opted out (offload.keep)"},
// CHECK-SAME: tensor<4xf32> {offload.kept = "below min-bytes (16 < 1024)"},
// CHECK-SAME: tensor<?xf32> {offload.kept = "size unknown (dynamic shape)"})
// OPTS-LABEL: func @one_decision_per_saved_result_forward
// OPTS-SAME: tensor<4xf32> {offload.selected},
// OPTS-SAME: tensor<?xf32> {offload.selected})
func.func @one_decision_per_saved_result_forward(%x: tensor<256xf32>, %n: index)
    -> (tensor<256xf32>, tensor<256xf32>, tensor<256xf32>, tensor<16xf32>,
        tensor<256xf32>, tensor<4xf32>, tensor<?xf32>)
    attributes {offload.backward = @one_decision_per_saved_result_backward, offload.num_outputs = 1 : i64} {
  %0 = math.exp %x : tensor<256xf32>
  %1 = math.tanh %0 : tensor<256xf32>
  %v = tensor.extract_slice %x[0] [16] [1] : tensor<256xf32> to tensor<16xf32>
  %k = math.sin %0 {offload.keep} : tensor<256xf32>
  %s = tensor.empty() : tensor<4xf32>
  %d = tensor.empty(%n) : tensor<?xf32>
  return %1, %0, %x, %v, %k, %s, %d
      : tensor<256xf32>, tensor<256xf32>, tensor<256xf32>, tensor<16xf32>,
        tensor<256xf32>, tensor<4xf32>, tensor<?xf32>
}
func.func @one_decision_per_saved_result_backward(%a: tensor<256xf32>, %b: tensor<256xf32>, %c: tensor<16xf32>,
                    %d: tensor<256xf32>, %e: tensor<4xf32>, %f: tensor<?xf32>) {
  return
}

// -----

// A value that is also a forward output, or shares storage with one, frees
// nothing when offloaded. Saved values sharing one storage are offloaded
// together (that frees it), unless one of them stays for its own reason.
// CHECK-LABEL: func @forward_storage
// CHECK-SAME: -> (tensor<256xf32>,
// CHECK-SAME: tensor<256xf32> {offload.kept = "shares storage with forward output #0"},
// CHECK-SAME: tensor<16x16xf32> {offload.selected},
// CHECK-SAME: tensor<256xf32> {offload.selected},
// CHECK-SAME: tensor<256xf32> {offload.kept = "shares storage with kept saved result #5"},
// CHECK-SAME: tensor<4xf32> {offload.kept = "below min-bytes (16 < 1024)"})
func.func @forward_storage(%x: tensor<256xf32>)
    -> (tensor<256xf32>, tensor<256xf32>, tensor<16x16xf32>, tensor<256xf32>,
        tensor<256xf32>, tensor<4xf32>)
    attributes {offload.backward = @backward_storage, offload.num_outputs = 1 : i64} {
  %0 = math.exp %x : tensor<256xf32>
  %1 = math.tanh %x : tensor<256xf32>
  %2 = tensor.expand_shape %1 [[0, 1]] output_shape [16, 16] : tensor<256xf32> into tensor<16x16xf32>
  %3 = math.sin %x : tensor<256xf32>
  %4 = tensor.extract_slice %3[0] [4] [1] : tensor<256xf32> to tensor<4xf32>
  return %0, %0, %2, %1, %3, %4
      : tensor<256xf32>, tensor<256xf32>, tensor<16x16xf32>, tensor<256xf32>,
        tensor<256xf32>, tensor<4xf32>
}
func.func @backward_storage(%a: tensor<256xf32>, %b: tensor<16x16xf32>, %c: tensor<256xf32>,
                            %d: tensor<256xf32>, %e: tensor<4xf32>) {
  return
}

// -----

// Trace ops: deny-ops matches the framework target.
// CHECK-LABEL: func @forward_trace
// CHECK-SAME: tensor<64x64xf32> {offload.selected}
// CHECK-SAME: tensor<64x64xf32> {offload.selected}
// OPTS-LABEL: func @forward_trace
// OPTS-SAME: tensor<64x64xf32> {offload.kept = "producer in deny-ops"}
// OPTS-SAME: tensor<64x64xf32> {offload.selected}
func.func @forward_trace(%x: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>)
    attributes {offload.backward = @backward_trace, offload.num_outputs = 1 : i64} {
  %0 = trace.op "aten.mm.default"(%x, %x) {node = "mm"} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %1 = trace.op "aten.relu.default"(%0) {node = "relu"} : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %2 = trace.op "aten.sum.default"(%1) {node = "sum"} : (tensor<64x64xf32>) -> tensor<64x64xf32>
  return %2, %0, %1 : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
}
func.func @backward_trace(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>) {
  return
}

// -----

// An in-place op's result is its written operand's storage: saving the
// operand while the result is a forward output frees nothing.
// CHECK-LABEL: func @forward_in_place
// CHECK-SAME: -> (tensor<256xf32>, tensor<256xf32> {offload.kept = "shares storage with forward output #0"})
func.func @forward_in_place(%x: tensor<256xf32>) -> (tensor<256xf32>, tensor<256xf32>)
    attributes {offload.backward = @backward_in_place, offload.num_outputs = 1 : i64} {
  %0 = trace.op "aten.exp.default"(%x) : (tensor<256xf32>) -> tensor<256xf32>
  %1 = trace.op "aten.relu_.default"(%0) {mutates = array<i64: 0>} : (tensor<256xf32>) -> tensor<256xf32>
  return %1, %0 : tensor<256xf32>, tensor<256xf32>
}
func.func @backward_in_place(%a: tensor<256xf32>) {
  return
}

// -----

// Only traced ops (TracedOpInterface) name a framework op: an attribute
// that happens to be called `target` on another op is not read as one.
// CHECK-LABEL: func @forward_target_attr
// CHECK-SAME: tensor<1024xf32> {offload.selected}
// OPTS-LABEL: func @forward_target_attr
// OPTS-SAME: tensor<1024xf32> {offload.selected}
func.func @forward_target_attr(%x: tensor<1024xf32>) -> (tensor<1024xf32>, tensor<1024xf32>)
    attributes {offload.backward = @backward_target_attr, offload.num_outputs = 1 : i64} {
  %0 = math.exp %x {target = "aten.mm.default"} : tensor<1024xf32>
  %1 = math.tanh %0 : tensor<1024xf32>
  return %1, %0 : tensor<1024xf32>, tensor<1024xf32>
}
func.func @backward_target_attr(%a: tensor<1024xf32>) {
  return
}
