// plan=hidden under the two release models. Link and memory at 1 GB/s
// except D2H at 0.2 GB/s, no fixed costs: the 4000-byte saved %e is copied
// out in 20 us from 16 us (after its last forward use), and forward ends at
// 24 us. With release=after-copy the copy runs on under backward and is
// hidden; with release=at-wait forward would wait 12 us for it at its end,
// so the planner keeps %e on the device.
// RUN: offload-opt %s -offload-find-saved-activations="min-bytes=0" \
// RUN:   -offload-plan="plan=hidden schedule=true hbm-gbps=1 d2h-gbps=0.2 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0" | FileCheck \
// RUN:   %s --check-prefix=AFTER
// RUN: offload-opt %s -offload-find-saved-activations="min-bytes=0" \
// RUN:   -offload-plan="plan=hidden schedule=true hbm-gbps=1 d2h-gbps=0.2 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 release=at-wait" \
// RUN:   | FileCheck %s --check-prefix=ATWAIT
// At 1 GB/s the copy ends at 20 us, within forward: offloaded either way.
// RUN: offload-opt %s -offload-find-saved-activations="min-bytes=0" \
// RUN:   -offload-plan="plan=hidden schedule=true hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 release=at-wait" \
// RUN:   | FileCheck %s --check-prefix=AFTER
// Kernels slowed by the copies beside them (copy-interference 0.5: the
// 4 us of D2H and 4 us of H2D transfer make kernels 4 us slower, 6.7% of
// the 60 us step) are not exposed copies: they count against
// max-interference (default 1%) instead of max-slowdown. Allowed 10%, %e
// is offloaded; at the default it stays.
// RUN: offload-opt %s -offload-find-saved-activations="min-bytes=0" \
// RUN:   -offload-plan="plan=hidden schedule=true hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 release=at-wait copy-interference=0.5 max-interference=0.1" \
// RUN:   | FileCheck %s --check-prefix=AFTER
// RUN: offload-opt %s -offload-find-saved-activations="min-bytes=0" \
// RUN:   -offload-plan="plan=hidden schedule=true hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 release=at-wait copy-interference=0.5" \
// RUN:   | FileCheck %s --check-prefix=ATWAIT
// RUN: not offload-opt %s -offload-find-saved-activations="min-bytes=0" -offload-plan="plan=hidden max-interference=-1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: max-interference must be a finite fraction >= 0, got

// AFTER-LABEL: func.func @plan_hidden_release_forward
// AFTER-SAME: tensor<1000xf32> {offload.selected}
// ATWAIT-LABEL: func.func @plan_hidden_release_forward
// ATWAIT-SAME: tensor<1000xf32> {offload.kept = "plan: its copy cannot be hidden under compute"}
func.func @plan_hidden_release_forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32>)
    attributes {offload.backward = @plan_hidden_release_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1000xf32>
  %y = math.sin %e : tensor<1000xf32>
  %z = math.sin %y : tensor<1000xf32>
  return %z, %e : tensor<1000xf32>, tensor<1000xf32>
}
func.func @plan_hidden_release_backward(%s: tensor<1000xf32>, %g: tensor<1000xf32>) -> tensor<1000xf32> {
  %a = math.exp %g : tensor<1000xf32>
  %b = math.exp %a : tensor<1000xf32>
  %c = math.exp %b : tensor<1000xf32>
  %r = arith.mulf %c, %s : tensor<1000xf32>
  return %r : tensor<1000xf32>
}
