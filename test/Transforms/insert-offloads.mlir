// RUN: offload-opt %s -split-input-file -offload-insert-offloads -verify-diagnostics | FileCheck %s

// The offload goes right after the last forward use, not after the return;
// backward reads the host value through one load at its entry.
// CHECK-LABEL: func @offload_after_last_use_forward
// CHECK-SAME: -> (tensor<256xf32>, tensor<256xf32, #offload.host>)
// CHECK: %[[E:.*]] = math.exp
// CHECK-NEXT: %[[T:.*]] = math.tanh %[[E]]
// CHECK-NEXT: %[[H:.*]] = offload.offload_to_cpu %[[E]] : tensor<256xf32> -> tensor<256xf32, #offload.host>
// CHECK-NEXT: %[[R:.*]] = math.sqrt %[[T]]
// CHECK-NEXT: return %[[R]], %[[H]]
// CHECK-LABEL: func @offload_after_last_use_backward
// CHECK-SAME: (%[[S:.*]]: tensor<256xf32, #offload.host>, %[[G:.*]]: tensor<256xf32>)
// CHECK-NEXT: %[[L:.*]] = offload.load_to_gpu %[[S]] : tensor<256xf32, #offload.host> -> tensor<256xf32>
// CHECK-NEXT: math.sqrt %[[G]]
// CHECK-NEXT: arith.mulf %[[L]]
func.func @offload_after_last_use_forward(%x: tensor<256xf32>) -> (tensor<256xf32>, tensor<256xf32> {offload.selected})
    attributes {offload.backward = @offload_after_last_use_backward, offload.num_outputs = 1 : i64} {
  %0 = math.exp %x : tensor<256xf32>
  %1 = math.tanh %0 : tensor<256xf32>
  %2 = math.sqrt %1 : tensor<256xf32>
  return %2, %0 : tensor<256xf32>, tensor<256xf32>
}
func.func @offload_after_last_use_backward(%s: tensor<256xf32>, %g: tensor<256xf32>) -> tensor<256xf32> {
  %0 = math.sqrt %g : tensor<256xf32>
  %1 = arith.mulf %s, %0 : tensor<256xf32>
  return %1 : tensor<256xf32>
}

// -----

// A use nested in a region counts at its top-level ancestor, and a later use
// of a view sharing the value's storage delays the offload too.
// CHECK-LABEL: func @use_in_region_and_later_view_forward
// CHECK: %[[E:.*]] = math.exp
// CHECK: scf.for
// CHECK: }
// CHECK-NEXT: %[[V:.*]] = tensor.expand_shape %[[E]]
// CHECK-NEXT: math.absf %[[V]]
// CHECK-NEXT: offload.offload_to_cpu %[[E]]
// CHECK-NEXT: return
func.func @use_in_region_and_later_view_forward(%x: tensor<256xf32>, %n: index) -> (tensor<16x16xf32>, tensor<256xf32> {offload.selected})
    attributes {offload.backward = @use_in_region_and_later_view_backward, offload.num_outputs = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %0 = math.exp %x : tensor<256xf32>
  %1 = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %x) -> tensor<256xf32> {
    %2 = arith.addf %acc, %0 : tensor<256xf32>
    scf.yield %2 : tensor<256xf32>
  }
  %v = tensor.expand_shape %0 [[0, 1]] output_shape [16, 16] : tensor<256xf32> into tensor<16x16xf32>
  %a = math.absf %v : tensor<16x16xf32>
  return %a, %0 : tensor<16x16xf32>, tensor<256xf32>
}
func.func @use_in_region_and_later_view_backward(%s: tensor<256xf32>) {
  return
}

// -----

