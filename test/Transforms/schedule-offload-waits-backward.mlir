// With release=at-wait and offload-waits-in-backward=true, an offload still
// in flight at the end of forward is waited in backward instead: forward
// returns the copy's future as the saved value, backward's argument becomes
// that future, and backward waits for it as late as the bytes its source
// keeps live leave the predicted peak where it was, never past the start of
// the value's load (which reads the host copy the wait yields) nor past an op
// of unknown effects. Forward then no longer stalls for the copy at its end.
// Link and memory at 1 GB/s, no fixed costs: the exp of 10000 floats takes
// 80 us, each op on 1000 floats 8 us; the 40000-byte copy of %e issued at
// 80 us ends at 120 us, 24 us after forward's compute ends at 96 us.
// RUN: offload-opt %s -split-input-file -allow-unregistered-dialect -offload-schedule-copies="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 release=at-wait offload-waits-in-backward=true" | FileCheck %s
// Without the option the wait stays in forward, before its return.
// RUN: offload-opt %s -split-input-file -allow-unregistered-dialect -offload-schedule-copies="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 release=at-wait" | FileCheck %s --check-prefix=FORWARD
// The report reads the crossing back: the stall is gone from the exposed
// copy time, and it names the backward op the offload is waited before.
// RUN: offload-opt %s -split-input-file -allow-unregistered-dialect -offload-schedule-copies="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 release=at-wait offload-waits-in-backward=true" | offload-opt -split-input-file -allow-unregistered-dialect -offload-report="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 release=at-wait" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: offload-opt %s -split-input-file -allow-unregistered-dialect -offload-schedule-copies="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 release=at-wait offload-waits-in-backward=true" | offload-opt -split-input-file -allow-unregistered-dialect -offload-report="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 release=at-wait format=json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=JSON
// RUN: offload-opt %s -split-input-file -allow-unregistered-dialect -offload-schedule-copies="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 release=at-wait" | offload-opt -split-input-file -allow-unregistered-dialect -offload-report="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 release=at-wait" -o /dev/null 2>&1 | FileCheck %s --check-prefix=FORWARD-REPORT
// Offloads issued at one point and coalesced into one group cross as well.
// RUN: offload-opt %s -split-input-file -allow-unregistered-dialect -offload-schedule-copies="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 release=at-wait offload-waits-in-backward=true coalesce-below=1MB" | FileCheck %s --check-prefix=GROUP

