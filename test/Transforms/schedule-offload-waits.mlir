// With release=at-wait an offload's wait holds its source until the wait,
// and forward stalls there if the copy is late. offload-schedule-copies
// puts each wait at the copy's predicted end, then lets it go down as far as
// the bytes it keeps live leave the predicted peak where it was: slack for a
// forward that runs faster than predicted. Link and memory at 1 GB/s, no
// fixed costs: the 4000-byte copy of %e is issued at 16 us and ends at 20 us.
// RUN: offload-opt %s -split-input-file -offload-schedule-copies="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 release=at-wait" | FileCheck %s
// RUN: offload-opt %s -split-input-file -offload-schedule-copies="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 release=at-wait" | offload-opt -split-input-file -offload-report="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 release=at-wait" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT
// With release=after-copy the wait holds nothing and stays at the copy's end.
// RUN: offload-opt %s -split-input-file -offload-schedule-copies="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0" | FileCheck %s --check-prefix=AFTER

// The peak is backward's 32000-byte temporary: holding %e to the end of
// forward leaves it where it is, so the wait goes to the return.
// CHECK-LABEL: func.func @forward
// CHECK:         %[[E:.*]] = math.exp
// CHECK:         %[[F:.*]] = offload.offload_start %[[E]]
// CHECK-COUNT-4: math.sin
// CHECK-NEXT:    %[[H:.*]] = offload.wait %[[F]]
// CHECK-NEXT:    return %{{.*}}, %[[H]]
// REPORT: peak device memory 43.0 KiB -> 39.1 KiB; step 68.0 us -> 68.0 us (exposed copies 0.0 us)
// AFTER-LABEL: func.func @forward
// AFTER:         offload.offload_start
// AFTER-NEXT:    math.sin
// AFTER-NEXT:    offload.wait
func.func @forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32, #offload.host>)
    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1000xf32>
  %y = math.sin %e : tensor<1000xf32>
  %h = offload.offload_to_cpu %e : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  %a = math.sin %y : tensor<1000xf32>
  %b = math.sin %a : tensor<1000xf32>
  %c = math.sin %b : tensor<1000xf32>
  %z = math.sin %c : tensor<1000xf32>
  return %z, %h : tensor<1000xf32>, tensor<1000xf32, #offload.host>
}
func.func @backward(%s: tensor<1000xf32, #offload.host>, %g: tensor<1000xf32>) -> tensor<1000xf32> {
  %t = "tensor.empty"() : () -> tensor<8000xf32>
  %a = math.exp %g : tensor<1000xf32>
  %l = offload.load_to_gpu %s : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %r = arith.mulf %a, %l : tensor<1000xf32>
  return %r : tensor<1000xf32>
}

// -----

// Now the peak is forward's temporary %t: the wait goes down to it, not
// past it (%e live there would raise the peak by its 4000 bytes).
// CHECK-LABEL: func.func @forward
// CHECK:         offload.offload_start
// CHECK-NEXT:    math.sin
// CHECK-NEXT:    math.sin
// CHECK-NEXT:    offload.wait
// CHECK-NEXT:    tensor.empty
// REPORT: peak device memory 43.0 KiB -> 39.1 KiB; step 68.0 us -> 68.0 us (exposed copies 0.0 us)
// AFTER-LABEL: func.func @forward
// AFTER:         offload.offload_start
// AFTER-NEXT:    math.sin
// AFTER-NEXT:    offload.wait
func.func @forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32, #offload.host>)
    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1000xf32>
  %y = math.sin %e : tensor<1000xf32>
  %h = offload.offload_to_cpu %e : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  %a = math.sin %y : tensor<1000xf32>
  %b = math.sin %a : tensor<1000xf32>
  %t = "tensor.empty"() : () -> tensor<8000xf32>
  %c = math.sin %b : tensor<1000xf32>
  %z = math.sin %c : tensor<1000xf32>
  return %z, %h : tensor<1000xf32>, tensor<1000xf32, #offload.host>
}
func.func @backward(%s: tensor<1000xf32, #offload.host>, %g: tensor<1000xf32>) -> tensor<1000xf32> {
  %a = math.exp %g : tensor<1000xf32>
  %l = offload.load_to_gpu %s : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %r = arith.mulf %a, %l : tensor<1000xf32>
  return %r : tensor<1000xf32>
}
