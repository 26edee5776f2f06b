// Offloading lowers the lowered step's device peak, with buffer deallocation:
// the step runs on the host-simulation backend (and, through
// test/Integration/GPU/, on the H100), and offload_rt counts every device
// byte the step allocates (the allocation wrappers of
// finalize-memref-to-llvm=use-generic-functions go through it).
//
// Forward saves %h (64x64 f32, 16 KiB) for backward. Backward first calls
// @wide_grad, whose 64x1024 temporary (256 KiB) lives until the call
// returns (the ownership-based deallocation frees a block's buffers at its
// end), and only then reads %h. Without offload %h is live during the call;
// offloaded, its device memory goes back to the runtime once its copy is
// done (during the rest of forward), and the load allocates it again after
// the call. The peak is in the call: the forward output (16 KiB), the
// temporary and @wide_grad's result (16 KiB), plus %h without offload; the
// two differ by %h's 16 KiB and 64 bytes of the deallocation's bookkeeping.
//
// RUN: offload-opt %s %{bufferize} --buffer-deallocation-pipeline %{lower} \
// RUN:   | %mlir_runner > %t.plain
// RUN: FileCheck %s --check-prefixes=CHECK,PLAIN < %t.plain
// RUN: offload-opt %s --offload-activations="plan=all min-bytes=0 schedule=false" %{bufferize} \
// RUN:   --buffer-deallocation-pipeline %{lower} | %mlir_runner > %t.offloaded
// RUN: FileCheck %s --check-prefixes=CHECK,OFFLOADED < %t.offloaded
// The scheduled form (start/wait, through bufferization of the futures) has
// the same peak, and buffer deallocation frees every buffer a wait yields:
// nothing is left in use at the end.
// RUN: offload-opt %s --offload-activations="plan=all min-bytes=0 schedule=true" \
// RUN:   %{bufferize} --buffer-deallocation-pipeline %{lower} \
// RUN:   | %mlir_runner > %t.scheduled
// RUN: FileCheck %s --check-prefixes=CHECK,SCHEDULED < %t.scheduled
// The values are the same either way.
// RUN: grep '^ *\[' %t.plain > %t.plain.values
// RUN: grep '^ *\[' %t.offloaded > %t.offloaded.values
// RUN: grep '^ *\[' %t.scheduled > %t.scheduled.values
// RUN: diff %t.plain.values %t.offloaded.values
// RUN: diff %t.plain.values %t.scheduled.values

// CHECK: rank = 2 offset = 0 sizes = [64, 64] strides = [64, 1] data =
// CHECK: rank = 2 offset = 0 sizes = [64, 64] strides = [64, 1] data =
// PLAIN: copies 0 0
// PLAIN: device memory through offload_rt: {{.*}} in use, peak 304.2 KiB (311552 bytes)
// OFFLOADED: copies 1 1
// OFFLOADED: device releases: 1
// OFFLOADED: device memory through offload_rt: {{.*}} in use, peak 288.2 KiB (295104 bytes)
// SCHEDULED: copies 1 1
// SCHEDULED: device releases: 1
// SCHEDULED: device memory through offload_rt: 0 B in use, peak 288.2 KiB (295104 bytes)

func.func @jit_device_peak_forward(%x: tensor<64x64xf32>, %w: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>)
    attributes {offload.backward = @jit_device_peak_backward, offload.num_outputs = 1 : i64} {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<64x64xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<64x64xf32>) -> tensor<64x64xf32>
  %h = linalg.matmul ins(%x, %w : tensor<64x64xf32>, tensor<64x64xf32>) outs(%acc : tensor<64x64xf32>) -> tensor<64x64xf32>
  %a = math.tanh %h : tensor<64x64xf32>
  // More forward work after %h's last use, during which its copy runs (and
  // ends: the runtime frees a source only then).
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 400 : index
  %z = scf.for %i = %c0 to %n step %c1 iter_args(%v = %a) -> tensor<64x64xf32> {
    %s = math.sin %v : tensor<64x64xf32>
    scf.yield %s : tensor<64x64xf32>
  }
  return %z, %h : tensor<64x64xf32>, tensor<64x64xf32>
}

// The gradient through a wide layer, in a function of its own: its 256 KiB
// temporary is freed when the call returns.
func.func @wide_grad(%g: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %zero = arith.constant 0.0 : f32
  %up = arith.constant dense<0.01> : tensor<64x1024xf32>
  %down = arith.constant dense<0.02> : tensor<1024x64xf32>
  %wide0 = tensor.empty() : tensor<64x1024xf32>
  %wacc = linalg.fill ins(%zero : f32) outs(%wide0 : tensor<64x1024xf32>) -> tensor<64x1024xf32>
  %wide = linalg.matmul ins(%g, %up : tensor<64x64xf32>, tensor<64x1024xf32>) outs(%wacc : tensor<64x1024xf32>) -> tensor<64x1024xf32>
  %act = math.exp %wide : tensor<64x1024xf32>
  %narrow0 = tensor.empty() : tensor<64x64xf32>
  %nacc = linalg.fill ins(%zero : f32) outs(%narrow0 : tensor<64x64xf32>) -> tensor<64x64xf32>
  %gg = linalg.matmul ins(%act, %down : tensor<64x1024xf32>, tensor<1024x64xf32>) outs(%nacc : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %gg : tensor<64x64xf32>
}

// (1 - tanh(h)^2) times the gradient through the wide layer.
func.func @jit_device_peak_backward(%h: tensor<64x64xf32>, %g: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %gg = call @wide_grad(%g) : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %one = arith.constant dense<1.0> : tensor<64x64xf32>
  %t = math.tanh %h : tensor<64x64xf32>
  %t2 = arith.mulf %t, %t : tensor<64x64xf32>
  %d = arith.subf %one, %t2 : tensor<64x64xf32>
  %r = arith.mulf %d, %gg : tensor<64x64xf32>
  return %r : tensor<64x64xf32>
}

func.func private @printMemrefF32(tensor<*xf32>)

func.func private @offload_rt_mlir_print_summary()

// Between forward and backward, every copy and release is done. On the GPU
// the forward's remaining work orders %h's release before the backward's
// peak; on the host-simulation backend the copy stream is a thread that
// competes with this code for the host's cores, and on a loaded machine it
// could run late, so the peak would depend on the scheduler.
func.func private @offload_rt_mlir_synchronize()

func.func @step(%x: tensor<64x64xf32>, %w: tensor<64x64xf32>, %g: tensor<64x64xf32>) {
  %out, %saved = call @jit_device_peak_forward(%x, %w) : (tensor<64x64xf32>, tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>)
  call @offload_rt_mlir_synchronize() : () -> ()
  %grad = call @jit_device_peak_backward(%saved, %g) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %o = tensor.cast %out : tensor<64x64xf32> to tensor<*xf32>
  call @printMemrefF32(%o) : (tensor<*xf32>) -> ()
  %p = tensor.cast %grad : tensor<64x64xf32> to tensor<*xf32>
  call @printMemrefF32(%p) : (tensor<*xf32>) -> ()
  return
}

// The statistics once the step, and its deallocations, are done.
func.func @main() {
  %x = arith.constant dense<0.03> : tensor<64x64xf32>
  %w = arith.constant dense<-0.02> : tensor<64x64xf32>
  %g = arith.constant dense<0.5> : tensor<64x64xf32>
  call @step(%x, %w, %g) : (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> ()
  call @offload_rt_mlir_print_summary() : () -> ()
  return
}
