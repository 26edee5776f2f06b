// With early-offloads (and release=at-wait, where an offload's wait holds its
// value) each offload starts right after its value is computed, not after
// its last forward use: the copy reads the value beside the ops that still
// read it, and the D2H stream starts sooner. The wait stays below the last
// use. Link and memory at 1 GB/s, no fixed costs: each op on 1000 floats
// takes 8 us, each copy of one 4 us.
// RUN: offload-opt %s -split-input-file -offload-schedule-copies="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 release=at-wait early-offloads=true" | FileCheck %s
// RUN: offload-opt %s -split-input-file -offload-schedule-copies="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 release=at-wait" | FileCheck %s --check-prefix=LATE
// With release=after-copy the start would free the value once its copy
// ends, while the ops below still read it; without scheduled copies every
// offload is synchronous where it is.
// RUN: not offload-opt %s -split-input-file -offload-schedule-copies="early-offloads=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=AFTER-COPY
// RUN: not offload-opt %s -split-input-file --offload-activations="early-offloads=true schedule=false release=at-wait" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SYNC
// RUN: not offload-opt %s -split-input-file --offload-activations="early-offloads=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=AFTER-COPY-PIPELINE
// AFTER-COPY: error: 'early-offloads' needs release=at-wait
// SYNC: error: option early-offloads needs schedule=true
// AFTER-COPY-PIPELINE: error: option early-offloads needs release=at-wait

// The copy of %e starts right after exp, above the three ops that still
// read %e; its wait goes to the end of forward (nothing there raises the
// peak).
// CHECK-LABEL: func.func @forward
// CHECK:         %[[E:.*]] = math.exp
// CHECK-NEXT:    %[[F:.*]] = offload.offload_start %[[E]]
// CHECK-NEXT:    math.sin %[[E]]
// CHECK-NEXT:    math.sin
// CHECK-NEXT:    arith.addf {{.*}}, %[[E]]
// CHECK-NEXT:    math.sin
// CHECK-NEXT:    math.sin
// CHECK-NEXT:    offload.wait %[[F]]
// CHECK-NEXT:    return
// LATE-LABEL: func.func @forward
// LATE:         arith.addf
// LATE-NEXT:    offload.offload_start
func.func @forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32, #offload.host>)
    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1000xf32>
  %a = math.sin %e : tensor<1000xf32>
  %b = math.sin %a : tensor<1000xf32>
  %c = arith.addf %b, %e : tensor<1000xf32>
  %h = offload.offload_to_cpu %e : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  %d = math.sin %c : tensor<1000xf32>
  %z = math.sin %d : tensor<1000xf32>
  return %z, %h : tensor<1000xf32>, tensor<1000xf32, #offload.host>
}
func.func @backward(%s: tensor<1000xf32, #offload.host>, %g: tensor<1000xf32>) -> tensor<1000xf32> {
  %a = math.exp %g : tensor<1000xf32>
  %l = offload.load_to_gpu %s : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %r = arith.mulf %a, %l : tensor<1000xf32>
  return %r : tensor<1000xf32>
}

// -----

// The copy ends (12 us) before %a ends, but %e is read until the add: the
// wait goes below the add, never above it, and no further, since the
// temporary right after it is the peak.
// CHECK-LABEL: func.func @forward
// CHECK:         %[[E:.*]] = math.exp %arg1
// CHECK-NEXT:    %[[F:.*]] = offload.offload_start %[[E]]
// CHECK-NEXT:    math.sin %[[E]]
// CHECK-NEXT:    math.sin
// CHECK-NEXT:    arith.addf {{.*}}, %[[E]]
// CHECK-NEXT:    offload.wait %[[F]]
// CHECK-NEXT:    tensor.empty
func.func @forward(%w: tensor<40000xf32>, %x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<40000xf32>, tensor<1000xf32, #offload.host>)
    attributes {offload.backward = @backward, offload.num_outputs = 2 : i64} {
  %p = math.exp %w : tensor<40000xf32>
  %e = math.exp %x : tensor<1000xf32>
  %a = math.sin %e : tensor<1000xf32>
  %b = math.sin %a : tensor<1000xf32>
  %c = arith.addf %b, %e : tensor<1000xf32>
  %h = offload.offload_to_cpu %e : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  %t = "tensor.empty"() : () -> tensor<80000xf32>
  %d = math.sin %c : tensor<1000xf32>
  %z = math.sin %d : tensor<1000xf32>
  return %z, %p, %h : tensor<1000xf32>, tensor<40000xf32>, tensor<1000xf32, #offload.host>
}
func.func @backward(%s: tensor<1000xf32, #offload.host>, %g: tensor<1000xf32>) -> tensor<1000xf32> {
  %a = math.exp %g : tensor<1000xf32>
  %l = offload.load_to_gpu %s : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %r = arith.mulf %a, %l : tensor<1000xf32>
  return %r : tensor<1000xf32>
}
