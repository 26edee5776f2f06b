// offload-schedule-copies with coalesce-below: copies of fewer bytes issued
// at one point move as one transfer. The two 4000-byte offloads after the
// addf become one offload_group_start (the 1 MB one, above the limit, stays
// alone), and their two loads one load_group_start. With a 10 us copy
// latency and 1 GB/s, the two loads took 2 x (10 + 4) us one after the
// other, and the group 10 + 8 us: the exposed time of the pair drops from
// 12 to 4 us, and the step from 2.076 to 2.066 ms.
// RUN: offload-opt %s -offload-schedule-copies="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=10 op-overhead-us=0 coalesce-below=64KiB" | FileCheck %s
// RUN: offload-opt %s -offload-schedule-copies="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=10 op-overhead-us=0 coalesce-below=64KiB" \
// RUN:   -offload-report="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=10 op-overhead-us=0" -o /dev/null 2>&1 | \
// RUN:   FileCheck %s --check-prefix=GROUPED
// RUN: offload-opt %s -offload-schedule-copies="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=10 op-overhead-us=0" \
// RUN:   -offload-report="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=10 op-overhead-us=0" -o /dev/null 2>&1 | \
// RUN:   FileCheck %s --check-prefix=APART
// RUN: not offload-opt %s -offload-schedule-copies="coalesce-below=small" 2>&1 | FileCheck %s --check-prefix=BAD

// CHECK-LABEL: func.func @schedule_copies_coalesce_forward
// CHECK: %[[A:.*]] = math.exp %arg0
// CHECK-NEXT: %[[B:.*]] = math.sin %arg0
// CHECK-NEXT: %[[BIG:.*]] = tensor.empty
// CHECK-NEXT: arith.addf
// CHECK-NEXT: %[[G:.*]]:2 = offload.offload_group_start %[[A]], %[[B]] : tensor<1000xf32>, tensor<1000xf32> -> !offload.future<tensor<1000xf32,
// CHECK-SAME: #offload.host>>, !offload.future<tensor<1000xf32, #offload.host>>
// CHECK-NEXT: %[[F:.*]] = offload.offload_start %[[BIG]]
// CHECK: offload.wait %[[G]]#0
// CHECK-NEXT: offload.wait %[[G]]#1
// CHECK-NEXT: offload.wait %[[F]]
// CHECK-LABEL: func.func @schedule_copies_coalesce_backward
// CHECK: %[[L:.*]]:2 = offload.load_group_start %arg0, %arg1 : tensor<1000xf32, #offload.host>, tensor<1000xf32, #offload.host> -> !offload.future<tensor<1000xf32>>, !offload.future<tensor<1000xf32>>
// CHECK: %[[LA:.*]] = offload.wait %[[L]]#0
// CHECK-NEXT: %[[LB:.*]] = offload.wait %[[L]]#1
// CHECK-NEXT: arith.addf %[[LA]], %[[LB]]
// CHECK: offload.load_start %arg2
// CHECK-NOT: group_start

// GROUPED-LABEL: offload report: @schedule_copies_coalesce_forward -> @schedule_copies_coalesce_backward
// GROUPED: 1  math.exp {{.*}} 4.0 us
// GROUPED: 2  math.sin {{.*}} 0.0 us
// GROUPED: step 84.0 us -> 2.066 ms
// APART-LABEL: offload report: @schedule_copies_coalesce_forward -> @schedule_copies_coalesce_backward
// APART: 1  math.exp {{.*}} 0.0 us
// APART: 2  math.sin {{.*}} 12.0 us
// APART: step 84.0 us -> 2.076 ms

// BAD: for the --coalesce-below option: 'small' is not a byte size

func.func @schedule_copies_coalesce_forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32, #offload.host>, tensor<1000xf32, #offload.host>, tensor<250000xf32, #offload.host>)
    attributes {offload.backward = @schedule_copies_coalesce_backward, offload.num_outputs = 1 : i64} {
  %a = math.exp %x : tensor<1000xf32>
  %b = math.sin %x : tensor<1000xf32>
  %big = tensor.empty() : tensor<250000xf32>
  %c = arith.addf %a, %b : tensor<1000xf32>
  %ha = offload.offload_to_cpu %a : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  %hb = offload.offload_to_cpu %b : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  %hbig = offload.offload_to_cpu %big : tensor<250000xf32> -> tensor<250000xf32, #offload.host>
  %d = math.exp %c : tensor<1000xf32>
  %e = math.exp %d : tensor<1000xf32>
  return %e, %ha, %hb, %hbig : tensor<1000xf32>, tensor<1000xf32, #offload.host>, tensor<1000xf32, #offload.host>, tensor<250000xf32, #offload.host>
}
func.func @schedule_copies_coalesce_backward(%sa: tensor<1000xf32, #offload.host>, %sb: tensor<1000xf32, #offload.host>, %sbig: tensor<250000xf32,
    #offload.host>, %g: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<250000xf32>) {
  %p = math.exp %g : tensor<1000xf32>
  %q = math.exp %p : tensor<1000xf32>
  %la = offload.load_to_gpu %sa : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %lb = offload.load_to_gpu %sb : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %r = arith.addf %la, %lb : tensor<1000xf32>
  %s = arith.mulf %q, %r : tensor<1000xf32>
  %lbig = offload.load_to_gpu %sbig : tensor<250000xf32, #offload.host> -> tensor<250000xf32>
  return %s, %lbig : tensor<1000xf32>, tensor<250000xf32>
}
