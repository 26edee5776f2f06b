// One storage, one copy, run: the two halves of one matmul result are saved
// for backward as two slices. The pipeline offloads the matmul result once,
// loads it once and re-applies both slices to the loaded buffer (strided
// subviews after bufferization). JIT-run on the host-simulation backend with
// a slow copy link, the step prints the same values as without offloading,
// and the runtime counts one copy each way, not two.
//
// RUN: offload-opt %s %{to-llvm} | %mlir_runner > %t.plain
// RUN: FileCheck %s --check-prefixes=CHECK,PLAIN < %t.plain
// RUN: offload-opt %s --offload-activations="plan=all schedule=false min-bytes=0" > %t.offloaded.mlir
// RUN: FileCheck %s --check-prefix=IR < %t.offloaded.mlir
// RUN: offload-opt %t.offloaded.mlir %{to-llvm} \
// RUN:   | env OFFLOAD_RT_SIM_LATENCY_US=200 %mlir_runner > %t.offloaded
// RUN: FileCheck %s --check-prefixes=CHECK,OFFLOADED < %t.offloaded
// RUN: offload-opt %s --offload-activations="plan=all min-bytes=0 schedule=true" %{to-llvm} \
// RUN:   | env OFFLOAD_RT_SIM_LATENCY_US=200 %mlir_runner > %t.scheduled
// RUN: FileCheck %s --check-prefixes=CHECK,OFFLOADED < %t.scheduled

// IR-LABEL: func.func @jit_shared_copy_forward
// IR: %[[H:.*]] = linalg.matmul
// IR: offload.offload_to_cpu %[[H]] : tensor<4x8xf32>
// IR-NOT: offload.offload_to_cpu
// IR-LABEL: func.func @jit_shared_copy_backward
// IR-SAME: (%[[S:.*]]: tensor<4x8xf32, #offload.host>, %{{.*}}: tensor<4x4xf32>)
// IR: %[[L:.*]] = offload.load_to_gpu %[[S]]
// IR-NEXT: %[[HI:.*]] = tensor.extract_slice %[[L]][0, 4] [4, 4] [1, 1] {offload.rebuilt_view}
// IR-NEXT: arith.mulf %[[HI]]
// IR-NEXT: %[[LO:.*]] = tensor.extract_slice %[[L]][0, 0] [4, 4] [1, 1] {offload.rebuilt_view}
// IR-NEXT: math.tanh %[[LO]]
// IR-NOT: offload.load_to_gpu

// The forward output tanh(lo) * hi, then the gradient of lo,
// (1 - tanh(lo)^2) * hi * g.
// CHECK: rank = 2 offset = 0 sizes = [4, 4] strides = [4, 1] data =
// CHECK-NEXT: {{\[\[}}0.00890357,   0.0297327,   0.0108923,   0.0498627],
// CHECK-NEXT: [0.12905,   0.223015,   0.198888,   0.351209],
// CHECK-NEXT: [0.371447,   0.560451,   0.572151,   0.837087],
// CHECK-NEXT: [0.704791,   0.988229,   1.05174,   1.40079]]
// CHECK: rank = 2 offset = 0 sizes = [4, 4] strides = [4, 1] data =
// CHECK-NEXT: {{\[\[}}0.0521225,   -0.113078,   0.0569842,   -0.13556],
// CHECK-NEXT: [0.214593,   -0.275527,   0.241863,   -0.29885],
// CHECK-NEXT: [0.32888,   -0.362522,   0.332999,   -0.337454],
// CHECK-NEXT: [0.382909,   -0.373532,   0.332083,   -0.289587]]

// PLAIN: copies 0 0
// OFFLOADED: copies 1 1

func.func @jit_shared_copy_forward(%x: tensor<4x4xf32>, %w: tensor<4x8xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>)
    attributes {offload.backward = @jit_shared_copy_backward, offload.num_outputs = 1 : i64} {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<4x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<4x8xf32>) -> tensor<4x8xf32>
  %h = linalg.matmul ins(%x, %w : tensor<4x4xf32>, tensor<4x8xf32>) outs(%acc : tensor<4x8xf32>) -> tensor<4x8xf32>
  %lo = tensor.extract_slice %h[0, 0] [4, 4] [1, 1] : tensor<4x8xf32> to tensor<4x4xf32>
  %hi = tensor.extract_slice %h[0, 4] [4, 4] [1, 1] : tensor<4x8xf32> to tensor<4x4xf32>
  %t = math.tanh %lo : tensor<4x4xf32>
  %o = arith.mulf %t, %hi : tensor<4x4xf32>
  return %o, %lo, %hi : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}

func.func @jit_shared_copy_backward(%lo: tensor<4x4xf32>, %hi: tensor<4x4xf32>, %g: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %one = arith.constant dense<1.0> : tensor<4x4xf32>
  %gh = arith.mulf %hi, %g : tensor<4x4xf32>
  %t = math.tanh %lo : tensor<4x4xf32>
  %t2 = arith.mulf %t, %t : tensor<4x4xf32>
  %d = arith.subf %one, %t2 : tensor<4x4xf32>
  %r = arith.mulf %d, %gh : tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}

func.func private @printMemrefF32(tensor<*xf32>)

func.func private @offload_rt_mlir_print_summary()

func.func @main() {
  %x = arith.constant dense<[[0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8],
                             [0.9, 1.0, 1.1, 1.2], [1.3, 1.4, 1.5, 1.6]]> : tensor<4x4xf32>
  %w = arith.constant dense<[[0.05, -0.1, 0.15, -0.2, 0.25, -0.3, 0.35, -0.4],
                             [0.45, -0.5, 0.55, -0.6, 0.65, -0.7, 0.75, -0.8],
                             [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8],
                             [-0.1, -0.2, -0.3, -0.4, -0.5, -0.6, -0.7, -0.8]]> : tensor<4x8xf32>
  %g = arith.constant dense<0.5> : tensor<4x4xf32>
  %out, %lo, %hi = call @jit_shared_copy_forward(%x, %w) : (tensor<4x4xf32>, tensor<4x8xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>)
  %grad = call @jit_shared_copy_backward(%lo, %hi, %g) : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %o = tensor.cast %out : tensor<4x4xf32> to tensor<*xf32>
  call @printMemrefF32(%o) : (tensor<*xf32>) -> ()
  %p = tensor.cast %grad : tensor<4x4xf32> to tensor<*xf32>
  call @printMemrefF32(%p) : (tensor<*xf32>) -> ()
  call @offload_rt_mlir_print_summary() : () -> ()
  return
}
