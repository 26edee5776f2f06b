// What the cost model assumes about the code that runs the step: where an
// offloaded value's memory comes back (`release`) and whether memory-bound
// ops are fused (`fuse-memory-bound`). Link and memory at 1 GB/s, no fixed
// costs: each math op on tensor<1000xf32> takes 8 us unfused (4000 B read,
// 4000 B written), a copy of one value 4 us.
// RUN: offload-opt %s -split-input-file -offload-report="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0" -o /dev/null 2>&1 | FileCheck %s --check-prefix=AFTER
// RUN: offload-opt %s -split-input-file \
// RUN:   -offload-report="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 release=at-wait" -o /dev/null 2>&1 | \
// RUN:   FileCheck %s --check-prefix=ATWAIT
// RUN: offload-opt %s -split-input-file \
// RUN:   -offload-report="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 fuse-memory-bound=true" -o /dev/null \
// RUN:   2>&1 | FileCheck %s --check-prefix=FUSED
// RUN: offload-opt %s -split-input-file \
// RUN:   -offload-report="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 copy-interference=0.5 f32-tflops=0.001" \
// RUN:   -o /dev/null 2>&1 | FileCheck %s --check-prefix=INTERF
// RUN: not offload-opt %s -split-input-file -offload-report="release=later" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD

// The synchronous offload of %e is issued at 16 us and takes 4 us. With
// release=after-copy compute never waits for it (only the load is exposed,
// 4 us); with release=at-wait compute waits for it where it is issued.
// AFTER-LABEL: offload report: @release_and_fusion_forward -> @release_and_fusion_backward
// AFTER: step 60.0 us -> 64.0 us (exposed copies 4.0 us)
// ATWAIT-LABEL: offload report: @release_and_fusion_forward -> @release_and_fusion_backward
// ATWAIT: step 60.0 us -> 68.0 us (exposed copies 8.0 us)
// copy-interference=0.5: the offload's 4 us transfer runs beside the second
// sin (8 us), which takes 0.5 x 4 us longer; the synchronous load overlaps
// no kernel (compute waits for it), so it slows none.
// INTERF-LABEL: offload report: @release_and_fusion_forward -> @release_and_fusion_backward
// INTERF: step 60.0 us -> 66.0 us (exposed copies 4.0 us, kernels slowed by copies 2.0 us)
// Fused: forward reads %x and writes %e and %z (12 us); the first sin
// reads %e as it is written, and %y never reaches memory. Backward reads %g
// and the loaded value and writes %r (12 us); %a, %b, %c never reach
// memory. The peak loses those buffers.
// FUSED-LABEL: offload report: @release_and_fusion_forward -> @release_and_fusion_backward
// FUSED: peak device memory 11.7 KiB -> 11.7 KiB; step 24.0 us -> 28.0 us (exposed copies 4.0 us)
// BAD: for the --release option: 'later' is not one of after-copy, at-wait
func.func @release_and_fusion_forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32, #offload.host>)
    attributes {offload.backward = @release_and_fusion_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1000xf32>
  %y = math.sin %e : tensor<1000xf32>
  %h = offload.offload_to_cpu %e : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  %z = math.sin %y : tensor<1000xf32>
  return %z, %h : tensor<1000xf32>, tensor<1000xf32, #offload.host>
}
func.func @release_and_fusion_backward(%s: tensor<1000xf32, #offload.host>, %g: tensor<1000xf32>) -> tensor<1000xf32> {
  %a = math.exp %g : tensor<1000xf32>
  %b = math.exp %a : tensor<1000xf32>
  %c = math.exp %b : tensor<1000xf32>
  %l = offload.load_to_gpu %s : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %r = arith.mulf %c, %l : tensor<1000xf32>
  return %r : tensor<1000xf32>
}

// -----

