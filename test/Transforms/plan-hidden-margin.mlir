// plan=hidden keeps a value only if its copy stays hidden when every copy
// takes `copy-margin` longer than the profile says (default 5%). Link and
// memory at 1 GB/s except D2H at 0.52 GB/s, no fixed costs: the 4000-byte
// saved %e is copied out from 16 us (after its last forward use) in
// 7.69 us, and forward ends at 24 us, where release=at-wait waits for it.
// Without a margin the copy ends 0.31 us before forward does; 5% longer
// (8.08 us) it would stall forward, so by default %e stays on the device.
// RUN: offload-opt %s -offload-find-saved-activations="min-bytes=0" \
// RUN:   -offload-plan="plan=hidden schedule=true hbm-gbps=1 d2h-gbps=0.52 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 release=at-wait" \
// RUN:   | FileCheck %s --check-prefix=KEPT
// RUN: offload-opt %s -offload-find-saved-activations="min-bytes=0" \
// RUN:   -offload-plan="plan=hidden schedule=true hbm-gbps=1 d2h-gbps=0.52 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 release=at-wait copy-margin=0" \
// RUN:   | FileCheck %s --check-prefix=OFFLOADED
// 1% longer (7.77 us) still ends within forward.
// RUN: offload-opt %s -offload-find-saved-activations="min-bytes=0" \
// RUN:   -offload-plan="plan=hidden schedule=true hbm-gbps=1 d2h-gbps=0.52 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 release=at-wait copy-margin=0.01" \
// RUN:   | FileCheck %s --check-prefix=OFFLOADED
// A negative or non-finite margin is an error.
// RUN: not offload-opt %s -offload-find-saved-activations="min-bytes=0" -offload-plan="plan=hidden copy-margin=-0.1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not offload-opt %s -offload-find-saved-activations="min-bytes=0" -offload-plan="plan=hidden copy-margin=nan" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD

// KEPT-LABEL: func.func @plan_hidden_margin_forward
// KEPT-SAME: tensor<1000xf32> {offload.kept = "plan: its copy cannot be hidden under compute"}
// OFFLOADED-LABEL: func.func @plan_hidden_margin_forward
// OFFLOADED-SAME: tensor<1000xf32> {offload.selected}
// BAD: error: copy-margin must be a finite fraction >= 0, got
func.func @plan_hidden_margin_forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32>)
    attributes {offload.backward = @plan_hidden_margin_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1000xf32>
  %y = math.sin %e : tensor<1000xf32>
  %z = math.sin %y : tensor<1000xf32>
  return %z, %e : tensor<1000xf32>, tensor<1000xf32>
}
func.func @plan_hidden_margin_backward(%s: tensor<1000xf32>, %g: tensor<1000xf32>) -> tensor<1000xf32> {
  %a = math.exp %g : tensor<1000xf32>
  %b = math.exp %a : tensor<1000xf32>
  %c = math.exp %b : tensor<1000xf32>
  %r = arith.mulf %c, %s : tensor<1000xf32>
  return %r : tensor<1000xf32>
}