// The peak is backward's temporary %t (320000 bytes): holding %e's source
// past it would raise the peak, so backward waits right before it, at
// 128 us, when the copy is done. The load of %s starts after %t (memory), so
// after the wait, and reads the wait's host value. Exposed copies: 56 us
// (24 us of forward's stall and 32 us of the load) become 32 us.
// CHECK-LABEL: func.func @forward
// CHECK-SAME:    -> (tensor<1000xf32>, !offload.future<tensor<10000xf32, #offload.host>>)
// CHECK:         %[[E:.*]] = math.exp
// CHECK-NEXT:    %[[F:.*]] = offload.offload_start %[[E]] : tensor<10000xf32> -> !offload.future<tensor<10000xf32, #offload.host>>
// CHECK-NEXT:    math.sin
// CHECK-NEXT:    %[[B:.*]] = math.sin
// CHECK-NEXT:    return %[[B]], %[[F]] : tensor<1000xf32>, !offload.future<tensor<10000xf32, #offload.host>>
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[S:.*]]: !offload.future<tensor<10000xf32, #offload.host>>, %{{.*}}: tensor<1000xf32>)
// CHECK-NEXT:    math.exp
// CHECK-NEXT:    math.sin
// CHECK-NEXT:    math.sin
// CHECK-NEXT:    math.sin
// CHECK-NEXT:    %[[H:.*]] = offload.wait %[[S]] : !offload.future<tensor<10000xf32, #offload.host>>
// CHECK-NEXT:    tensor.empty
// CHECK-NEXT:    %[[L:.*]] = offload.load_start %[[H]] : tensor<10000xf32, #offload.host> -> !offload.future<tensor<10000xf32>>
// CHECK-NEXT:    math.sin
// CHECK-NEXT:    %[[D:.*]] = offload.wait %[[L]] : !offload.future<tensor<10000xf32>>
// CHECK-NEXT:    math.exp %[[D]]
// FORWARD-LABEL: func.func @forward
// FORWARD-SAME:    -> (tensor<1000xf32>, tensor<10000xf32, #offload.host>)
// FORWARD:         %[[F:.*]] = offload.offload_start
// FORWARD-NEXT:    math.sin
// FORWARD-NEXT:    %[[B:.*]] = math.sin
// FORWARD-NEXT:    %[[H:.*]] = offload.wait %[[F]]
// FORWARD-NEXT:    return %[[B]], %[[H]]
// FORWARD-LABEL: func.func @backward
// FORWARD-SAME:    (%[[S:.*]]: tensor<10000xf32, #offload.host>, %{{.*}}: tensor<1000xf32>)
// FORWARD-NOT:     offload.wait %[[S]]
// FORWARD:         tensor.empty
// FORWARD-NEXT:    offload.load_start %[[S]]
// REPORT:      offload report: @forward -> @backward: 1 of 1 saved results offloaded
// REPORT:      1  math.exp {{.*}} #0 math.exp {{ *}}#9 math.exp {{ *}}#7 math.sin {{ *}}32.0 us
// REPORT-NEXT: offload waited in backward before #5 tensor.empty
// REPORT-NEXT: total: offloaded 1 values
// REPORT-NEXT: predicted (h100-pcie5): {{.*}} peak device memory 398.4 KiB -> 359.4 KiB; step 216.0 us -> 248.0 us (exposed copies 32.0 us)
// FORWARD-REPORT:      offload report: @forward -> @backward: 1 of 1 saved results offloaded
// FORWARD-REPORT:      1  math.exp {{.*}} #0 math.exp {{ *}}#8 math.exp {{ *}}#6 math.sin {{ *}}32.0 us
// FORWARD-REPORT-NEXT: total: offloaded 1 values
// FORWARD-REPORT-NEXT: predicted (h100-pcie5): {{.*}} peak device memory 398.4 KiB -> 359.4 KiB; step 216.0 us -> 272.0 us (exposed copies 56.0 us)
// JSON:      "offload_after": {
// JSON-NEXT:   "index": 0,
// JSON-NEXT:   "op": "math.exp"
// JSON-NEXT: },
// JSON-NEXT: "offload_wait_before": {
// JSON-NEXT:   "index": 5,
// JSON-NEXT:   "op": "tensor.empty"
// JSON-NEXT: },
// JSON-NEXT: "offloaded": true,
func.func @forward(%x: tensor<10000xf32>, %v: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<10000xf32, #offload.host>)
    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<10000xf32>
  %h = offload.offload_to_cpu %e : tensor<10000xf32> -> tensor<10000xf32, #offload.host>
  %a = math.sin %v : tensor<1000xf32>
  %b = math.sin %a : tensor<1000xf32>
  return %b, %h : tensor<1000xf32>, tensor<10000xf32, #offload.host>
}
func.func @backward(%s: tensor<10000xf32, #offload.host>, %g: tensor<1000xf32>) -> tensor<10000xf32> {
  %a = math.exp %g : tensor<1000xf32>
  %b = math.sin %a : tensor<1000xf32>
  %c = math.sin %b : tensor<1000xf32>
  %d = math.sin %c : tensor<1000xf32>
  %t = "tensor.empty"() : () -> tensor<80000xf32>
  %e = math.sin %d : tensor<1000xf32>
  %l = offload.load_to_gpu %s : tensor<10000xf32, #offload.host> -> tensor<10000xf32>
  %r = math.exp %l : tensor<10000xf32>
  return %r : tensor<10000xf32>
}

// -----

