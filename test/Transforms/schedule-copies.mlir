// With a link and memory of 1 GB/s and no fixed costs, each math.exp on
// tensor<1000xf32> takes 8 us (4000 B read + 4000 B written) and loading the
// 4000-byte saved value takes 4 us. The load is waited before op #3 of
// backward (starting at 24 us), so it must start by 20 us: before %c (16 us).
// RUN: offload-opt %s -split-input-file -offload-schedule-copies="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0" | FileCheck %s
// A 1000-byte in-flight limit leaves no room to hoist a 4000-byte load.
// RUN: offload-opt %s -split-input-file \
// RUN:   -offload-schedule-copies="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 max-inflight-bytes=1000" | \
// RUN:   FileCheck %s --check-prefix=CAPPED
// The report predicts no exposed copy time for the scheduled step, and the
// full 4 us for the unscheduled one.
// RUN: offload-opt %s -split-input-file \
// RUN:   -offload-schedule-copies="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0" \
// RUN:   -offload-report="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0" -o /dev/null 2>&1 | \
// RUN:   FileCheck %s --check-prefix=REPORT
// RUN: offload-opt %s -split-input-file -offload-report="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SYNC
// RUN: not offload-opt %s -split-input-file -offload-schedule-copies="max-inflight-bytes=lots" 2>&1 | FileCheck %s --check-prefix=BAD

// CHECK-LABEL: func @load_started_to_hide_copy_forward
// CHECK: %[[E:.*]] = math.exp
// CHECK-NEXT: math.sin %[[E]]
// CHECK-NEXT: %[[F:.*]] = offload.offload_start %[[E]] : tensor<1000xf32> -> !offload.future<tensor<1000xf32, #offload.host>>
// CHECK-NEXT: math.sin
// CHECK-NEXT: %[[H:.*]] = offload.wait %[[F]]
// CHECK-NEXT: return %{{.*}}, %[[H]]
// CHECK-LABEL: func @load_started_to_hide_copy_backward
// CHECK: %[[A:.*]] = math.exp %arg1
// CHECK-NEXT: %[[B:.*]] = math.exp %[[A]]
// CHECK-NEXT: %[[S:.*]] = offload.load_start %arg0
// CHECK-NEXT: %[[C:.*]] = math.exp %[[B]]
// CHECK-NEXT: %[[L:.*]] = offload.wait %[[S]] : !offload.future<tensor<1000xf32>>
// CHECK-NEXT: arith.mulf %[[C]], %[[L]]

// CAPPED-LABEL: func @load_started_to_hide_copy_backward
// CAPPED: math.exp
// CAPPED-NEXT: math.exp
// CAPPED-NEXT: math.exp
// CAPPED-NEXT: offload.load_start %arg0
// CAPPED-NEXT: offload.wait
// CAPPED-NEXT: arith.mulf

// REPORT-LABEL: offload report: @load_started_to_hide_copy_forward -> @load_started_to_hide_copy_backward
// REPORT: load starts before (backward op #)
// Forward: 3 x 8 us; backward: 3 x 8 us and the mulf, 12 us (8000 B read,
// 4000 B written). Peak: four 4000-byte tensors (15.6 KiB) either way.
// REPORT: 1  math.exp {{ *}}tensor<1000xf32> {{ *}}3.9 KiB  #1 math.sin {{ *}}#5 arith.mulf {{ *}}#3 math.exp {{ *}}0.0 us
// REPORT: predicted (h100-pcie5): moved 3.9 KiB to host and 3.9 KiB back; peak device memory 15.6 KiB -> 15.6 KiB; step 60.0 us -> 60.0 us (exposed copies 0.0 us)

// SYNC-LABEL: offload report: @load_started_to_hide_copy_forward -> @load_started_to_hide_copy_backward
// SYNC: 1  math.exp {{ *}}tensor<1000xf32> {{ *}}3.9 KiB  #1 math.sin {{ *}}#4 arith.mulf {{ *}}#4 arith.mulf {{ *}}4.0 us
// SYNC: step 60.0 us -> 64.0 us (exposed copies 4.0 us)

// BAD: for the --max-inflight-bytes option: 'lots' is not a byte size

