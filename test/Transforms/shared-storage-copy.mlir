// One storage, one copy, through the whole pipeline: q, k and v, three
// views of one fused projection saved for backward, move as one copy of the
// projection. Forward offloads it once; backward loads it once, before the
// first view is needed, and rebuilds each view right before its first real
// consumer. The planner, the scheduler and the report count that one copy.
//
// RUN: offload-opt %s -split-input-file --offload-activations="plan=all schedule=false min-bytes=0" | FileCheck %s --check-prefix=SYNC
// RUN: offload-opt %s -split-input-file --offload-activations="plan=all min-bytes=0 schedule=true" | FileCheck %s --check-prefix=SCHED
// RUN: offload-opt %s -split-input-file --offload-activations="plan=all min-bytes=0 schedule=true report=text" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: offload-opt %s -split-input-file --offload-activations="plan=all min-bytes=0 schedule=true report=json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=JSON
// Three copies of a third each (three copy latencies) cannot be hidden under
// the compute; the one copy can, so plan=hidden offloads it.
// RUN: offload-opt %s -split-input-file --offload-activations="min-bytes=0 schedule=true plan=hidden report=text" -o /dev/null 2>&1 | FileCheck %s --check-prefix=HIDDEN

// SYNC-LABEL: func.func @views_share_one_copy_forward
// SYNC-SAME: -> (tensor<256x256xf32>, tensor<1024x1024xf32>, tensor<256x768xf32, #offload.host>)
// SYNC: %[[QKV:.*]] = trace.op "aten.mm.default"{{.*}}node = "mm"
// SYNC: trace.op "aten.mul.Tensor"{{.*}}node = "o"
// SYNC-NEXT: %[[H:.*]] = offload.offload_to_cpu %[[QKV]] : tensor<256x768xf32>
// SYNC-NOT: offload.offload_to_cpu
// SYNC: return %{{.*}}, %{{.*}}, %[[H]] :
// SYNC-LABEL: func.func @views_share_one_copy_backward
// SYNC-SAME: (%[[S:.*]]: tensor<256x768xf32, #offload.host>, %[[G:.*]]: tensor<256x256xf32>, %[[GB:.*]]: tensor<1024x1024xf32>)
// SYNC-NEXT: %[[D:.*]] = trace.op "aten.mm.default"(%[[GB]], %[[GB]])
// SYNC-NEXT: %[[L:.*]] = offload.load_to_gpu %[[S]]
// SYNC-NEXT: %[[V:.*]] = trace.view "aten.slice.Tensor"(%[[L]]) {node = "v", offload.rebuilt_view}
// SYNC-NEXT: %[[A:.*]] = trace.op "aten.mul.Tensor"(%[[G]], %[[V]])
// SYNC-NEXT: %[[Q:.*]] = trace.view "aten.slice.Tensor"(%[[L]]) {node = "q", offload.rebuilt_view}
// SYNC-NEXT: %[[B:.*]] = trace.op "aten.mul.Tensor"(%[[A]], %[[Q]])
// SYNC-NEXT: %[[K:.*]] = trace.view "aten.slice.Tensor"(%[[L]]) {node = "k", offload.rebuilt_view}
// SYNC-NEXT: trace.op "aten.mul.Tensor"(%[[B]], %[[K]])
// SYNC-NOT: offload.load_to_gpu

// The load starts above the long matmul, its wait stays before the first view.
// SCHED-LABEL: func.func @views_share_one_copy_backward
// SCHED-NEXT: %[[F:.*]] = offload.load_start
// SCHED-NEXT: trace.op "aten.mm.default"
// SCHED-NEXT: %[[L:.*]] = offload.wait %[[F]]
// SCHED-NEXT: trace.view "aten.slice.Tensor"(%[[L]]) {node = "v", offload.rebuilt_view}
// SCHED-NOT: offload.load_start
// SCHED: // -----

// REPORT-LABEL: offload report: @views_share_one_copy_forward -> @views_share_one_copy_backward: 1 of 1 saved results offloaded
// REPORT: 2  aten.mm.default "mm" {{ *}}tensor<256x768xf32> {{ *}}768.0 KiB  #{{[0-9]+}} aten.mul.Tensor "o"  {{ *}}#[[V:[0-9]+]] aten.slice.Tensor "v"  {{ *}}#1 aten.mm.default "d"
// REPORT-NEXT: one copy for saved views rebuilt in backward: #[[V]] aten.slice.Tensor "v" #{{[0-9]+}} aten.slice.Tensor "q" #{{[0-9]+}} aten.slice.Tensor "k"
// REPORT: total: offloaded 1 values, 768.0 KiB; kept 0 values, 0 B
// REPORT-NEXT: moved 768.0 KiB to host and 768.0 KiB back

