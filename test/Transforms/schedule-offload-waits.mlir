// With release=at-wait an offload's wait holds its source until the wait,
// and forward stalls there if the copy is late. offload-schedule-copies
// puts each wait at the copy's predicted end, then lets it go down as far
// as the bytes it keeps live leave the predicted peak where it was, up to
// the end of forward: slack for a forward that runs faster, or a link that
// runs slower, than predicted. Link and memory at 1 GB/s, no fixed costs:
// %p takes 320 us, each op on 1000 floats 8 us; the 4000-byte copy of %e is
// issued at 344 us and ends at 348 us.
// RUN: offload-opt %s -split-input-file -offload-schedule-copies="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 release=at-wait" | FileCheck %s
// RUN: offload-opt %s -split-input-file \
// RUN:   -offload-schedule-copies="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 release=at-wait" | offload-opt \
// RUN:   -split-input-file -offload-report="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 release=at-wait" -o \
// RUN:   /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT
// With release=after-copy the wait holds nothing and stays at the copy's end.
// RUN: offload-opt %s -split-input-file -offload-schedule-copies="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0" | FileCheck %s --check-prefix=AFTER

// Holding %e to the end of forward leaves the peak (%p's) where it is: the
// wait goes from before %b (352 us) to the end.
// CHECK-LABEL: func.func @wait_sinks_while_bytes_allow_forward
// CHECK:         %[[F:.*]] = offload.offload_start
// CHECK-NEXT:    math.sin
// CHECK-NEXT:    math.sin
// CHECK-NEXT:    math.sin
// CHECK-NEXT:    math.sin
// CHECK-NEXT:    math.sin
// CHECK-NEXT:    offload.wait %[[F]]
// CHECK-NEXT:    return
// REPORT-LABEL: offload report: @wait_sinks_while_bytes_allow_forward -> @wait_sinks_while_bytes_allow_backward
// REPORT: exposed copies 0.0 us
// AFTER-LABEL: func.func @wait_sinks_while_bytes_allow_forward
// AFTER:         offload.offload_start
// AFTER-NEXT:    math.sin
// AFTER-NEXT:    offload.wait
func.func @wait_sinks_while_bytes_allow_forward(%w: tensor<40000xf32>, %x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<40000xf32>, tensor<1000xf32, #offload.host>)
    attributes {offload.backward = @wait_sinks_while_bytes_allow_backward, offload.num_outputs = 2 : i64} {
  %p = math.exp %w : tensor<40000xf32>
  %e = math.exp %x : tensor<1000xf32>
  %y = math.sin %e : tensor<1000xf32>
  %h = offload.offload_to_cpu %e : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  %a = math.sin %y : tensor<1000xf32>
  %b = math.sin %a : tensor<1000xf32>
  %c = math.sin %b : tensor<1000xf32>
  %d = math.sin %c : tensor<1000xf32>
  %z = math.sin %d : tensor<1000xf32>
  return %z, %p, %h : tensor<1000xf32>, tensor<40000xf32>, tensor<1000xf32, #offload.host>
}
func.func @wait_sinks_while_bytes_allow_backward(%s: tensor<1000xf32, #offload.host>, %g: tensor<1000xf32>) -> tensor<1000xf32> {
  %a = math.exp %g : tensor<1000xf32>
  %l = offload.load_to_gpu %s : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %r = arith.mulf %a, %l : tensor<1000xf32>
  return %r : tensor<1000xf32>
}

// -----

// Now the peak is the temporary %t, before the end of forward: the wait
// goes down to it, not past it (%e live there would raise the peak by its 4000
// bytes).
// CHECK-LABEL: func.func @wait_stops_at_temporary_peak_forward
// CHECK:         %[[F:.*]] = offload.offload_start
// CHECK-NEXT:    math.sin
// CHECK-NEXT:    math.sin
// CHECK-NEXT:    offload.wait %[[F]]
// CHECK-NEXT:    tensor.empty
// REPORT-LABEL: offload report: @wait_stops_at_temporary_peak_forward -> @wait_stops_at_temporary_peak_backward
// REPORT: exposed copies 0.0 us
// AFTER-LABEL: func.func @wait_stops_at_temporary_peak_forward
// AFTER:         offload.offload_start
// AFTER-NEXT:    math.sin
// AFTER-NEXT:    offload.wait
func.func @wait_stops_at_temporary_peak_forward(%w: tensor<40000xf32>, %x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<40000xf32>, tensor<1000xf32, #offload.host>)
    attributes {offload.backward = @wait_stops_at_temporary_peak_backward, offload.num_outputs = 2 : i64} {
  %p = math.exp %w : tensor<40000xf32>
  %e = math.exp %x : tensor<1000xf32>
  %y = math.sin %e : tensor<1000xf32>
  %h = offload.offload_to_cpu %e : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  %a = math.sin %y : tensor<1000xf32>
  %b = math.sin %a : tensor<1000xf32>
  %t = "tensor.empty"() : () -> tensor<80000xf32>
  %c = math.sin %b : tensor<1000xf32>
  %d = math.sin %c : tensor<1000xf32>
  %z = math.sin %d : tensor<1000xf32>
  return %z, %p, %h : tensor<1000xf32>, tensor<40000xf32>, tensor<1000xf32, #offload.host>
}
func.func @wait_stops_at_temporary_peak_backward(%s: tensor<1000xf32, #offload.host>, %g: tensor<1000xf32>) -> tensor<1000xf32> {
  %a = math.exp %g : tensor<1000xf32>
  %l = offload.load_to_gpu %s : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %r = arith.mulf %a, %l : tensor<1000xf32>
  return %r : tensor<1000xf32>
}
