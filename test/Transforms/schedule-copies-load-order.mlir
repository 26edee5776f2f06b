// How load-lead hoists a chain of loads, and the order the H2D stream runs
// them in. Link and memory at 1 GB/s, no fixed costs: each backward exp
// takes 8 us (a at 0, b at 8, c at 16), the mulf of %s 12 us (from 24), the
// mulf of %t from 36; each load (4000 B) 4 us.
//
// The lead is slack for each copy on its own: it does not push the loads
// that wait earlier earlier still. With load-lead=3 a load is started 16 us
// before its copy must end: %t's before c (36 - 16 = 20), and %s's, whose
// copy must end by 24 and leaves the stream free from 32, before b
// (24 - 16 = 8), not before a (where it would go if %t's lead were added to
// the stream's time as well: 20 - 16 = 4).
// RUN: offload-opt %s -offload-find-saved-activations="min-bytes=0" -offload-insert-offloads -offload-reorder-backward -offload-insert-loads \
// RUN:   -offload-schedule-copies="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 copy-margin=0 load-lead=3" | \
// RUN:   FileCheck %s --check-prefix=LEAD
//
// The stream runs loads in the order they are issued, so a load never
// starts after one that waits later. Here at most 4000 B may be in flight:
// %s cannot start while %t is in flight, so it starts at its wait, and
// %t, which waits later, starts there too, behind it (not before c, where
// its copy would hold the stream ahead of %s's).
// RUN: offload-opt %s -offload-find-saved-activations="min-bytes=0" -offload-insert-offloads -offload-reorder-backward -offload-insert-loads \
// RUN:   -offload-schedule-copies="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 copy-margin=0 load-lead=3 max-inflight-bytes=4000" \
// RUN:   | FileCheck %s --check-prefix=INFLIGHT

// LEAD-LABEL: func.func @schedule_copies_load_order_backward
// LEAD-NEXT:    %[[A:.*]] = math.exp %arg2
// LEAD-NEXT:    %[[S:.*]] = offload.load_start %arg0
// LEAD-NEXT:    %[[B:.*]] = math.exp %[[A]]
// LEAD-NEXT:    %[[T:.*]] = offload.load_start %arg1
// LEAD-NEXT:    %[[C:.*]] = math.exp %[[B]]
// LEAD-NEXT:    %[[SV:.*]] = offload.wait %[[S]]
// LEAD-NEXT:    %[[M:.*]] = arith.mulf %[[C]], %[[SV]]
// LEAD-NEXT:    %[[TV:.*]] = offload.wait %[[T]]
// LEAD-NEXT:    arith.mulf %[[M]], %[[TV]]

// INFLIGHT-LABEL: func.func @schedule_copies_load_order_backward
// INFLIGHT-NEXT:    math.exp %arg2
// INFLIGHT-NEXT:    math.exp
// INFLIGHT-NEXT:    %[[C:.*]] = math.exp
// INFLIGHT-NEXT:    %[[S:.*]] = offload.load_start %arg0
// INFLIGHT-NEXT:    %[[T:.*]] = offload.load_start %arg1
// INFLIGHT-NEXT:    %[[SV:.*]] = offload.wait %[[S]]
// INFLIGHT-NEXT:    %[[M:.*]] = arith.mulf %[[C]], %[[SV]]
// INFLIGHT-NEXT:    %[[TV:.*]] = offload.wait %[[T]]
// INFLIGHT-NEXT:    arith.mulf %[[M]], %[[TV]]

// The forward peak (%w, %q, %z) leaves backward room to hoist both loads.
func.func @schedule_copies_load_order_forward(%x: tensor<1000xf32>, %w: tensor<8000xf32>) -> (tensor<8000xf32>, tensor<1000xf32>, tensor<1000xf32>)
    attributes {offload.backward = @schedule_copies_load_order_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1000xf32>
  %f = math.exp %e : tensor<1000xf32>
  %q = math.exp %w : tensor<8000xf32>
  %z = math.sin %q : tensor<8000xf32>
  return %z, %e, %f : tensor<8000xf32>, tensor<1000xf32>, tensor<1000xf32>
}
func.func @schedule_copies_load_order_backward(%s: tensor<1000xf32>, %t: tensor<1000xf32>, %g: tensor<1000xf32>) -> tensor<1000xf32> {
  %a = math.exp %g : tensor<1000xf32>
  %b = math.exp %a : tensor<1000xf32>
  %c = math.exp %b : tensor<1000xf32>
  %m = arith.mulf %c, %s : tensor<1000xf32>
  %r = arith.mulf %m, %t : tensor<1000xf32>
  return %r : tensor<1000xf32>
}
