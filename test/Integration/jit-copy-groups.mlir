// Copy groups run: the step is lowered with coalesce-below, so forward's two
// saved values, both last read by the same op, leave as one
// offload_group_start, and backward loads them as one load_group_start
// before their first use (max-inflight-bytes=1 keeps both loads at that
// use, where the scheduler would start one of them earlier). Bufferized with buffer deallocation, lowered to
// offload_rt's group calls, and run on the host-simulation backend (and,
// through test/Integration/GPU/, on the H100): the values are those of the
// plain step, both copies went each way, and no device memory is left.
//
// RUN: offload-opt %s %{bufferize} --buffer-deallocation-pipeline %{lower} \
// RUN:   | %mlir_runner > %t.plain
// RUN: offload-opt %s --offload-activations="plan=all min-bytes=0 schedule=true coalesce-below=1MiB max-inflight-bytes=1" > %t.grouped.mlir
// RUN: FileCheck %s --check-prefix=GROUPS < %t.grouped.mlir
// RUN: offload-opt %t.grouped.mlir %{bufferize} --buffer-deallocation-pipeline %{lower} \
// RUN:   | env OFFLOAD_RT_SIM_LATENCY_US=200 %mlir_runner > %t.grouped
// RUN: FileCheck %s --check-prefix=RUNS < %t.grouped
// RUN: grep '^ *\[' %t.plain > %t.plain.values
// RUN: grep '^ *\[' %t.grouped > %t.grouped.values
// RUN: diff %t.plain.values %t.grouped.values

// GROUPS-LABEL: func.func @jit_copy_groups_forward
// GROUPS: offload.offload_group_start {{.*}} : tensor<64x64xf32>, tensor<64x64xf32>
// GROUPS-LABEL: func.func @jit_copy_groups_backward
// GROUPS: offload.load_group_start %arg0, %arg1

// RUNS: copies 2 2
// RUNS: device memory through offload_rt: 0 B in use

func.func @jit_copy_groups_forward(%x: tensor<64x64xf32>, %w: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>)
    attributes {offload.backward = @jit_copy_groups_backward, offload.num_outputs = 1 : i64} {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<64x64xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<64x64xf32>) -> tensor<64x64xf32>
  %h = linalg.matmul ins(%x, %w : tensor<64x64xf32>, tensor<64x64xf32>) outs(%acc : tensor<64x64xf32>) -> tensor<64x64xf32>
  %a = math.tanh %h : tensor<64x64xf32>
  %s = arith.addf %h, %a : tensor<64x64xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 200 : index
  %z = scf.for %i = %c0 to %n step %c1 iter_args(%v = %s) -> tensor<64x64xf32> {
    %t = math.sin %v : tensor<64x64xf32>
    scf.yield %t : tensor<64x64xf32>
  }
  return %z, %h, %a : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
}

func.func @jit_copy_groups_backward(%h: tensor<64x64xf32>, %a: tensor<64x64xf32>, %g: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 200 : index
  // From a constant, which is not writable: a new buffer the step owns
  // (what backward returns must not alias its arguments).
  %one = arith.constant dense<1.0> : tensor<64x64xf32>
  %g0 = arith.subf %one, %g : tensor<64x64xf32>
  %gg = scf.for %i = %c0 to %n step %c1 iter_args(%v = %g0) -> tensor<64x64xf32> {
    %t = math.cos %v : tensor<64x64xf32>
    scf.yield %t : tensor<64x64xf32>
  }
  %p = arith.mulf %h, %a : tensor<64x64xf32>
  %r = arith.mulf %gg, %p : tensor<64x64xf32>
  return %r : tensor<64x64xf32>
}

func.func private @printMemrefF32(tensor<*xf32>)

func.func private @offload_rt_mlir_print_summary()

func.func @step(%x: tensor<64x64xf32>, %w: tensor<64x64xf32>, %g: tensor<64x64xf32>) {
  %out, %h, %a = call @jit_copy_groups_forward(%x, %w) : (tensor<64x64xf32>, tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>)
  %grad = call @jit_copy_groups_backward(%h, %a, %g) : (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %o = tensor.cast %out : tensor<64x64xf32> to tensor<*xf32>
  call @printMemrefF32(%o) : (tensor<*xf32>) -> ()
  %q = tensor.cast %grad : tensor<64x64xf32> to tensor<*xf32>
  call @printMemrefF32(%q) : (tensor<*xf32>) -> ()
  return
}

func.func @main() {
  %x = arith.constant dense<0.03> : tensor<64x64xf32>
  %w = arith.constant dense<-0.02> : tensor<64x64xf32>
  %g = arith.constant dense<0.5> : tensor<64x64xf32>
  call @step(%x, %w, %g) : (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> ()
  call @offload_rt_mlir_print_summary() : () -> ()
  return
}