// A value saved twice is offloaded once, returned once and loaded once (one
// storage, one copy); a value with no use but the return is offloaded right
// after its producer.
// CHECK-LABEL: func @value_saved_twice_forward
// CHECK-SAME: -> (tensor<256xf32>, tensor<256xf32, #offload.host>)
// CHECK: %[[E:.*]] = math.exp
// CHECK-NEXT: %[[H:.*]] = offload.offload_to_cpu %[[E]]
// CHECK-NEXT: %[[T:.*]] = math.tanh
// CHECK-NEXT: return %[[T]], %[[H]] :
// CHECK-LABEL: func @value_saved_twice_backward
// CHECK-SAME: (%[[A:.*]]: tensor<256xf32, #offload.host>) -> tensor<256xf32>
// CHECK-NEXT: %[[L:.*]] = offload.load_to_gpu %[[A]]
// CHECK-NEXT: arith.addf %[[L]], %[[L]]
func.func @value_saved_twice_forward(%x: tensor<256xf32>)
    -> (tensor<256xf32>, tensor<256xf32> {offload.selected}, tensor<256xf32> {offload.selected})
    attributes {offload.backward = @value_saved_twice_backward, offload.num_outputs = 1 : i64} {
  %0 = math.exp %x : tensor<256xf32>
  %1 = math.tanh %x : tensor<256xf32>
  return %1, %0, %0 : tensor<256xf32>, tensor<256xf32>, tensor<256xf32>
}
func.func @value_saved_twice_backward(%a: tensor<256xf32>, %b: tensor<256xf32>) -> tensor<256xf32> {
  %0 = arith.addf %a, %b : tensor<256xf32>
  return %0 : tensor<256xf32>
}

// -----

