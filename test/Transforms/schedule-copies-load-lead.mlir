// `load-lead` starts each load that fraction of its copy time earlier than
// the model needs, where memory allows; by default it is `copy-margin`'s
// value (the margin plan=hidden plans with). Link and memory at 1 GB/s, no
// fixed costs: each backward exp takes 8 us, the load of %e (4000 B) 4 us.
// With no lead the load starts one exp before its use; with a lead of 1.5
// it needs 10 us and starts two exps before; with 3 (16 us), three.
// RUN: offload-opt %s -offload-find-saved-activations="min-bytes=0" -offload-insert-offloads -offload-reorder-backward -offload-insert-loads \
// RUN:   -offload-schedule-copies="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 copy-margin=0" | \
// RUN:   FileCheck %s --check-prefix=ONE
// RUN: offload-opt %s -offload-find-saved-activations="min-bytes=0" -offload-insert-offloads -offload-reorder-backward -offload-insert-loads \
// RUN:   -offload-schedule-copies="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 copy-margin=0 load-lead=1.5" | \
// RUN:   FileCheck %s --check-prefix=TWO
// RUN: offload-opt %s -offload-find-saved-activations="min-bytes=0" -offload-insert-offloads -offload-reorder-backward -offload-insert-loads \
// RUN:   -offload-schedule-copies="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 copy-margin=1.5" | \
// RUN:   FileCheck %s --check-prefix=TWO
// RUN: offload-opt %s -offload-find-saved-activations="min-bytes=0" -offload-insert-offloads -offload-reorder-backward -offload-insert-loads \
// RUN:   -offload-schedule-copies="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 copy-margin=1.5 load-lead=3" | \
// RUN:   FileCheck %s --check-prefix=THREE
// offload-plan records the load starts with the same lead, and the
// scheduler follows the record.
// RUN: offload-opt %s -offload-find-saved-activations="min-bytes=0" -offload-plan="plan=hidden max-slowdown=10 max-interference=10 schedule=true \
// RUN:   hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 copy-margin=0 load-lead=1.5" -offload-insert-offloads \
// RUN:   -offload-reorder-backward -offload-insert-loads -offload-schedule-copies="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 \
// RUN:   op-overhead-us=0" | FileCheck %s --check-prefix=TWO
// A negative or non-finite lead is an error.
// RUN: not offload-opt %s --offload-activations="load-lead=nan" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not offload-opt %s -offload-plan="plan=hidden load-lead=inf" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD

// ONE-LABEL: func.func @schedule_copies_load_lead_backward
// ONE:         math.exp
// ONE-NEXT:    math.exp
// ONE-NEXT:    offload.load_start
// ONE-NEXT:    math.exp
// ONE-NEXT:    offload.wait
// TWO-LABEL: func.func @schedule_copies_load_lead_backward
// TWO:         math.exp
// TWO-NEXT:    offload.load_start
// TWO-NEXT:    math.exp
// TWO-NEXT:    math.exp
// TWO-NEXT:    offload.wait
// THREE-LABEL: func.func @schedule_copies_load_lead_backward
// THREE-NEXT:    offload.load_start
// THREE-NEXT:    math.exp
// THREE-NEXT:    math.exp
// THREE-NEXT:    math.exp
// THREE-NEXT:    offload.wait
// BAD: error: load-lead must be a finite fraction >= 0, got
func.func @schedule_copies_load_lead_forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32>)
    attributes {offload.backward = @schedule_copies_load_lead_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1000xf32>
  %y = math.sin %e : tensor<1000xf32>
  %z = math.sin %y : tensor<1000xf32>
  return %z, %e : tensor<1000xf32>, tensor<1000xf32>
}
func.func @schedule_copies_load_lead_backward(%s: tensor<1000xf32>, %g: tensor<1000xf32>) -> tensor<1000xf32> {
  %a = math.exp %g : tensor<1000xf32>
  %b = math.exp %a : tensor<1000xf32>
  %c = math.exp %b : tensor<1000xf32>
  %r = arith.mulf %c, %s : tensor<1000xf32>
  return %r : tensor<1000xf32>
}
