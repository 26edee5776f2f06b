// The offloaded source's lifetime under buffer deallocation: the training
// step of jit-training-step.mlir, bufferized, then given its deallocations by
// -buffer-deallocation-pipeline, lowered and JIT-run on the host-simulation
// backend with a slow copy link (the copy reads its source 500 us after it
// starts). The source of the offload is the forward's matmul buffer, dead
// after the offload: the deallocation must not free it on the compute stream
// while the device-to-host copy still reads it (the sim backend poisons freed
// device memory), and must not free it twice (the sim backend refuses a
// second free). The offload consumes it: the runtime frees it once the copy
// is done, and its statistics count the release.
//
// RUN: offload-opt %s %{bufferize} --buffer-deallocation-pipeline %{lower} \
// RUN:   | %mlir_runner > %t.plain
// RUN: FileCheck %s --check-prefixes=CHECK,PLAIN < %t.plain
// RUN: offload-opt %s --offload-activations="plan=all min-bytes=0" %{bufferize} \
// RUN:   --buffer-deallocation-pipeline %{lower} > %t.offloaded.mlir
// RUN: FileCheck %s --check-prefix=LOWERED < %t.offloaded.mlir
// RUN: env OFFLOAD_RT_SIM_LATENCY_US=500 %mlir_runner < %t.offloaded.mlir \
// RUN:   > %t.offloaded
// RUN: FileCheck %s --check-prefixes=CHECK,OFFLOADED < %t.offloaded
//
// A pinned pool too small for the copy: the runtime keeps the data on the
// device and the load copies from the source's device memory, which must
// therefore stay alive until the host buffer is freed (by the caller's
// deallocation, after backward).
// RUN: env OFFLOAD_RT_SIM_LATENCY_US=500 OFFLOAD_RT_POOL_BYTES=0 \
// RUN:   OFFLOAD_RT_POOL_GROWABLE=0 %mlir_runner < %t.offloaded.mlir > %t.kept
// RUN: FileCheck %s --check-prefixes=CHECK,KEPT < %t.kept

// The source goes to the runtime right after its copy starts, and nothing
// else frees it.
// LOWERED-LABEL: llvm.func @jit_source_lifetime_forward
// LOWERED: %[[H:.*]] = llvm.call @offload_rt_mlir_offload_start(%[[P:.*]], %{{.*}}, %{{.*}})
// LOWERED: llvm.call @offload_rt_mlir_release_source(%[[H]], %{{.*}}, %[[P]])
// LOWERED-NOT: llvm.call @_mlir_memref_to_llvm_free
// LOWERED: llvm.return
// LOWERED-LABEL: llvm.func @jit_source_lifetime_backward

// CHECK: rank = 2 offset = 0 sizes = [4, 4] strides = [4, 1] data =
// CHECK-NEXT: {{\[\[}}0.421899,   -0.462117,   0.50052,   -0.53705],
// CHECK: rank = 2 offset = 0 sizes = [4, 4] strides = [4, 1] data =
// CHECK-NEXT: {{\[\[}}0.411001,   0.393224,   0.37474,   0.355789],
// CHECK-NEXT: [0.206804,   0.168365,   0.135515,   0.108076],

// PLAIN: copies 0 0
// PLAIN: device releases: 0
// OFFLOADED: copies 1 1
// OFFLOADED: fallbacks (kept on device): 0, {{.*}} device releases: 1
// KEPT: copies 0 0
// KEPT: fallbacks (kept on device): 1, {{.*}} device releases: 1

func.func @jit_source_lifetime_forward(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>)
    attributes {offload.backward = @jit_source_lifetime_backward, offload.num_outputs = 1 : i64} {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<4x4xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<4x4xf32>) -> tensor<4x4xf32>
  %h = linalg.matmul ins(%x, %w : tensor<4x4xf32>, tensor<4x4xf32>) outs(%acc : tensor<4x4xf32>) -> tensor<4x4xf32>
  %a = math.tanh %h : tensor<4x4xf32>
  return %a, %h : tensor<4x4xf32>, tensor<4x4xf32>
}

// d/dh tanh(h) = 1 - tanh(h)^2, times the incoming gradient. Its first
// allocation is the size of the offloaded source: reusing the source's block
// while the copy reads it would show here.
func.func @jit_source_lifetime_backward(%h: tensor<4x4xf32>, %g: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %one = arith.constant dense<1.0> : tensor<4x4xf32>
  %t = math.tanh %h : tensor<4x4xf32>
  %t2 = arith.mulf %t, %t : tensor<4x4xf32>
  %d = arith.subf %one, %t2 : tensor<4x4xf32>
  %r = arith.mulf %d, %g : tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}

func.func private @printMemrefF32(tensor<*xf32>)

func.func private @offload_rt_mlir_print_summary()

func.func @step(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>, %g: tensor<4x4xf32>) {
  %out, %saved = call @jit_source_lifetime_forward(%x, %w) : (tensor<4x4xf32>, tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>)
  %grad = call @jit_source_lifetime_backward(%saved, %g) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %o = tensor.cast %out : tensor<4x4xf32> to tensor<*xf32>
  call @printMemrefF32(%o) : (tensor<*xf32>) -> ()
  %p = tensor.cast %grad : tensor<4x4xf32> to tensor<*xf32>
  call @printMemrefF32(%p) : (tensor<*xf32>) -> ()
  return
}

// The statistics once the step, and its deallocations, are done.
func.func @main() {
  %x = arith.constant dense<[[0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8],
                             [0.9, 1.0, 1.1, 1.2], [1.3, 1.4, 1.5, 1.6]]> : tensor<4x4xf32>
  %w = arith.constant dense<[[0.05, -0.1, 0.15, -0.2], [0.25, -0.3, 0.35, -0.4],
                             [0.45, -0.5, 0.55, -0.6], [0.65, -0.7, 0.75, -0.8]]> : tensor<4x4xf32>
  %g = arith.constant dense<0.5> : tensor<4x4xf32>
  call @step(%x, %w, %g) : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> ()
  call @offload_rt_mlir_print_summary() : () -> ()
  return
}
