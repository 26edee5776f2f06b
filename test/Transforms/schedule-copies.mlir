// With a link and memory of 1 GB/s and no fixed costs, each math.exp on
// tensor<1000xf32> takes 8 us (4000 B read + 4000 B written) and loading the
// 4000-byte saved value takes 4 us. The load is waited before op #3 of
// backward (starting at 24 us), so it must start by 20 us: before %c (16 us).
// RUN: offload-opt %s -split-input-file -offload-schedule-copies="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0" | FileCheck %s
// A 1000-byte in-flight limit leaves no room to hoist a 4000-byte load.
// RUN: offload-opt %s -split-input-file -offload-schedule-copies="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 max-inflight-bytes=1000" | FileCheck %s --check-prefix=CAPPED
// The report predicts no exposed copy time for the scheduled step, and the
// full 4 us for the unscheduled one.
// RUN: offload-opt %s -split-input-file -offload-schedule-copies="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0" -offload-report="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0" -o /dev/null | FileCheck %s --check-prefix=REPORT
// RUN: offload-opt %s -split-input-file -offload-report="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0" -o /dev/null | FileCheck %s --check-prefix=SYNC
// RUN: not offload-opt %s -split-input-file -offload-schedule-copies="max-inflight-bytes=lots" 2>&1 | FileCheck %s --check-prefix=BAD

// CHECK-LABEL: func @forward
// CHECK: %[[E:.*]] = math.exp
// CHECK-NEXT: math.sin %[[E]]
// CHECK-NEXT: %[[F:.*]] = offload.offload_start %[[E]] : tensor<1000xf32> -> !offload.future<tensor<1000xf32, #offload.host>>
// CHECK-NEXT: math.sin
// CHECK-NEXT: %[[H:.*]] = offload.wait %[[F]]
// CHECK-NEXT: return %{{.*}}, %[[H]]
// CHECK-LABEL: func @backward
// CHECK: %[[A:.*]] = math.exp %arg1
// CHECK-NEXT: %[[B:.*]] = math.exp %[[A]]
// CHECK-NEXT: %[[S:.*]] = offload.load_start %arg0
// CHECK-NEXT: %[[C:.*]] = math.exp %[[B]]
// CHECK-NEXT: %[[L:.*]] = offload.wait %[[S]] : !offload.future<tensor<1000xf32>>
// CHECK-NEXT: arith.mulf %[[C]], %[[L]]

// CAPPED-LABEL: func @backward
// CAPPED: math.exp
// CAPPED-NEXT: math.exp
// CAPPED-NEXT: math.exp
// CAPPED-NEXT: offload.load_start %arg0
// CAPPED-NEXT: offload.wait
// CAPPED-NEXT: arith.mulf

// REPORT: load starts before (backward op #)
// Forward: 3 x 8 us; backward: 3 x 8 us and the mulf, 12 us (8000 B read,
// 4000 B written). Peak: four 4000-byte tensors (15.6 KiB) either way.
// REPORT: 1  math.exp {{ *}}tensor<1000xf32> {{ *}}3.9 KiB  #1 math.sin {{ *}}#5 arith.mulf {{ *}}#3 math.exp {{ *}}0.0 us
// REPORT: predicted (h100-pcie5): moved 3.9 KiB to host and 3.9 KiB back; peak device memory 15.6 KiB -> 15.6 KiB; step 60.0 us -> 60.0 us (exposed copies 0.0 us)

// SYNC: 1  math.exp {{ *}}tensor<1000xf32> {{ *}}3.9 KiB  #1 math.sin {{ *}}#4 arith.mulf {{ *}}#4 arith.mulf {{ *}}4.0 us
// SYNC: step 60.0 us -> 64.0 us (exposed copies 4.0 us)

// BAD: error: offload-schedule-copies: cannot parse max-inflight-bytes='lots' as a byte size

func.func @forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32, #offload.host>)
    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1000xf32>
  %y = math.sin %e : tensor<1000xf32>
  %h = offload.offload_to_cpu %e : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  %z = math.sin %y : tensor<1000xf32>
  return %z, %h : tensor<1000xf32>, tensor<1000xf32, #offload.host>
}
func.func @backward(%s: tensor<1000xf32, #offload.host>, %g: tensor<1000xf32>) -> tensor<1000xf32> {
  %a = math.exp %g : tensor<1000xf32>
  %b = math.exp %a : tensor<1000xf32>
  %c = math.exp %b : tensor<1000xf32>
  %l = offload.load_to_gpu %s : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %r = arith.mulf %c, %l : tensor<1000xf32>
  return %r : tensor<1000xf32>
}

// -----

// The offload of %e (4 us on the link, issued at 16 us) is done before the
// op starting at 24 us: its wait, the point where a framework's allocator
// gets the device buffer back, moves up there instead of the return.
// CHECK-LABEL: func @forward
// CHECK: %[[E:.*]] = math.exp
// CHECK-NEXT: %[[Y:.*]] = math.sin %[[E]]
// CHECK-NEXT: %[[F:.*]] = offload.offload_start %[[E]]
// CHECK-NEXT: %[[Z:.*]] = math.sin %[[Y]]
// CHECK-NEXT: %[[H:.*]] = offload.wait %[[F]]
// CHECK-NEXT: %[[W:.*]] = math.sin %[[Z]]
// CHECK-NEXT: return %[[W]], %[[H]]
func.func @forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32, #offload.host>)
    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1000xf32>
  %y = math.sin %e : tensor<1000xf32>
  %h = offload.offload_to_cpu %e : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  %z = math.sin %y : tensor<1000xf32>
  %w = math.sin %z : tensor<1000xf32>
  return %w, %h : tensor<1000xf32>, tensor<1000xf32, #offload.host>
}
func.func @backward(%s: tensor<1000xf32, #offload.host>, %g: tensor<1000xf32>) -> tensor<1000xf32> {
  %l = offload.load_to_gpu %s : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %r = arith.mulf %g, %l : tensor<1000xf32>
  return %r : tensor<1000xf32>
}