func.func @load_started_to_hide_copy_forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32, #offload.host>)
    attributes {offload.backward = @load_started_to_hide_copy_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1000xf32>
  %y = math.sin %e : tensor<1000xf32>
  %h = offload.offload_to_cpu %e : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  %z = math.sin %y : tensor<1000xf32>
  return %z, %h : tensor<1000xf32>, tensor<1000xf32, #offload.host>
}
func.func @load_started_to_hide_copy_backward(%s: tensor<1000xf32, #offload.host>, %g: tensor<1000xf32>) -> tensor<1000xf32> {
  %a = math.exp %g : tensor<1000xf32>
  %b = math.exp %a : tensor<1000xf32>
  %c = math.exp %b : tensor<1000xf32>
  %l = offload.load_to_gpu %s : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %r = arith.mulf %c, %l : tensor<1000xf32>
  return %r : tensor<1000xf32>
}

// -----

// The offload of %e (4 us on the link, issued at 16 us) is done before the
// op starting at 24 us: its wait, the point where a framework's allocator
// gets the device buffer back, moves up there instead of the return.
// CHECK-LABEL: func @offload_wait_moves_up_forward
// CHECK: %[[E:.*]] = math.exp
// CHECK-NEXT: %[[Y:.*]] = math.sin %[[E]]
// CHECK-NEXT: %[[F:.*]] = offload.offload_start %[[E]]
// CHECK-NEXT: %[[Z:.*]] = math.sin %[[Y]]
// CHECK-NEXT: %[[H:.*]] = offload.wait %[[F]]
// CHECK-NEXT: %[[W:.*]] = math.sin %[[Z]]
// CHECK-NEXT: return %[[W]], %[[H]]
func.func @offload_wait_moves_up_forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32, #offload.host>)
    attributes {offload.backward = @offload_wait_moves_up_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1000xf32>
  %y = math.sin %e : tensor<1000xf32>
  %h = offload.offload_to_cpu %e : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  %z = math.sin %y : tensor<1000xf32>
  %w = math.sin %z : tensor<1000xf32>
  return %w, %h : tensor<1000xf32>, tensor<1000xf32, #offload.host>
}
func.func @offload_wait_moves_up_backward(%s: tensor<1000xf32, #offload.host>, %g: tensor<1000xf32>) -> tensor<1000xf32> {
  %l = offload.load_to_gpu %s : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %r = arith.mulf %g, %l : tensor<1000xf32>
  return %r : tensor<1000xf32>
}

// -----

// Memory-aware hoisting. Backward: %a (16000 B) takes 20 us to write and
// %r 20 us to reduce; the 4000-byte load must start 4 us before the mulf,
// so before %r on time alone, and max-inflight-bytes (2 GiB) allows it. But
// the step's peak is %x, %a and %r live during %r (24000 B, 23.4 KiB), and
// a load started there would add its 4000 B to it: it starts at its wait,
// and its copy is exposed. The peak stays that of the synchronous load.
// CHECK-LABEL: func @memory_aware_hoisting_forward
// CHECK-LABEL: func @memory_aware_hoisting_backward
// CHECK: %[[A:.*]] = trace.op "aten.repeat.default"
// CHECK-NEXT: %[[R:.*]] = trace.op "aten.sum.dim_IntList"(%[[A]])
// CHECK-NEXT: %[[S:.*]] = offload.load_start %arg0
// CHECK-NEXT: %[[L:.*]] = offload.wait %[[S]]
// CHECK-NEXT: arith.mulf %[[R]], %[[L]]
// REPORT-LABEL: offload report: @memory_aware_hoisting_forward -> @memory_aware_hoisting_backward
// REPORT: 1  math.exp {{ *}}tensor<1000xf32> {{ *}}3.9 KiB  #1 math.sin {{ *}}#4 arith.mulf {{ *}}#4 arith.mulf {{ *}}4.0 us
// REPORT: peak device memory 27.3 KiB -> 23.4 KiB; step 76.0 us -> 80.0 us (exposed copies 4.0 us)
// SYNC-LABEL: offload report: @memory_aware_hoisting_forward -> @memory_aware_hoisting_backward
// SYNC: peak device memory 27.3 KiB -> 23.4 KiB; step 76.0 us -> 80.0 us (exposed copies 4.0 us)
func.func @memory_aware_hoisting_forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32, #offload.host>)
    attributes {offload.backward = @memory_aware_hoisting_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1000xf32>
  %y = math.sin %e : tensor<1000xf32>
  %h = offload.offload_to_cpu %e : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  %z = math.sin %y : tensor<1000xf32>
  return %z, %h : tensor<1000xf32>, tensor<1000xf32, #offload.host>
}
func.func @memory_aware_hoisting_backward(%s: tensor<1000xf32, #offload.host>, %g: tensor<1000xf32>) -> tensor<1000xf32> {
  %a = trace.op "aten.repeat.default"(%g) {node = "repeat"} : (tensor<1000xf32>) -> tensor<4000xf32>
  %r = trace.op "aten.sum.dim_IntList"(%a) {node = "sum"} : (tensor<4000xf32>) -> tensor<1000xf32>
  %l = offload.load_to_gpu %s : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %o = arith.mulf %r, %l : tensor<1000xf32>
  return %o : tensor<1000xf32>
}