// The first backward op reads %s: its load starts at backward's start, and
// the wait, which comes before the load, has nowhere to go in backward. It
// stays at the end of forward, which returns the host value.
// CHECK-LABEL: func.func @forward
// CHECK-SAME:    -> (tensor<1000xf32>, tensor<10000xf32, #offload.host>)
// CHECK:         %[[F:.*]] = offload.offload_start
// CHECK-NEXT:    math.sin
// CHECK-NEXT:    %[[B:.*]] = math.sin
// CHECK-NEXT:    %[[H:.*]] = offload.wait %[[F]]
// CHECK-NEXT:    return %[[B]], %[[H]]
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[S:.*]]: tensor<10000xf32, #offload.host>, %{{.*}}: tensor<1000xf32>)
// CHECK-NEXT:    %[[L:.*]] = offload.load_start %[[S]]
// CHECK-NEXT:    offload.wait %[[L]]
// CHECK-NEXT:    math.exp
// REPORT:      offload report: @forward -> @backward: 1 of 1 saved results offloaded
// REPORT:      1  math.exp {{.*}} 40.0 us
// REPORT-NEXT: total: offloaded 1 values
// REPORT-NEXT: predicted (h100-pcie5): {{.*}}(exposed copies 64.0 us)
// JSON:      "steps"
// JSON-NOT:  "offload_wait_before"
// JSON:      "steps"
func.func @forward(%x: tensor<10000xf32>, %v: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<10000xf32, #offload.host>)
    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<10000xf32>
  %h = offload.offload_to_cpu %e : tensor<10000xf32> -> tensor<10000xf32, #offload.host>
  %a = math.sin %v : tensor<1000xf32>
  %b = math.sin %a : tensor<1000xf32>
  return %b, %h : tensor<1000xf32>, tensor<10000xf32, #offload.host>
}
func.func @backward(%s: tensor<10000xf32, #offload.host>, %g: tensor<1000xf32>) -> (tensor<10000xf32>, tensor<1000xf32>) {
  %l = offload.load_to_gpu %s : tensor<10000xf32, #offload.host> -> tensor<10000xf32>
  %r = math.exp %l : tensor<10000xf32>
  %a = math.exp %g : tensor<1000xf32>
  %b = math.sin %a : tensor<1000xf32>
  return %r, %b : tensor<10000xf32>, tensor<1000xf32>
}

// -----