// The same for a value of dynamic shape: a copy of a value saved twice is
// one copy of itself, whatever its size.
// CHECK-LABEL: func @dynamic_value_saved_twice_forward
// CHECK-SAME: -> (tensor<?xf32>, tensor<?xf32, #offload.host>)
// CHECK: %[[E:.*]] = math.exp
// CHECK-NEXT: %[[H:.*]] = offload.offload_to_cpu %[[E]]
// CHECK: return %{{.*}}, %[[H]] :
// CHECK-LABEL: func @dynamic_value_saved_twice_backward
// CHECK-NEXT: %[[L:.*]] = offload.load_to_gpu
// CHECK-NEXT: arith.addf %[[L]], %[[L]]
func.func @dynamic_value_saved_twice_forward(%x: tensor<?xf32>)
    -> (tensor<?xf32>, tensor<?xf32> {offload.selected}, tensor<?xf32> {offload.selected})
    attributes {offload.backward = @dynamic_value_saved_twice_backward, offload.num_outputs = 1 : i64} {
  %0 = math.exp %x : tensor<?xf32>
  %1 = math.tanh %x : tensor<?xf32>
  return %1, %0, %0 : tensor<?xf32>, tensor<?xf32>, tensor<?xf32>
}
func.func @dynamic_value_saved_twice_backward(%a: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?xf32> {
  %0 = arith.addf %a, %b : tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// An op that writes its operand in place returns that operand's storage
// (trace.op with `mutates`, like aten.relu_): a later read of its result is a
// read of the saved storage, so the offload goes after it, not before.
// CHECK-LABEL: func @in_place_write_reads_saved_storage_forward
// CHECK: %[[E:.*]] = trace.op "aten.exp.default"
// CHECK-NEXT: %[[R:.*]] = trace.op "aten.relu_.default"(%[[E]])
// CHECK-NEXT: trace.op "aten.tanh.default"
// CHECK-NEXT: %[[N:.*]] = trace.op "aten.neg.default"(%[[R]])
// CHECK-NEXT: offload.offload_to_cpu %[[E]]
// CHECK-NEXT: return %[[N]]
func.func @in_place_write_reads_saved_storage_forward(%x: tensor<256xf32>) -> (tensor<256xf32>, tensor<256xf32> {offload.selected})
    attributes {offload.backward = @in_place_write_reads_saved_storage_backward, offload.num_outputs = 1 : i64} {
  %0 = trace.op "aten.exp.default"(%x) : (tensor<256xf32>) -> tensor<256xf32>
  %1 = trace.op "aten.relu_.default"(%0) {mutates = array<i64: 0>} : (tensor<256xf32>) -> tensor<256xf32>
  %2 = trace.op "aten.tanh.default"(%x) : (tensor<256xf32>) -> tensor<256xf32>
  %3 = trace.op "aten.neg.default"(%1) : (tensor<256xf32>) -> tensor<256xf32>
  return %3, %0 : tensor<256xf32>, tensor<256xf32>
}
func.func @in_place_write_reads_saved_storage_backward(%s: tensor<256xf32>) {
  return
}

// -----

// The same when the saved value is the in-place result: reads of the
// storage under its earlier name count too.
// CHECK-LABEL: func @saved_in_place_result_forward
// CHECK: %[[E:.*]] = trace.op "aten.exp.default"
// CHECK-NEXT: %[[R:.*]] = trace.op "aten.relu_.default"(%[[E]])
// CHECK-NEXT: %[[N:.*]] = trace.op "aten.neg.default"(%[[E]])
// CHECK-NEXT: offload.offload_to_cpu %[[R]]
// CHECK-NEXT: return %[[N]]
func.func @saved_in_place_result_forward(%x: tensor<256xf32>) -> (tensor<256xf32>, tensor<256xf32> {offload.selected})
    attributes {offload.backward = @saved_in_place_result_backward, offload.num_outputs = 1 : i64} {
  %0 = trace.op "aten.exp.default"(%x) : (tensor<256xf32>) -> tensor<256xf32>
  %1 = trace.op "aten.relu_.default"(%0) {mutates = array<i64: 0>} : (tensor<256xf32>) -> tensor<256xf32>
  %2 = trace.op "aten.neg.default"(%0) : (tensor<256xf32>) -> tensor<256xf32>
  return %2, %1 : tensor<256xf32>, tensor<256xf32>
}
func.func @saved_in_place_result_backward(%s: tensor<256xf32>) {
  return
}

// -----

// expected-error @+1 {{cannot offload saved result #1: it is a function argument}}
func.func @saved_argument_forward(%x: tensor<256xf32>) -> (tensor<256xf32>, tensor<256xf32> {offload.selected})
    attributes {offload.backward = @saved_argument_backward, offload.num_outputs = 1 : i64} {
  return %x, %x : tensor<256xf32>, tensor<256xf32>
}
func.func @saved_argument_backward(%a: tensor<256xf32>) {
  return
}

// -----

// expected-error @+1 {{cannot offload saved result #1: it is not a ranked tensor}}
func.func @saved_scalar_forward(%x: f32) -> (f32, f32 {offload.selected})
    attributes {offload.backward = @saved_scalar_backward, offload.num_outputs = 1 : i64} {
  %0 = arith.addf %x, %x : f32
  return %0, %0 : f32, f32
}
func.func @saved_scalar_backward(%a: f32) {
  return
}

// -----

func.func @backward_with_two_blocks_forward(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    attributes {offload.backward = @backward_with_two_blocks_backward, offload.num_outputs = 1 : i64} {
  return %x, %x : tensor<4xf32>, tensor<4xf32>
}
// expected-error @+1 {{backward function 'backward_with_two_blocks_backward' must have a single block}}
func.func @backward_with_two_blocks_backward(%a: tensor<4xf32>) {
  cf.br ^bb1
^bb1:
  return
}

// -----

func.func @backward_without_body_forward(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    attributes {offload.backward = @backward_without_body_backward, offload.num_outputs = 1 : i64} {
  return %x, %x : tensor<4xf32>, tensor<4xf32>
}
// expected-error @+1 {{backward function 'backward_without_body_backward' must have a body}}
func.func private @backward_without_body_backward(%a: tensor<4xf32>)

// -----

func.func @forward_a(%x: tensor<256xf32>) -> (tensor<256xf32>, tensor<256xf32>)
    attributes {offload.backward = @shared_backward_backward, offload.num_outputs = 1 : i64} {
  %0 = math.exp %x : tensor<256xf32>
  return %0, %0 : tensor<256xf32>, tensor<256xf32>
}
// expected-error @+1 {{backward function 'shared_backward_backward' is already the backward of 'forward_a'; each forward needs its own}}
func.func @forward_b(%x: tensor<256xf32>) -> (tensor<256xf32>, tensor<256xf32>)
    attributes {offload.backward = @shared_backward_backward, offload.num_outputs = 1 : i64} {
  %0 = math.exp %x : tensor<256xf32>
  return %0, %0 : tensor<256xf32>, tensor<256xf32>
}
func.func @shared_backward_backward(%a: tensor<256xf32>) {
  return
}

// -----

// One storage, one copy: q, k and v, three views of one fused projection,
// are offloaded as one copy of the projection, returned in q's slot; k's and
// v's slots leave the interface. Backward loads the copy once and re-applies
// each view to it (clones marked offload.rebuilt_view), so every consumer
// reads the same value as before.
// CHECK-LABEL: func @views_share_one_copy_forward
// CHECK-SAME: -> (tensor<4x8xf32>, tensor<4x24xf32, #offload.host>)
// CHECK: %[[QKV:.*]] = trace.op "aten.mm.default"
// CHECK: %[[O:.*]] = trace.op "aten.mul.Tensor"
// CHECK-NEXT: %[[H:.*]] = offload.offload_to_cpu %[[QKV]] : tensor<4x24xf32> -> tensor<4x24xf32, #offload.host>
// CHECK-NOT: offload.offload_to_cpu
// CHECK-NEXT: return %[[O]], %[[H]] :
// CHECK-LABEL: func @views_share_one_copy_backward
// CHECK-SAME: (%[[S:.*]]: tensor<4x24xf32, #offload.host> {trace.name = "q"}, %[[G:.*]]: tensor<4x8xf32> {trace.name = "g"})
// CHECK-NEXT: %[[L:.*]] = offload.load_to_gpu %[[S]] : tensor<4x24xf32, #offload.host> -> tensor<4x24xf32>
// CHECK-NEXT: %[[Q:.*]] = trace.view "aten.slice.Tensor"(%[[L]]) {node = "q", offload.rebuilt_view}
// CHECK-NEXT: %[[K:.*]] = trace.view "aten.slice.Tensor"(%[[L]]) {node = "k", offload.rebuilt_view}
// CHECK-NEXT: %[[V:.*]] = trace.view "aten.slice.Tensor"(%[[L]]) {node = "v", offload.rebuilt_view}
// CHECK-NEXT: %[[A:.*]] = trace.op "aten.mul.Tensor"(%[[G]], %[[V]])
// CHECK-NEXT: %[[B:.*]] = trace.op "aten.mul.Tensor"(%[[A]], %[[Q]])
// CHECK-NEXT: trace.op "aten.mul.Tensor"(%[[B]], %[[K]])
// CHECK-NOT: offload.load_to_gpu
func.func @views_share_one_copy_forward(%x: tensor<4x8xf32>, %w: tensor<8x24xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32> {offload.selected}, tensor<4x8xf32> {offload.selected}, tensor<4x8xf32> {offload.selected})
    attributes {offload.backward = @views_share_one_copy_backward, offload.num_outputs = 1 : i64} {
  %qkv = trace.op "aten.mm.default"(%x, %w) {node = "mm"} : (tensor<4x8xf32>, tensor<8x24xf32>) -> tensor<4x24xf32>
  %q = trace.view "aten.slice.Tensor"(%qkv) {node = "q"} : (tensor<4x24xf32>) -> tensor<4x8xf32>
  %k = trace.view "aten.slice.Tensor"(%qkv) {node = "k"} : (tensor<4x24xf32>) -> tensor<4x8xf32>
  %v = trace.view "aten.slice.Tensor"(%qkv) {node = "v"} : (tensor<4x24xf32>) -> tensor<4x8xf32>
  %s = trace.op "aten.add.Tensor"(%q, %k) {node = "s"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %o = trace.op "aten.mul.Tensor"(%s, %v) {node = "o"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %o, %q, %k, %v : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
func.func @views_share_one_copy_backward(%q: tensor<4x8xf32> {trace.name = "q"}, %k: tensor<4x8xf32> {trace.name = "k"},
                    %v: tensor<4x8xf32> {trace.name = "v"}, %g: tensor<4x8xf32> {trace.name = "g"})
    -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %a = trace.op "aten.mul.Tensor"(%g, %v) {node = "a"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %b = trace.op "aten.mul.Tensor"(%a, %q) {node = "b"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %c = trace.op "aten.mul.Tensor"(%b, %k) {node = "c"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %b, %c : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// When the storage root is saved too, its own slot carries the copy (here
// the second saved result), whatever the order. A chain of views is
// re-applied view by view, a prefix two members share only once; a member
// backward never reads is not rebuilt.
// CHECK-LABEL: func @root_and_view_chain_share_one_copy_forward
// CHECK-SAME: -> (tensor<64xf32>, tensor<64xf32, #offload.host>)
// CHECK: %[[E:.*]] = math.exp
// CHECK-NEXT: tensor.expand_shape
// CHECK-NEXT: trace.view "aten.t.default"
// CHECK-NEXT: trace.view "aten.t.default"
// CHECK-NEXT: %[[H:.*]] = offload.offload_to_cpu %[[E]]
// CHECK-NEXT: %[[N:.*]] = math.tanh
// CHECK-NEXT: return %[[N]], %[[H]] :
// CHECK-LABEL: func @root_and_view_chain_share_one_copy_backward
// CHECK-SAME: (%[[S:.*]]: tensor<64xf32, #offload.host> {trace.name = "e"}, %[[G:.*]]: tensor<64xf32> {trace.name = "g"})
// CHECK-NEXT: %[[L:.*]] = offload.load_to_gpu %[[S]]
// CHECK-NEXT: %[[M:.*]] = tensor.expand_shape %[[L]] {{.*}} {offload.rebuilt_view}
// CHECK-NEXT: %[[T:.*]] = trace.view "aten.t.default"(%[[M]]) {node = "t", offload.rebuilt_view}
// CHECK-NEXT: arith.mulf %[[G]], %[[L]]
// CHECK-NEXT: arith.addf %[[T]], %[[M]]
func.func @root_and_view_chain_share_one_copy_forward(%x: tensor<64xf32>)
    -> (tensor<64xf32>, tensor<8x8xf32> {offload.selected}, tensor<64xf32> {offload.selected},
        tensor<8x8xf32> {offload.selected}, tensor<8x8xf32> {offload.selected})
    attributes {offload.backward = @root_and_view_chain_share_one_copy_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<64xf32>
  %m = tensor.expand_shape %e [[0, 1]] output_shape [8, 8] : tensor<64xf32> into tensor<8x8xf32>
  %t = trace.view "aten.t.default"(%m) {node = "t"} : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %u = trace.view "aten.t.default"(%m) {node = "u"} : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %n = math.tanh %x : tensor<64xf32>
  return %n, %t, %e, %m, %u : tensor<64xf32>, tensor<8x8xf32>, tensor<64xf32>, tensor<8x8xf32>, tensor<8x8xf32>
}
func.func @root_and_view_chain_share_one_copy_backward(%t: tensor<8x8xf32> {trace.name = "t"}, %e: tensor<64xf32> {trace.name = "e"},
                    %m: tensor<8x8xf32> {trace.name = "m"}, %u: tensor<8x8xf32> {trace.name = "u"},
                    %g: tensor<64xf32> {trace.name = "g"}) -> (tensor<64xf32>, tensor<8x8xf32>) {
  %0 = arith.mulf %g, %e : tensor<64xf32>
  %1 = arith.addf %t, %m : tensor<8x8xf32>
  return %0, %1 : tensor<64xf32>, tensor<8x8xf32>
}

// -----

// Two small slices of a large intermediate keep one copy each: a copy of the
// whole would move more bytes than both (and hold all of it in backward).
// CHECK-LABEL: func @small_slices_copied_apart_forward
// CHECK-SAME: -> (tensor<4x64xf32>, tensor<4x8xf32, #offload.host>, tensor<4x8xf32, #offload.host>)
// CHECK: %[[A:.*]] = tensor.extract_slice
// CHECK-NEXT: %[[B:.*]] = tensor.extract_slice
// CHECK-NEXT: offload.offload_to_cpu %[[A]] : tensor<4x8xf32>
// CHECK-NEXT: offload.offload_to_cpu %[[B]] : tensor<4x8xf32>
// CHECK-LABEL: func @small_slices_copied_apart_backward
// CHECK-COUNT-2: offload.load_to_gpu
// CHECK-NOT: offload.rebuilt_view
func.func @small_slices_copied_apart_forward(%x: tensor<4x64xf32>)
    -> (tensor<4x64xf32>, tensor<4x8xf32> {offload.selected}, tensor<4x8xf32> {offload.selected})
    attributes {offload.backward = @small_slices_copied_apart_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<4x64xf32>
  %a = tensor.extract_slice %e[0, 0] [4, 8] [1, 1] : tensor<4x64xf32> to tensor<4x8xf32>
  %b = tensor.extract_slice %e[0, 8] [4, 8] [1, 1] : tensor<4x64xf32> to tensor<4x8xf32>
  %n = math.tanh %x : tensor<4x64xf32>
  return %n, %a, %b : tensor<4x64xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
func.func @small_slices_copied_apart_backward(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = arith.addf %a, %b : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// A saved view reached through an in-place write keeps its own copy: the
// write is work, not a view to re-apply. The other view still shares the
// storage root's copy with the root.
// CHECK-LABEL: func @view_through_in_place_write_forward
// CHECK-SAME: -> (tensor<16xf32>, tensor<16xf32, #offload.host>, tensor<4x4xf32, #offload.host>)
// CHECK: %[[E:.*]] = trace.op "aten.exp.default"
// CHECK: %[[R:.*]] = trace.op "aten.relu_.default"
// CHECK-NEXT: %[[W:.*]] = tensor.expand_shape %[[R]]
// CHECK-NEXT: %[[H:.*]] = offload.offload_to_cpu %[[E]]
// CHECK-NEXT: %[[HW:.*]] = offload.offload_to_cpu %[[W]]
// CHECK: return %{{.*}}, %[[H]], %[[HW]] :
// CHECK-LABEL: func @view_through_in_place_write_backward
// CHECK-COUNT-2: offload.load_to_gpu
// CHECK-NEXT: tensor.expand_shape {{.*}} {offload.rebuilt_view}
func.func @view_through_in_place_write_forward(%x: tensor<16xf32>)
    -> (tensor<16xf32>, tensor<16xf32> {offload.selected}, tensor<4x4xf32> {offload.selected}, tensor<4x4xf32> {offload.selected})
    attributes {offload.backward = @view_through_in_place_write_backward, offload.num_outputs = 1 : i64} {
  %e = trace.op "aten.exp.default"(%x) : (tensor<16xf32>) -> tensor<16xf32>
  %v = tensor.expand_shape %e [[0, 1]] output_shape [4, 4] : tensor<16xf32> into tensor<4x4xf32>
  %r = trace.op "aten.relu_.default"(%e) {mutates = array<i64: 0>} : (tensor<16xf32>) -> tensor<16xf32>
  %w = tensor.expand_shape %r [[0, 1]] output_shape [4, 4] : tensor<16xf32> into tensor<4x4xf32>
  %n = math.tanh %x : tensor<16xf32>
  return %n, %e, %w, %v : tensor<16xf32>, tensor<16xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}
func.func @view_through_in_place_write_backward(%e: tensor<16xf32>, %w: tensor<4x4xf32>, %v: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = arith.addf %w, %v : tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// A driver that calls forward and hands the saved results to backward: its
// calls lose the dropped slots with the functions.
// CHECK-LABEL: func @driver_calls_drop_slots_forward
// CHECK-SAME: -> (tensor<16xf32>, tensor<16xf32, #offload.host>)
// CHECK-LABEL: func @driver_calls_drop_slots_backward
// CHECK-SAME: (%{{.*}}: tensor<16xf32, #offload.host>, %{{.*}}: tensor<16xf32>) -> tensor<16xf32>
// CHECK-LABEL: func @main
// CHECK: %[[F:.*]]:2 = call @driver_calls_drop_slots_forward(%{{.*}}) : (tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32, #offload.host>)
// CHECK-NEXT: %[[D:.*]] = call @driver_calls_drop_slots_backward(%[[F]]#1, %{{.*}}) : (tensor<16xf32, #offload.host>, tensor<16xf32>) -> tensor<16xf32>
// CHECK-NEXT: return %[[F]]#0, %[[D]]
func.func @driver_calls_drop_slots_forward(%x: tensor<16xf32>)
    -> (tensor<16xf32>, tensor<4x4xf32> {offload.selected}, tensor<16xf32> {offload.selected})
    attributes {offload.backward = @driver_calls_drop_slots_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<16xf32>
  %m = tensor.expand_shape %e [[0, 1]] output_shape [4, 4] : tensor<16xf32> into tensor<4x4xf32>
  %n = math.tanh %x : tensor<16xf32>
  return %n, %m, %e : tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>
}
func.func @driver_calls_drop_slots_backward(%m: tensor<4x4xf32>, %e: tensor<16xf32>, %g: tensor<16xf32>) -> tensor<16xf32> {
  %c = tensor.collapse_shape %m [[0, 1]] : tensor<4x4xf32> into tensor<16xf32>
  %0 = arith.mulf %c, %e : tensor<16xf32>
  %1 = arith.mulf %0, %g : tensor<16xf32>
  return %1 : tensor<16xf32>
}
func.func @main(%x: tensor<16xf32>, %g: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %o, %m, %e = call @driver_calls_drop_slots_forward(%x) : (tensor<16xf32>) -> (tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>)
  %d = call @driver_calls_drop_slots_backward(%m, %e, %g) : (tensor<4x4xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  return %o, %d : tensor<16xf32>, tensor<16xf32>
}