// -----

// The same backward, but forward reaches 28000 B (27.3 KiB: %x, %y, the
// 16000-byte %b and %e, whose copy ends during %b). Backward with the load
// started before %r reaches the same (%x, %a, %r and the load), not more, so
// it starts there and its copy is hidden.
// CHECK-LABEL: func @hoist_within_forward_peak_forward
// CHECK-LABEL: func @hoist_within_forward_peak_backward
// CHECK: %[[A:.*]] = trace.op "aten.repeat.default"
// CHECK-NEXT: %[[S:.*]] = offload.load_start %arg0
// CHECK-NEXT: %[[R:.*]] = trace.op "aten.sum.dim_IntList"(%[[A]])
// CHECK-NEXT: %[[L:.*]] = offload.wait %[[S]]
// CHECK-NEXT: arith.mulf %[[R]], %[[L]]
// REPORT-LABEL: offload report: @hoist_within_forward_peak_forward -> @hoist_within_forward_peak_backward
// REPORT: 1  math.exp {{ *}}tensor<1000xf32> {{ *}}3.9 KiB  #1 math.sin {{ *}}#4 arith.mulf {{ *}}#2 aten.sum.dim_IntList "sum" {{ *}}0.0 us
// REPORT: peak device memory 27.3 KiB -> 27.3 KiB; step 108.0 us -> 108.0 us (exposed copies 0.0 us)
// SYNC-LABEL: offload report: @hoist_within_forward_peak_forward -> @hoist_within_forward_peak_backward
// SYNC: peak device memory 27.3 KiB -> 27.3 KiB; step 108.0 us -> 112.0 us (exposed copies 4.0 us)
func.func @hoist_within_forward_peak_forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32, #offload.host>)
    attributes {offload.backward = @hoist_within_forward_peak_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1000xf32>
  %y = math.sin %e : tensor<1000xf32>
  %h = offload.offload_to_cpu %e : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  %b = trace.op "aten.repeat.default"(%y) {node = "repeat"} : (tensor<1000xf32>) -> tensor<4000xf32>
  %z = trace.op "aten.sum.dim_IntList"(%b) {node = "sum"} : (tensor<4000xf32>) -> tensor<1000xf32>
  return %z, %h : tensor<1000xf32>, tensor<1000xf32, #offload.host>
}
func.func @hoist_within_forward_peak_backward(%s: tensor<1000xf32, #offload.host>, %g: tensor<1000xf32>) -> tensor<1000xf32> {
  %a = trace.op "aten.repeat.default"(%g) {node = "repeat"} : (tensor<1000xf32>) -> tensor<4000xf32>
  %r = trace.op "aten.sum.dim_IntList"(%a) {node = "sum"} : (tensor<4000xf32>) -> tensor<1000xf32>
  %l = offload.load_to_gpu %s : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %o = arith.mulf %r, %l : tensor<1000xf32>
  return %o : tensor<1000xf32>
}
