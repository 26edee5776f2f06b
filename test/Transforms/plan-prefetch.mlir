// A step compiled as one of several graphs: its first loads may run during
// the backward graph before it (prefetch-lead), within prefetch-bytes. Link
// and memory at 1 GB/s, no fixed costs (Inputs/slow-link.json). The 4000-byte
// saved %e is read by backward's first op, so its load (4 us) cannot hide
// under this backward's compute: plan=hidden keeps it.
// RUN: offload-opt %s --offload-activations="min-bytes=0 plan=hidden device-profile=%S/Inputs/slow-link.json" | FileCheck %s --check-prefix=ALONE
// ALONE-LABEL: func.func @plan_prefetch_forward
// ALONE-SAME: tensor<1000xf32> {offload.kept = "plan: its copy cannot be hidden under compute"}

// With 10 us of the graph before and room for its 4000 bytes, the load runs
// there: %e is offloaded, its load start is marked for the graph before, and
// backward marks where it starts the next graph's loads: at the first op
// that starts no earlier than 10 us before its end (the last exp, 8 us).
// RUN: offload-opt %s --offload-activations="min-bytes=0 plan=hidden device-profile=%S/Inputs/slow-link.json prefetch-lead=1e-5 prefetch-bytes=4000" | FileCheck %s --check-prefix=LEAD
// LEAD-LABEL: func.func @plan_prefetch_forward
// LEAD: offload.offload_start
// LEAD-LABEL: func.func @plan_prefetch_backward
// LEAD-NEXT: offload.load_start %{{.*}} {offload.prefetch}
// LEAD: offload.wait
// LEAD-NEXT: arith.mulf
// LEAD-NEXT: math.exp
// LEAD-NEXT: math.exp {{.*}} {offload.prefetch_issue}

// Too little room, or too short a lead (1 us carries 1000 of its bytes,
// the other 3 us would stall backward): kept.
// RUN: offload-opt %s --offload-activations="min-bytes=0 plan=hidden device-profile=%S/Inputs/slow-link.json prefetch-lead=1e-5 prefetch-bytes=3999" | FileCheck %s --check-prefix=ALONE
// RUN: offload-opt %s --offload-activations="min-bytes=0 plan=hidden device-profile=%S/Inputs/slow-link.json prefetch-lead=1e-6 prefetch-bytes=4000" | FileCheck %s --check-prefix=ALONE

// The report says what the lead moves.
// RUN: offload-opt %s --offload-activations="min-bytes=0 plan=hidden device-profile=%S/Inputs/slow-link.json prefetch-lead=1e-5 prefetch-bytes=4000 report=json report-file=-" \
// RUN:   -o /dev/null | FileCheck %s --check-prefix=REPORT
// REPORT-LABEL: "backward": "plan_prefetch_backward",
// REPORT:      "prefetch": {
// REPORT-NEXT:   "bytes": 4000,
// REPORT-NEXT:   "lead_seconds": 1.0000000000000001e-05,
// REPORT-NEXT:   "load_bytes": 4000,
// REPORT-NEXT:   "loads": 1
// REPORT-NEXT: },

// The step holds the next graph's loads over its own tail: with room for
// 20000 bytes, the last exp (12000 live) peaks at 32000, above forward's
// 16000.
// RUN: offload-opt %s --offload-activations="min-bytes=0 plan=hidden device-profile=%S/Inputs/slow-link.json prefetch-lead=1e-5 prefetch-bytes=20000 report=text" \
// RUN:   -o /dev/null 2>&1 | FileCheck %s --check-prefix=HOLD
// HOLD-LABEL: offload report: @plan_prefetch_forward -> @plan_prefetch_backward
// HOLD: peak device memory 31.2 KiB -> 31.2 KiB
// HOLD: peak with offload: at 44.0 us into the step, @plan_prefetch_backward #4 math.exp

// prefetch-lead=auto plans the lead: the step peaks at 16000 bytes, the last
// 8 us of backward (the last exp) hold at most 12000, so 4000 are free
// there, as many as the link carries in 4 us; a longer tail leaves no more
// room.
// RUN: offload-opt %s --offload-activations="min-bytes=0 plan=hidden device-profile=%S/Inputs/slow-link.json prefetch-lead=auto report=text" -o /dev/null 2>&1 | FileCheck %s --check-prefix=AUTO
// AUTO-LABEL: offload report: @plan_prefetch_forward -> @plan_prefetch_backward
// AUTO: prefetch: lead 8.0 us holding at most 3.9 KiB; 1 loads (3.9 KiB) start during the backward graph before

// Bad values name the option.
// RUN: not offload-opt %s --offload-activations="prefetch-lead=-1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD-LEAD
// RUN: not offload-opt %s --offload-activations="plan=hidden prefetch-lead=soon" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD-LEAD
// RUN: not offload-opt %s --offload-activations="plan=hidden prefetch-bytes=lots" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD-BYTES
// BAD-LEAD: error: option prefetch-lead: expected seconds >= 0 or auto, got
// BAD-BYTES: for the --prefetch-bytes option: 'lots' is not a byte size
func.func @plan_prefetch_forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32>)
    attributes {offload.backward = @plan_prefetch_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1000xf32>
  %y = math.sin %e : tensor<1000xf32>
  %z = math.sin %y : tensor<1000xf32>
  return %z, %e : tensor<1000xf32>, tensor<1000xf32>
}
func.func @plan_prefetch_backward(%s: tensor<1000xf32>, %g: tensor<1000xf32>) -> tensor<1000xf32> {
  %r = arith.mulf %g, %s : tensor<1000xf32>
  %a = math.exp %r : tensor<1000xf32>
  %b = math.exp %a : tensor<1000xf32>
  return %b : tensor<1000xf32>
}
