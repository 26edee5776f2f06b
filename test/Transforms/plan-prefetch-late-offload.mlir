// A load the graph before starts (prefetch-lead) does not wait for its
// offload in this step's timeline: the other graphs' forward and backward run
// in between. Link and memory at 1 GB/s, no fixed costs
// (Inputs/slow-link.json). %e is read by forward's last op, so its offload
// (4 us) runs past the end of forward, and backward's first op reads it.
// Alone, its load waits for that offload, then takes 4 us: kept.
// RUN: offload-opt %s --offload-activations="min-bytes=0 plan=hidden release=after-copy device-profile=%S/Inputs/slow-link.json" | FileCheck %s --check-prefix=ALONE
// ALONE-LABEL: func.func @plan_prefetch_late_offload_forward
// ALONE-SAME: tensor<1000xf32> {offload.kept = "plan: its copy cannot be hidden under compute"}

// Started 10 us before backward, during the graph before: offloaded.
// RUN: offload-opt %s --offload-activations="min-bytes=0 plan=hidden release=after-copy device-profile=%S/Inputs/slow-link.json prefetch-lead=1e-5 prefetch-bytes=4000" \
// RUN:   | FileCheck %s --check-prefix=LEAD
// LEAD-LABEL: func.func @plan_prefetch_late_offload_backward
// LEAD-NEXT: offload.load_start %{{.*}} {offload.prefetch}
// With release=at-wait, forward's end would wait for that offload (4 us
// exposed) alone; with a lead the next graph's forward completes it: the
// wait is deferred (the compute stream does not wait, the source goes back
// once the copy ends), and the step holds that many bytes over its own first
// lead seconds for the graph before's.
// RUN: offload-opt %s --offload-activations="min-bytes=0 plan=hidden release=at-wait device-profile=%S/Inputs/slow-link.json" | FileCheck %s --check-prefix=ALONE
// RUN: offload-opt %s --offload-activations="min-bytes=0 plan=hidden release=at-wait device-profile=%S/Inputs/slow-link.json prefetch-lead=1e-5 prefetch-bytes=4000" \
// RUN:   | FileCheck %s --check-prefix=DEFER
// DEFER-LABEL: func.func @plan_prefetch_late_offload_forward
// DEFER: offload.offload_start
// DEFER-NEXT: offload.wait %{{.*}} {offload.deferred}
// DEFER-NEXT: return
// DEFER-LABEL: func.func @plan_prefetch_late_offload_backward
// DEFER-NEXT: offload.load_start %{{.*}} {offload.prefetch}

func.func @plan_prefetch_late_offload_forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32>)
    attributes {offload.backward = @plan_prefetch_late_offload_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1000xf32>
  %z = math.sin %e : tensor<1000xf32>
  return %z, %e : tensor<1000xf32>, tensor<1000xf32>
}
func.func @plan_prefetch_late_offload_backward(%s: tensor<1000xf32>, %g: tensor<1000xf32>) -> tensor<1000xf32> {
  %r = arith.mulf %g, %s : tensor<1000xf32>
  %a = math.exp %r : tensor<1000xf32>
  %b = math.exp %a : tensor<1000xf32>
  return %b : tensor<1000xf32>
}
