// offload-plan with offload-waits-in-backward=true (and schedule=true,
// release=at-wait) predicts an offload still in flight at the end of
// forward waited in backward, as offload-schedule-copies places it with the
// option, and records where: `offload.offload_waits` on the backward op the
// wait goes before (next to the load's `offload.load_starts`).
// offload-schedule-copies places the wait there: forward returns the copy's
// future and backward waits for it.
// Link and memory at 1 GB/s, no fixed costs: forward's compute ends at
// 96 us, the 40000-byte copy of %e at 120 us. Waited at the end of forward,
// it would stall forward 24 us: with the 32 us the load is exposed, the step
// takes 272 us instead of 216 us (26% slower), beyond max-slowdown=0.2, and
// plan=hidden keeps %e. Waited in backward before its peak (%t), it stalls
// nothing: 248 us (15% slower), and %e is offloaded.
// RUN: offload-opt %s -offload-find-saved-activations="min-bytes=0" -offload-plan="plan=hidden max-slowdown=0.2 max-interference=10 copy-margin=0 schedule=true hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 release=at-wait offload-waits-in-backward=true" | FileCheck %s --check-prefix=PLAN
// RUN: offload-opt %s -offload-find-saved-activations="min-bytes=0" -offload-plan="plan=hidden max-slowdown=0.2 max-interference=10 copy-margin=0 schedule=true hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 release=at-wait" | FileCheck %s --check-prefix=KEPT
// A budget the plan fits (the peak is 408000 bytes without offload, 368000
// with %e offloaded) records the same placements.
// RUN: offload-opt %s -offload-find-saved-activations="min-bytes=0" -offload-plan="plan=budget budget=380000 schedule=true hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 release=at-wait offload-waits-in-backward=true" | FileCheck %s --check-prefix=PLAN
// With schedule=false there are no waits to place: nothing is recorded.
// RUN: offload-opt %s -offload-find-saved-activations="min-bytes=0" -offload-plan="plan=budget budget=380000 schedule=false hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 release=at-wait offload-waits-in-backward=true" | FileCheck %s --check-prefix=SYNC
// The pipeline, with the same costs from a device profile: the recorded
// placements become the crossing, and the stamps are gone (PLACED checks
// every op of backward).
// RUN: echo '{"name": "slow", "hbm_GBps": 1, "d2h_GBps": 1, "h2d_GBps": 1, "both_ways_GBps": 2, "copy_latency_us": 0, "op_overhead_us": 0, "copy_interference": 0}' > %t.profile.json
// RUN: offload-opt %s --offload-activations="min-bytes=0 plan=hidden max-slowdown=0.2 max-interference=10 copy-margin=0 release=at-wait offload-waits-in-backward=true device-profile=%t.profile.json" | FileCheck %s --check-prefix=PLACED
// RUN: offload-opt %s --offload-activations="min-bytes=0 budget=380000 release=at-wait offload-waits-in-backward=true device-profile=%t.profile.json" | FileCheck %s --check-prefix=PLACED
// RUN: offload-opt %s --offload-activations="min-bytes=0 plan=hidden max-slowdown=0.2 max-interference=10 copy-margin=0 release=at-wait offload-waits-in-backward=true device-profile=%t.profile.json report=text" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT
// Without the option the pipeline keeps %e on the device.
// RUN: offload-opt %s --offload-activations="min-bytes=0 plan=hidden max-slowdown=0.2 max-interference=10 copy-margin=0 release=at-wait device-profile=%t.profile.json" | FileCheck %s --check-prefix=KEPT

// PLAN-LABEL: func.func @forward
// PLAN-SAME:    tensor<10000xf32> {offload.selected}
// PLAN-SAME:    offload.planned = {peak_bytes = 368000 : i64, step_seconds = 2.48{{0*}}e-04 : f64}
// PLAN-LABEL: func.func @backward
// PLAN-NEXT:    math.exp
// PLAN-NEXT:    math.sin
// PLAN-NEXT:    math.sin
// PLAN-NEXT:    math.sin
// PLAN-NEXT:    tensor.empty() {offload.offload_waits = array<i64: 0>} : tensor<80000xf32>
// PLAN-NEXT:    math.sin %{{.*}} {offload.load_starts = array<i64: 0>} : tensor<1000xf32>
// PLAN-NEXT:    math.exp %arg0

// KEPT-LABEL: func.func @forward
// KEPT-SAME:    tensor<10000xf32> {offload.kept = "plan: its copy cannot be hidden under compute"}
// KEPT-NOT:     offload.offload_waits
// KEPT-NOT:     offload.load_starts
// KEPT-NOT:     offload.offload_start

// SYNC-NOT: offload.offload_waits
// SYNC-NOT: offload.load_starts

// PLACED-LABEL: func.func @forward
// PLACED-SAME:    -> (tensor<1000xf32>, !offload.future<tensor<10000xf32, #offload.host>>)
// PLACED:         %[[F:.*]] = offload.offload_start
// PLACED-NEXT:    math.sin
// PLACED-NEXT:    %[[B:.*]] = math.sin
// PLACED-NEXT:    return %[[B]], %[[F]]
// PLACED-LABEL: func.func @backward
// PLACED-SAME:    (%[[S:.*]]: !offload.future<tensor<10000xf32, #offload.host>>, %{{.*}}: tensor<1000xf32>)
// PLACED-NEXT:    math.exp
// PLACED-NEXT:    math.sin
// PLACED-NEXT:    math.sin
// PLACED-NEXT:    math.sin
// PLACED-NEXT:    %[[H:.*]] = offload.wait %[[S]] : !offload.future<tensor<10000xf32, #offload.host>>
// PLACED-NEXT:    tensor.empty() : tensor<80000xf32>
// PLACED-NEXT:    %[[L:.*]] = offload.load_start %[[H]]
// PLACED-NEXT:    math.sin %{{[0-9]+}} : tensor<1000xf32>
// PLACED-NEXT:    %[[D:.*]] = offload.wait %[[L]]
// PLACED-NEXT:    math.exp %[[D]]

// REPORT:      offload report: @forward -> @backward: 1 of 1 saved results offloaded
// REPORT:      1  math.exp {{.*}} 32.0 us
// REPORT-NEXT: offload waited in backward before #5 tensor.empty
// REPORT-NEXT: total: offloaded 1 values
// REPORT-NEXT: predicted (slow): {{.*}} step 216.0 us -> 248.0 us (exposed copies 32.0 us)
// REPORT-NEXT: offload-plan predicted for its plan: peak device memory 359.4 KiB; step 248.0 us

func.func @forward(%x: tensor<10000xf32>, %v: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<10000xf32>)
    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<10000xf32>
  %a = math.sin %v : tensor<1000xf32>
  %b = math.sin %a : tensor<1000xf32>
  return %b, %e : tensor<1000xf32>, tensor<10000xf32>
}
func.func @backward(%s: tensor<10000xf32>, %g: tensor<1000xf32>) -> tensor<10000xf32> {
  %a = math.exp %g : tensor<1000xf32>
  %b = math.sin %a : tensor<1000xf32>
  %c = math.sin %b : tensor<1000xf32>
  %d = math.sin %c : tensor<1000xf32>
  %t = "tensor.empty"() : () -> tensor<80000xf32>
  %e = math.sin %d : tensor<1000xf32>
  %r = math.exp %s : tensor<10000xf32>
  return %r : tensor<10000xf32>
}