// Copy interference slows memory-bound ops only. The offload of %e (4 us)
// runs beside the matmul, which at 1 GFLOP/s is compute-bound (20000 flops:
// 20 us; its 8400 B would take 8.4 us): it is not slowed, and the step only
// grows by the exposed synchronous load. (Beside the memory-bound sin of
// the first case the same transfer added 2 us.)
// INTERF-LABEL: offload report: @interference_spares_compute_bound_ops_forward -> @interference_spares_compute_bound_ops_backward
// INTERF: step 36.0 us -> 40.0 us (exposed copies 4.0 us)
func.func @interference_spares_compute_bound_ops_forward(%x: tensor<1000xf32>, %w: tensor<10x100xf32>, %v: tensor<100x10xf32>)
    -> (tensor<10x10xf32>, tensor<1000xf32, #offload.host>)
    attributes {offload.backward = @interference_spares_compute_bound_ops_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1000xf32>
  %h = offload.offload_to_cpu %e : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  %m = trace.op "aten.mm.default"(%w, %v) : (tensor<10x100xf32>, tensor<100x10xf32>) -> tensor<10x10xf32>
  return %m, %h : tensor<10x10xf32>, tensor<1000xf32, #offload.host>
}
func.func @interference_spares_compute_bound_ops_backward(%s: tensor<1000xf32, #offload.host>, %g: tensor<10x10xf32>) -> tensor<1000xf32> {
  %l = offload.load_to_gpu %s : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %r = math.exp %l : tensor<1000xf32>
  return %r : tensor<1000xf32>
}

// -----

// A split offload issued after the last forward op (at 64 us, 16 us on the
// link) and waited at the return. With release=at-wait forward waits 16 us
// for it there, then the synchronous load is exposed (16 us); with
// release=after-copy it runs on under backward's first op, and only the load
// is exposed.
// AFTER-LABEL: offload report: @split_offload_waited_at_return_forward -> @split_offload_waited_at_return_backward
// AFTER: step 144.0 us -> 160.0 us (exposed copies 16.0 us)
// ATWAIT-LABEL: offload report: @split_offload_waited_at_return_forward -> @split_offload_waited_at_return_backward
// ATWAIT: step 144.0 us -> 176.0 us (exposed copies 32.0 us)
func.func @split_offload_waited_at_return_forward(%x: tensor<4000xf32>) -> (tensor<4000xf32>, tensor<4000xf32, #offload.host>)
    attributes {offload.backward = @split_offload_waited_at_return_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<4000xf32>
  %z = math.sin %e : tensor<4000xf32>
  %f = offload.offload_start %e : tensor<4000xf32> -> !offload.future<tensor<4000xf32, #offload.host>>
  %h = offload.wait %f : !offload.future<tensor<4000xf32, #offload.host>>
  return %z, %h : tensor<4000xf32>, tensor<4000xf32, #offload.host>
}
func.func @split_offload_waited_at_return_backward(%s: tensor<4000xf32, #offload.host>, %g: tensor<4000xf32>) -> tensor<4000xf32> {
  %a = math.exp %g : tensor<4000xf32>
  %l = offload.load_to_gpu %s : tensor<4000xf32, #offload.host> -> tensor<4000xf32>
  %r = arith.mulf %a, %l : tensor<4000xf32>
  return %r : tensor<4000xf32>
}

// -----

// Fusion stops at compute-bound ops: the matmul reads %s from memory, so
// the sin writes it (40 us), reading %e as the exp writes it (exp: 80 us);
// the matmul (memory bound here: 120 us) and the tanh after it (80 us) are
// not fused with it. Unfused the sin would also read %e (80 us). Backward:
// 120 us either way.
// AFTER-LABEL: offload report: @fusion_stops_at_compute_bound_ops_forward -> @fusion_stops_at_compute_bound_ops_backward
// AFTER: step 480.0 us -> 480.0 us
// FUSED-LABEL: offload report: @fusion_stops_at_compute_bound_ops_forward -> @fusion_stops_at_compute_bound_ops_backward
// FUSED: step 440.0 us -> 440.0 us
func.func @fusion_stops_at_compute_bound_ops_forward(%x: tensor<100x100xf32>, %w: tensor<100x100xf32>) -> (tensor<100x100xf32>, tensor<100x100xf32>)
    attributes {offload.backward = @fusion_stops_at_compute_bound_ops_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<100x100xf32>
  %s = math.sin %e : tensor<100x100xf32>
  %m = trace.op "aten.mm.default"(%s, %w) : (tensor<100x100xf32>, tensor<100x100xf32>) -> tensor<100x100xf32>
  %t = math.tanh %m : tensor<100x100xf32>
  return %t, %e : tensor<100x100xf32>, tensor<100x100xf32>
}
func.func @fusion_stops_at_compute_bound_ops_backward(%e: tensor<100x100xf32>, %g: tensor<100x100xf32>) -> tensor<100x100xf32> {
  %r = arith.mulf %g, %e : tensor<100x100xf32>
  return %r : tensor<100x100xf32>
}

// -----

// A synchronous load issued while its offload is still copying. Forward
// ends at 40 us (20 us per op), where %e (16000 B) starts its 16 us copy to
// the host; backward's first op loads it back. The load allocates its
// 16000 B when it is issued, at 40 us, and then waits for the offload and
// its own copy (until 72 us). With release=after-copy %e is released only
// at 56 us, so %x, %e, the load's buffer and %g (backward's argument, there
// from its start) are live at once: 40000 B. With release=at-wait forward
// waits for the copy where it is issued, and %e is gone before backward
// starts: the peak is forward's, 28000 B.
// AFTER-LABEL: offload report: @load_while_its_offload_copies_forward -> @load_while_its_offload_copies_backward
// AFTER: peak device memory 27.3 KiB -> 39.1 KiB; step 72.0 us -> 104.0 us (exposed copies 32.0 us)
// ATWAIT-LABEL: offload report: @load_while_its_offload_copies_forward -> @load_while_its_offload_copies_backward
// ATWAIT: peak device memory 27.3 KiB -> 27.3 KiB; step 72.0 us -> 104.0 us (exposed copies 32.0 us)
func.func @load_while_its_offload_copies_forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<4000xf32, #offload.host>)
    attributes {offload.backward = @load_while_its_offload_copies_backward, offload.num_outputs = 1 : i64} {
  %e = trace.op "aten.repeat.default"(%x) {node = "repeat"} : (tensor<1000xf32>) -> tensor<4000xf32>
  %z = trace.op "aten.sum.dim_IntList"(%e) {node = "sum"} : (tensor<4000xf32>) -> tensor<1000xf32>
  %h = offload.offload_to_cpu %e : tensor<4000xf32> -> tensor<4000xf32, #offload.host>
  return %z, %h : tensor<1000xf32>, tensor<4000xf32, #offload.host>
}
func.func @load_while_its_offload_copies_backward(%s: tensor<4000xf32, #offload.host>, %g: tensor<1000xf32>) -> tensor<1000xf32> {
  %l = offload.load_to_gpu %s : tensor<4000xf32, #offload.host> -> tensor<4000xf32>
  %r = trace.op "aten.sum.dim_IntList"(%l) {node = "sum"} : (tensor<4000xf32>) -> tensor<1000xf32>
  %o = arith.mulf %r, %g : tensor<1000xf32>
  return %o : tensor<1000xf32>
}
