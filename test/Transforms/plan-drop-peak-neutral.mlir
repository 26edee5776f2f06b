// plan=hidden with drop-peak-neutral: an offload the link hides but the
// predicted peak does not need is kept on the device. Link and memory at
// 1 GB/s, no fixed costs: the 4000-byte %e is copied out in 4 us under the
// 8 us op after its last forward use, hidden either way.
// RUN: offload-opt %s -split-input-file -offload-find-saved-activations="min-bytes=0" \
// RUN:   -offload-plan="plan=hidden schedule=true hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 release=at-wait recompute=false" \
// RUN:   | FileCheck %s --check-prefixes=CHECK,HIDDEN
// RUN: offload-opt %s -split-input-file -offload-find-saved-activations="min-bytes=0" \
// RUN:   -offload-plan="plan=hidden schedule=true hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 release=at-wait recompute=false drop-peak-neutral=true" \
// RUN:   | FileCheck %s --check-prefixes=CHECK,DROP
// The pipeline takes the option too (Inputs/slow-link.json is the same
// link and memory), and its report says why %e stays.
// RUN: offload-opt %s -split-input-file \
// RUN:   --offload-activations="min-bytes=0 schedule=true release=at-wait recompute=false drop-peak-neutral=true report=text device-profile=%S/Inputs/slow-link.json" \
// RUN:   -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT
// It only drops from what plan=hidden chose: plan=budget and plan=all are
// refused.
// RUN: not offload-opt %s -split-input-file -offload-find-saved-activations="min-bytes=0" \
// RUN:   -offload-plan="budget=0.9 drop-peak-neutral=true" -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BUDGET
// RUN: not offload-opt %s -split-input-file -offload-find-saved-activations="min-bytes=0" \
// RUN:   -offload-plan="plan=all drop-peak-neutral=true" -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=ALL
// BUDGET: error: drop-peak-neutral drops what plan=hidden chose; plan=budget drops what the budget does not need by itself
// ALL: error: drop-peak-neutral drops what plan=hidden chose; plan=all keeps every offload

// The peak is late in backward, where the weight gradient %gp2 is made
// beside %gp (64000 bytes): %e is dead by then, so offloading it lowers no
// peak (as at short sequences, where the step's peak is the gradients').

// CHECK-LABEL: func.func @peak_in_gradients_forward
// HIDDEN-SAME: tensor<1000xf32> {offload.selected}
// DROP-SAME: tensor<1000xf32> {offload.kept = "plan: offloading it does not lower the predicted peak"}
// REPORT: offload report: @peak_in_gradients_forward -> @peak_in_gradients_backward: 0 of 2 saved results offloaded
// REPORT: math.exp
// REPORT-SAME: kept: plan: offloading it does not lower the predicted peak
func.func @peak_in_gradients_forward(%x: tensor<1000xf32>, %p: tensor<8000xf32>)
    -> (tensor<1000xf32>, tensor<1000xf32>, tensor<8000xf32>)
    attributes {offload.backward = @peak_in_gradients_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1000xf32>
  %y = math.sin %e : tensor<1000xf32>
  %z = math.sin %y : tensor<1000xf32>
  %z2 = math.sin %z : tensor<1000xf32>
  return %z2, %e, %p : tensor<1000xf32>, tensor<1000xf32>, tensor<8000xf32>
}
func.func @peak_in_gradients_backward(%s: tensor<1000xf32>, %ps: tensor<8000xf32>, %g: tensor<1000xf32>)
    -> (tensor<1000xf32>, tensor<8000xf32>) {
  %a = math.exp %g : tensor<1000xf32>
  %b = math.exp %a : tensor<1000xf32>
  %r = arith.mulf %b, %s : tensor<1000xf32>
  %gp = math.exp %ps : tensor<8000xf32>
  %gp2 = math.sin %gp : tensor<8000xf32>
  return %r, %gp2 : tensor<1000xf32>, tensor<8000xf32>
}

// -----

// The peak is in forward at %w, where %y is kept for it: offloading %e
// (released at its wait, before %w) lowers it from 20000 to 16000 bytes,
// so the offload stays.

// CHECK-LABEL: func.func @peak_in_forward_forward
// HIDDEN-SAME: tensor<1000xf32> {offload.selected}
// DROP-SAME: tensor<1000xf32> {offload.selected}
// REPORT: offload report: @peak_in_forward_forward -> @peak_in_forward_backward: 1 of 1 saved results offloaded
func.func @peak_in_forward_forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32>)
    attributes {offload.backward = @peak_in_forward_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1000xf32>
  %y = math.sin %e : tensor<1000xf32>
  %z = math.sin %y : tensor<1000xf32>
  %w = arith.addf %z, %y : tensor<1000xf32>
  %v = math.sin %w : tensor<1000xf32>
  return %v, %e : tensor<1000xf32>, tensor<1000xf32>
}
func.func @peak_in_forward_backward(%s: tensor<1000xf32>, %g: tensor<1000xf32>) -> tensor<1000xf32> {
  %a = math.exp %g : tensor<1000xf32>
  %b = math.exp %a : tensor<1000xf32>
  %c = math.exp %b : tensor<1000xf32>
  %r = arith.mulf %c, %s : tensor<1000xf32>
  return %r : tensor<1000xf32>
}