// The peak is the exp at backward's end, but the load of %h (40 us) starts
// six ops before it: the wait goes right before that load start, at 152 us,
// after the copy's end at 128 us. The small %p's copy is done in forward,
// which waits for it there. Exposed copies: 24 us (forward's stall) become 0.
// CHECK-LABEL: func.func @forward
// CHECK-SAME:    -> (tensor<1000xf32>, tensor<1000xf32, #offload.host>, !offload.future<tensor<10000xf32, #offload.host>>)
// CHECK:         %[[P:.*]] = offload.offload_start
// CHECK-NEXT:    math.exp
// CHECK-NEXT:    %[[F:.*]] = offload.offload_start
// CHECK-NEXT:    math.sin
// CHECK-NEXT:    %[[B:.*]] = math.sin
// CHECK-NEXT:    %[[Q:.*]] = offload.wait %[[P]]
// CHECK-NEXT:    return %[[B]], %[[Q]], %[[F]]
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%{{.*}}: tensor<1000xf32, #offload.host>, %[[S:.*]]: !offload.future<tensor<10000xf32, #offload.host>>, %{{.*}}: tensor<1000xf32>)
// CHECK:         arith.mulf
// CHECK-NEXT:    math.sin
// CHECK-NEXT:    math.sin
// CHECK-NEXT:    %[[H:.*]] = offload.wait %[[S]]
// CHECK-NEXT:    %[[L:.*]] = offload.load_start %[[H]]
// CHECK-COUNT-6: math.sin
// CHECK-NEXT:    %[[D:.*]] = offload.wait %[[L]]
// CHECK-NEXT:    math.exp %[[D]]
// FORWARD-LABEL: func.func @forward
// FORWARD:         %[[F:.*]] = offload.offload_start %{{.*}} : tensor<10000xf32>
// FORWARD:         offload.wait %[[F]]
// FORWARD-NEXT:    return
// REPORT:      offload report: @forward -> @backward: 2 of 2 saved results offloaded
// REPORT:      2  math.exp {{.*}} #2 math.exp {{ *}}#17 math.exp {{ *}}#10 math.sin {{ *}}0.0 us
// REPORT-NEXT: offload waited in backward before #10 math.sin
// REPORT-NEXT: total: offloaded 2 values
// REPORT-NEXT: predicted (h100-pcie5): {{.*}} step 284.0 us -> 284.0 us (exposed copies 0.0 us)
// JSON:      "offload_wait_before": {
// JSON-NEXT:   "index": 10,
// JSON-NEXT:   "op": "math.sin"
// JSON-NEXT: },
// JSON:      "result": 2,
// FORWARD-REPORT: offload report: @forward -> @backward: 2 of 2 saved results offloaded
// FORWARD-REPORT: predicted (h100-pcie5): {{.*}} step 284.0 us -> 308.0 us (exposed copies 24.0 us)
func.func @forward(%x: tensor<10000xf32>, %v: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32, #offload.host>, tensor<10000xf32, #offload.host>)
    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
  %p = math.exp %v : tensor<1000xf32>
  %q = offload.offload_to_cpu %p : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  %e = math.exp %x : tensor<10000xf32>
  %h = offload.offload_to_cpu %e : tensor<10000xf32> -> tensor<10000xf32, #offload.host>
  %a = math.sin %p : tensor<1000xf32>
  %b = math.sin %a : tensor<1000xf32>
  return %b, %q, %h : tensor<1000xf32>, tensor<1000xf32, #offload.host>, tensor<10000xf32, #offload.host>
}
func.func @backward(%sq: tensor<1000xf32, #offload.host>, %s: tensor<10000xf32, #offload.host>, %g: tensor<1000xf32>) -> (tensor<10000xf32>, tensor<1000xf32>) {
  %a = math.exp %g : tensor<1000xf32>
  %b = math.sin %a : tensor<1000xf32>
  %c = math.sin %b : tensor<1000xf32>
  %lq = offload.load_to_gpu %sq : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %d = arith.mulf %c, %lq : tensor<1000xf32>
  %e = math.sin %d : tensor<1000xf32>
  %f = math.sin %e : tensor<1000xf32>
  %f2 = math.sin %f : tensor<1000xf32>
  %f3 = math.sin %f2 : tensor<1000xf32>
  %f4 = math.sin %f3 : tensor<1000xf32>
  %f5 = math.sin %f4 : tensor<1000xf32>
  %f6 = math.sin %f5 : tensor<1000xf32>
  %f7 = math.sin %f6 : tensor<1000xf32>
  %l = offload.load_to_gpu %s : tensor<10000xf32, #offload.host> -> tensor<10000xf32>
  %r = math.exp %l : tensor<10000xf32>
  return %r, %f7 : tensor<10000xf32>, tensor<1000xf32>
}

// -----

