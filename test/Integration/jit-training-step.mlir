// A small training step, JIT-compiled and run twice on the host-simulation
// backend of offload_rt: once as is, once with its saved activation offloaded
// and loaded back. Both runs must print the same values.
//
// RUN: offload-opt %s %{to-llvm} | %mlir_runner | sed -e 's/base@ = 0x[0-9a-f]*//' > %t.plain
// RUN: offload-opt %s --offload-activations="plan=all schedule=false min-bytes=0" %{to-llvm} > %t.offloaded.mlir
// RUN: FileCheck %s --check-prefix=LOWERED < %t.offloaded.mlir
// RUN: env OFFLOAD_RT_SIM_LATENCY_US=200 %mlir_runner < %t.offloaded.mlir | sed -e 's/base@ = 0x[0-9a-f]*//' > %t.offloaded
// RUN: diff %t.plain %t.offloaded
// RUN: FileCheck %s < %t.offloaded
// The scheduled form: split copies, load started ahead of its wait.
// RUN: offload-opt %s --offload-activations="plan=all min-bytes=0 schedule=true" %{to-llvm} > %t.scheduled.mlir
// RUN: FileCheck %s --check-prefix=SCHEDULED < %t.scheduled.mlir
// RUN: env OFFLOAD_RT_SIM_LATENCY_US=200 %mlir_runner < %t.scheduled.mlir | sed -e 's/base@ = 0x[0-9a-f]*//' > %t.scheduled
// RUN: diff %t.plain %t.scheduled

// LOWERED-LABEL: llvm.func @jit_training_step_forward
// LOWERED: %[[S:.*]] = llvm.call @offload_rt_mlir_compute_stream()
// LOWERED-NEXT: %[[H:.*]] = llvm.call @offload_rt_mlir_offload_start(%{{.*}}, %{{.*}}, %[[S]])
// LOWERED-NEXT: llvm.call @offload_rt_mlir_host_data(%[[H]])
// LOWERED-LABEL: llvm.func @jit_training_step_backward
// LOWERED: %[[S2:.*]] = llvm.call @offload_rt_mlir_compute_stream()
// LOWERED-NEXT: %[[T:.*]] = llvm.call @offload_rt_mlir_load_start(%{{.*}}, %{{.*}}, %[[S2]])
// LOWERED-NEXT: llvm.call @offload_rt_mlir_wait(%[[T]], %[[S2]])

// The forward output tanh(x @ w), then the gradient (1 - tanh^2) * 0.5.
// SCHEDULED-LABEL: llvm.func @jit_training_step_backward
// SCHEDULED: %[[S:.*]] = llvm.call @offload_rt_mlir_compute_stream()
// SCHEDULED-NEXT: %[[T:.*]] = llvm.call @offload_rt_mlir_load_start(%{{.*}}, %{{.*}}, %[[S]])
// SCHEDULED: llvm.call @offload_rt_mlir_wait(%[[T]], %{{.*}})

// CHECK: rank = 2 offset = 0 sizes = [4, 4] strides = [4, 1] data =
// CHECK-NEXT: {{\[\[}}0.421899,   -0.462117,   0.50052,   -0.53705],
// CHECK: rank = 2 offset = 0 sizes = [4, 4] strides = [4, 1] data =
// CHECK-NEXT: {{\[\[}}0.411001,   0.393224,   0.37474,   0.355789],
// CHECK-NEXT: [0.206804,   0.168365,   0.135515,   0.108076],

func.func @jit_training_step_forward(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>)
    attributes {offload.backward = @jit_training_step_backward, offload.num_outputs = 1 : i64} {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<4x4xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<4x4xf32>) -> tensor<4x4xf32>
  %h = linalg.matmul ins(%x, %w : tensor<4x4xf32>, tensor<4x4xf32>) outs(%acc : tensor<4x4xf32>) -> tensor<4x4xf32>
  %a = math.tanh %h : tensor<4x4xf32>
  return %a, %h : tensor<4x4xf32>, tensor<4x4xf32>
}

// d/dh tanh(h) = 1 - tanh(h)^2, times the incoming gradient.
func.func @jit_training_step_backward(%h: tensor<4x4xf32>, %g: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %one = arith.constant dense<1.0> : tensor<4x4xf32>
  %t = math.tanh %h : tensor<4x4xf32>
  %t2 = arith.mulf %t, %t : tensor<4x4xf32>
  %d = arith.subf %one, %t2 : tensor<4x4xf32>
  %r = arith.mulf %d, %g : tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}

func.func private @printMemrefF32(tensor<*xf32>)

func.func @main() {
  %x = arith.constant dense<[[0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8],
                             [0.9, 1.0, 1.1, 1.2], [1.3, 1.4, 1.5, 1.6]]> : tensor<4x4xf32>
  %w = arith.constant dense<[[0.05, -0.1, 0.15, -0.2], [0.25, -0.3, 0.35, -0.4],
                             [0.45, -0.5, 0.55, -0.6], [0.65, -0.7, 0.75, -0.8]]> : tensor<4x4xf32>
  %g = arith.constant dense<0.5> : tensor<4x4xf32>
  %out, %saved = call @jit_training_step_forward(%x, %w) : (tensor<4x4xf32>, tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>)
  %grad = call @jit_training_step_backward(%saved, %g) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %o = tensor.cast %out : tensor<4x4xf32> to tensor<*xf32>
  call @printMemrefF32(%o) : (tensor<*xf32>) -> ()
  %p = tensor.cast %grad : tensor<4x4xf32> to tensor<*xf32>
  call @printMemrefF32(%p) : (tensor<*xf32>) -> ()
  return
}