// JSON-LABEL: "backward": "views_share_one_copy_backward",
// JSON: "d2h_bytes": 786432,
// JSON: "h2d_bytes": 786432,
// JSON: "rebuilt_views": [
// JSON-NEXT: {
// JSON-NEXT: "index": [[V:[0-9]+]],
// JSON-NEXT: "op": "aten.slice.Tensor \"v\""

// HIDDEN-LABEL: offload report: @views_share_one_copy_forward -> @views_share_one_copy_backward
// HIDDEN: total: offloaded 1 values, 768.0 KiB; kept 0 values, 0 B
// HIDDEN-NEXT: step 143.1 us -> 143.1 us (exposed copies 0.0 us)

func.func @views_share_one_copy_forward(%x: tensor<256x256xf32>, %w: tensor<256x768xf32>, %a: tensor<1024x1024xf32>)
    -> (tensor<256x256xf32>, tensor<1024x1024xf32>, tensor<256x256xf32>, tensor<256x256xf32>, tensor<256x256xf32>)
    attributes {offload.backward = @views_share_one_copy_backward, offload.num_outputs = 2 : i64} {
  // A large temporary early in forward sets the step's peak, so the load may
  // start early in backward.
  %huge = trace.op "aten.repeat.default"(%a) {node = "huge"} : (tensor<1024x1024xf32>) -> tensor<4096x4096xf32>
  %r = trace.op "aten.sum.dim_IntList"(%huge) {node = "r"} : (tensor<4096x4096xf32>) -> tensor<256x256xf32>
  %x2 = trace.op "aten.add.Tensor"(%x, %r) {node = "x2"} : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  %qkv = trace.op "aten.mm.default"(%x2, %w) {node = "mm"} : (tensor<256x256xf32>, tensor<256x768xf32>) -> tensor<256x768xf32>
  %q = trace.view "aten.slice.Tensor"(%qkv) {node = "q"} : (tensor<256x768xf32>) -> tensor<256x256xf32>
  %k = trace.view "aten.slice.Tensor"(%qkv) {node = "k"} : (tensor<256x768xf32>) -> tensor<256x256xf32>
  %v = trace.view "aten.slice.Tensor"(%qkv) {node = "v"} : (tensor<256x768xf32>) -> tensor<256x256xf32>
  %s = trace.op "aten.add.Tensor"(%q, %k) {node = "s"} : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  %o = trace.op "aten.mul.Tensor"(%s, %v) {node = "o"} : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  %big = trace.op "aten.mm.default"(%a, %a) {node = "big"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  return %o, %big, %q, %k, %v : tensor<256x256xf32>, tensor<1024x1024xf32>, tensor<256x256xf32>, tensor<256x256xf32>, tensor<256x256xf32>
}
func.func @views_share_one_copy_backward(%q: tensor<256x256xf32>, %k: tensor<256x256xf32>, %v: tensor<256x256xf32>,
                    %g: tensor<256x256xf32>, %gb: tensor<1024x1024xf32>) -> (tensor<256x256xf32>, tensor<1024x1024xf32>) {
  %d = trace.op "aten.mm.default"(%gb, %gb) {node = "d"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %a = trace.op "aten.mul.Tensor"(%g, %v) {node = "a"} : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  %b = trace.op "aten.mul.Tensor"(%a, %q) {node = "b"} : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  %c = trace.op "aten.mul.Tensor"(%b, %k) {node = "c"} : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  return %c, %d : tensor<256x256xf32>, tensor<1024x1024xf32>
}

// -----

// The same step with a driver whose call of backward carries argument
// attributes: the step's interface cannot shrink (the attributes would go
// out of step with the arguments), so each view keeps its own copy, and
// plan=hidden finds none of the three copies hidden.
// HIDDEN-LABEL: offload report: @driver_annotates_arguments_forward -> @driver_annotates_arguments_backward
// HIDDEN: 2  aten.slice.Tensor "q" {{.*}} kept: plan: its copy cannot be hidden under compute
// HIDDEN: total: offloaded 0 values, 0 B; kept 3 values, 768.0 KiB
// SYNC-LABEL: func.func @driver_annotates_arguments_forward
// SYNC-SAME: -> (tensor<256x256xf32>, tensor<1024x1024xf32>, tensor<256x256xf32, #offload.host>, tensor<256x256xf32, #offload.host>, tensor<256x256xf32, #offload.host>)
// SYNC-COUNT-3: offload.offload_to_cpu
// SYNC-LABEL: func.func @driver_annotates_arguments_backward
// SYNC-COUNT-3: offload.load_to_gpu
// SYNC-NOT: offload.rebuilt_view
func.func @driver_annotates_arguments_forward(%x: tensor<256x256xf32>, %w: tensor<256x768xf32>, %a: tensor<1024x1024xf32>)
    -> (tensor<256x256xf32>, tensor<1024x1024xf32>, tensor<256x256xf32>, tensor<256x256xf32>, tensor<256x256xf32>)
    attributes {offload.backward = @driver_annotates_arguments_backward, offload.num_outputs = 2 : i64} {
  %huge = trace.op "aten.repeat.default"(%a) {node = "huge"} : (tensor<1024x1024xf32>) -> tensor<4096x4096xf32>
  %r = trace.op "aten.sum.dim_IntList"(%huge) {node = "r"} : (tensor<4096x4096xf32>) -> tensor<256x256xf32>
  %x2 = trace.op "aten.add.Tensor"(%x, %r) {node = "x2"} : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  %qkv = trace.op "aten.mm.default"(%x2, %w) {node = "mm"} : (tensor<256x256xf32>, tensor<256x768xf32>) -> tensor<256x768xf32>
  %q = trace.view "aten.slice.Tensor"(%qkv) {node = "q"} : (tensor<256x768xf32>) -> tensor<256x256xf32>
  %k = trace.view "aten.slice.Tensor"(%qkv) {node = "k"} : (tensor<256x768xf32>) -> tensor<256x256xf32>
  %v = trace.view "aten.slice.Tensor"(%qkv) {node = "v"} : (tensor<256x768xf32>) -> tensor<256x256xf32>
  %s = trace.op "aten.add.Tensor"(%q, %k) {node = "s"} : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  %o = trace.op "aten.mul.Tensor"(%s, %v) {node = "o"} : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  %big = trace.op "aten.mm.default"(%a, %a) {node = "big"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  return %o, %big, %q, %k, %v : tensor<256x256xf32>, tensor<1024x1024xf32>, tensor<256x256xf32>, tensor<256x256xf32>, tensor<256x256xf32>
}
func.func @driver_annotates_arguments_backward(%q: tensor<256x256xf32>, %k: tensor<256x256xf32>, %v: tensor<256x256xf32>,
                    %g: tensor<256x256xf32>, %gb: tensor<1024x1024xf32>) -> (tensor<256x256xf32>, tensor<1024x1024xf32>) {
  %d = trace.op "aten.mm.default"(%gb, %gb) {node = "d"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %a = trace.op "aten.mul.Tensor"(%g, %v) {node = "a"} : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  %b = trace.op "aten.mul.Tensor"(%a, %q) {node = "b"} : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  %c = trace.op "aten.mul.Tensor"(%b, %k) {node = "c"} : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  return %c, %d : tensor<256x256xf32>, tensor<1024x1024xf32>
}
func.func @driver(%x: tensor<256x256xf32>, %w: tensor<256x768xf32>, %a: tensor<1024x1024xf32>,
                  %g: tensor<256x256xf32>) -> tensor<256x256xf32> {
  %o, %big, %q, %k, %v = call @driver_annotates_arguments_forward(%x, %w, %a) : (tensor<256x256xf32>, tensor<256x768xf32>, tensor<1024x1024xf32>)
      -> (tensor<256x256xf32>, tensor<1024x1024xf32>, tensor<256x256xf32>, tensor<256x256xf32>, tensor<256x256xf32>)
  %c, %d = call @driver_annotates_arguments_backward(%q, %k, %v, %g, %big) {arg_attrs = [{}, {}, {}, {}, {test.arg}]}
      : (tensor<256x256xf32>, tensor<256x256xf32>, tensor<256x256xf32>, tensor<256x256xf32>,
      tensor<1024x1024xf32>) -> (tensor<256x256xf32>, tensor<1024x1024xf32>)
  return %c : tensor<256x256xf32>
}