// The first case with an op of unknown effects in backward: the wait does
// not move down across it (schedule-copies-effects.mlir), so it stays above
// it, short of the peak. Exposed copies: 40 us (the wait at 112 us stalls
// 8 us for the copy).
// CHECK-LABEL: func.func @forward
// CHECK:         return %{{.*}}, %{{.*}} : tensor<1000xf32>, !offload.future<tensor<10000xf32, #offload.host>>
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[S:.*]]: !offload.future<tensor<10000xf32, #offload.host>>, %{{.*}}: tensor<1000xf32>)
// CHECK-NEXT:    math.exp
// CHECK-NEXT:    math.sin
// CHECK-NEXT:    %[[H:.*]] = offload.wait %[[S]]
// CHECK-NEXT:    "test.unknown"()
// CHECK-NEXT:    math.sin
// CHECK-NEXT:    math.sin
// CHECK-NEXT:    tensor.empty
// CHECK-NEXT:    offload.load_start %[[H]]
// REPORT:      offload report: @forward -> @backward: 1 of 1 saved results offloaded
// REPORT:      1  math.exp {{.*}} 32.0 us
// REPORT-NEXT: offload waited in backward before #3 test.unknown
// REPORT-NEXT: total: offloaded 1 values
// REPORT-NEXT: predicted (h100-pcie5): {{.*}} step 216.0 us -> 256.0 us (exposed copies 40.0 us)
// JSON:      "offload_wait_before": {
// JSON-NEXT:   "index": 3,
// JSON-NEXT:   "op": "test.unknown"
// JSON-NEXT: },
func.func @forward(%x: tensor<10000xf32>, %v: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<10000xf32, #offload.host>)
    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<10000xf32>
  %h = offload.offload_to_cpu %e : tensor<10000xf32> -> tensor<10000xf32, #offload.host>
  %a = math.sin %v : tensor<1000xf32>
  %b = math.sin %a : tensor<1000xf32>
  return %b, %h : tensor<1000xf32>, tensor<10000xf32, #offload.host>
}
func.func @backward(%s: tensor<10000xf32, #offload.host>, %g: tensor<1000xf32>) -> tensor<10000xf32> {
  %a = math.exp %g : tensor<1000xf32>
  %b = math.sin %a : tensor<1000xf32>
  "test.unknown"() : () -> ()
  %c = math.sin %b : tensor<1000xf32>
  %d = math.sin %c : tensor<1000xf32>
  %t = "tensor.empty"() : () -> tensor<80000xf32>
  %e = math.sin %d : tensor<1000xf32>
  %l = offload.load_to_gpu %s : tensor<10000xf32, #offload.host> -> tensor<10000xf32>
  %r = math.exp %l : tensor<10000xf32>
  return %r : tensor<10000xf32>
}

// -----

// The unknown op is backward's first: the wait cannot enter backward and
// stays at the end of forward, which stalls 24 us for the copy (exposed
// copies 56 us, as without the option).
// CHECK-LABEL: func.func @forward
// CHECK:         %[[F:.*]] = offload.offload_start
// CHECK:         %[[H:.*]] = offload.wait %[[F]]
// CHECK-NEXT:    return %{{.*}}, %[[H]] : tensor<1000xf32>, tensor<10000xf32, #offload.host>
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[S:.*]]: tensor<10000xf32, #offload.host>, %{{.*}}: tensor<1000xf32>)
// CHECK-NEXT:    "test.unknown"()
// CHECK-NOT:     offload.wait %[[S]]
// CHECK:         offload.load_start %[[S]]
// REPORT:      offload report: @forward -> @backward: 1 of 1 saved results offloaded
// REPORT:      1  math.exp {{.*}} 32.0 us
// REPORT-NEXT: total: offloaded 1 values
// REPORT-NEXT: predicted (h100-pcie5): {{.*}} step 216.0 us -> 272.0 us (exposed copies 56.0 us)
func.func @forward(%x: tensor<10000xf32>, %v: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<10000xf32, #offload.host>)
    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<10000xf32>
  %h = offload.offload_to_cpu %e : tensor<10000xf32> -> tensor<10000xf32, #offload.host>
  %a = math.sin %v : tensor<1000xf32>
  %b = math.sin %a : tensor<1000xf32>
  return %b, %h : tensor<1000xf32>, tensor<10000xf32, #offload.host>
}
func.func @backward(%s: tensor<10000xf32, #offload.host>, %g: tensor<1000xf32>) -> tensor<10000xf32> {
  "test.unknown"() : () -> ()
  %a = math.exp %g : tensor<1000xf32>
  %b = math.sin %a : tensor<1000xf32>
  %c = math.sin %b : tensor<1000xf32>
  %d = math.sin %c : tensor<1000xf32>
  %t = "tensor.empty"() : () -> tensor<80000xf32>
  %e = math.sin %d : tensor<1000xf32>
  %l = offload.load_to_gpu %s : tensor<10000xf32, #offload.host> -> tensor<10000xf32>
  %r = math.exp %l : tensor<10000xf32>
  return %r : tensor<10000xf32>
}

// -----

// Two offloads issued at one point, both in flight at the end of forward:
// both cross, each future in its own saved slot, and backward waits for
// both before its peak. With coalesce-below they start as one group, whose
// futures forward returns.
// CHECK-LABEL: func.func @forward
// CHECK:         %[[F:.*]] = offload.offload_start
// CHECK-NEXT:    %[[G:.*]] = offload.offload_start
// CHECK-NEXT:    math.sin
// CHECK-NEXT:    %[[B:.*]] = math.sin
// CHECK-NEXT:    return %[[B]], %[[F]], %[[G]]
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[S:.*]]: !offload.future<tensor<5000xf32, #offload.host>>, %[[T:.*]]: !offload.future<tensor<5000xf32, #offload.host>>, %{{.*}}: tensor<1000xf32>)
// CHECK:         offload.wait %[[S]]
// CHECK-NEXT:    offload.wait %[[T]]
// CHECK-NEXT:    tensor.empty
// GROUP-LABEL: func.func @forward(%{{.*}}: tensor<5000xf32>
// GROUP:         %[[G:.*]]:2 = offload.offload_group_start
// GROUP-NEXT:    math.sin
// GROUP-NEXT:    %[[B:.*]] = math.sin
// GROUP-NEXT:    return %[[B]], %[[G]]#0, %[[G]]#1
// GROUP-LABEL: func.func @backward
// GROUP-SAME:    (%[[S:.*]]: !offload.future<tensor<5000xf32, #offload.host>>, %[[T:.*]]: !offload.future<tensor<5000xf32, #offload.host>>, %{{.*}}: tensor<1000xf32>)
// GROUP:         offload.wait %[[S]]
// GROUP-NEXT:    offload.wait %[[T]]
// GROUP-NEXT:    tensor.empty
// REPORT:      offload report: @forward -> @backward: 2 of 2 saved results offloaded
// REPORT:      1  test.two
// REPORT-NEXT: offload waited in backward before #6 tensor.empty
// REPORT-NEXT: 2  test.two
// REPORT-NEXT: offload waited in backward before #6 tensor.empty
func.func @forward(%x: tensor<5000xf32>, %y: tensor<5000xf32>, %v: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<5000xf32, #offload.host>, tensor<5000xf32, #offload.host>)
    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
  %e, %f = "test.two"(%x, %y) : (tensor<5000xf32>, tensor<5000xf32>) -> (tensor<5000xf32>, tensor<5000xf32>)
  %h = offload.offload_to_cpu %e : tensor<5000xf32> -> tensor<5000xf32, #offload.host>
  %k = offload.offload_to_cpu %f : tensor<5000xf32> -> tensor<5000xf32, #offload.host>
  %a = math.sin %v : tensor<1000xf32>
  %b = math.sin %a : tensor<1000xf32>
  return %b, %h, %k : tensor<1000xf32>, tensor<5000xf32, #offload.host>, tensor<5000xf32, #offload.host>
}
func.func @backward(%s: tensor<5000xf32, #offload.host>, %s2: tensor<5000xf32, #offload.host>, %g: tensor<1000xf32>) -> (tensor<5000xf32>, tensor<5000xf32>) {
  %a = math.exp %g : tensor<1000xf32>
  %b = math.sin %a : tensor<1000xf32>
  %c = math.sin %b : tensor<1000xf32>
  %d = math.sin %c : tensor<1000xf32>
  %t = "tensor.empty"() : () -> tensor<80000xf32>
  %e = math.sin %d : tensor<1000xf32>
  %l = offload.load_to_gpu %s : tensor<5000xf32, #offload.host> -> tensor<5000xf32>
  %l2 = offload.load_to_gpu %s2 : tensor<5000xf32, #offload.host> -> tensor<5000xf32>
  %r = math.exp %l : tensor<5000xf32>
  %r2 = math.exp %l2 : tensor<5000xf32>
  return %r, %r2 : tensor<5000xf32>, tensor<5000xf32>
}
