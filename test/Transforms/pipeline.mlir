// RUN: offload-opt %s -split-input-file -offload-activations="plan=all min-bytes=1024 schedule=false" | FileCheck %s
// RUN: offload-opt %s -split-input-file -offload-find-saved-activations -offload-insert-offloads -offload-reorder-backward -offload-insert-loads | FileCheck %s
// The default schedules the copies (schedule=true): the same places, split
// into start and wait.
// RUN: offload-opt %s -split-input-file -offload-activations="plan=all min-bytes=1024" | FileCheck %s --check-prefix=DEFAULT

// An MLP step in upstream linalg/arith/math/tensor: the hidden activation is
// offloaded after its last forward use and loaded right before the view
// that feeds its first real consumer in backward.
// CHECK-LABEL: func @mlp_step_forward
// CHECK-SAME: -> (tensor<64x64xf32>, tensor<64x64xf32, #offload.host>, tensor<64x64xf32> {offload.kept = "function argument"})
// CHECK: %[[H:.*]] = linalg.matmul
// CHECK: %[[A:.*]] = math.tanh %[[H]]
// CHECK-NEXT: %[[C:.*]] = offload.offload_to_cpu %[[H]]
// CHECK: return %{{.*}}, %[[C]], %arg0
// CHECK-LABEL: func @mlp_step_backward
// CHECK: linalg.fill
// CHECK-NEXT: linalg.matmul
// CHECK-NEXT: %[[L:.*]] = offload.load_to_gpu %arg0
// CHECK-NEXT: %[[V:.*]] = tensor.collapse_shape %[[L]]
// CHECK-NEXT: %[[X:.*]] = tensor.expand_shape %[[V]]
// CHECK-NEXT: math.tanh %[[X]]
// DEFAULT-LABEL: func @mlp_step_forward
// DEFAULT: %[[H:.*]] = linalg.matmul
// DEFAULT: math.tanh %[[H]]
// DEFAULT-NEXT: %[[F:.*]] = offload.offload_start %[[H]]
// DEFAULT: %[[C:.*]] = offload.wait %[[F]]
// DEFAULT: return %{{.*}}, %[[C]], %arg0
// DEFAULT-LABEL: func @mlp_step_backward
// DEFAULT: offload.load_start %arg0
// DEFAULT: offload.wait
// DEFAULT: math.tanh
func.func @mlp_step_forward(%x: tensor<64x64xf32>, %w: tensor<64x64xf32>)
    -> (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>)
    attributes {offload.backward = @mlp_step_backward, offload.num_outputs = 1 : i64} {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<64x64xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<64x64xf32>) -> tensor<64x64xf32>
  %h = linalg.matmul ins(%x, %w : tensor<64x64xf32>, tensor<64x64xf32>) outs(%acc : tensor<64x64xf32>) -> tensor<64x64xf32>
  %a = math.tanh %h : tensor<64x64xf32>
  %y = arith.mulf %a, %a : tensor<64x64xf32>
  return %y, %h, %x : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
}
func.func @mlp_step_backward(%h: tensor<64x64xf32>, %x: tensor<64x64xf32>, %g: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %v = tensor.collapse_shape %h [[0, 1]] : tensor<64x64xf32> into tensor<4096xf32>
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<64x64xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<64x64xf32>) -> tensor<64x64xf32>
  %gx = linalg.matmul ins(%g, %x : tensor<64x64xf32>, tensor<64x64xf32>) outs(%acc : tensor<64x64xf32>) -> tensor<64x64xf32>
  %u = tensor.expand_shape %v [[0, 1]] output_shape [64, 64] : tensor<4096xf32> into tensor<64x64xf32>
  %t = math.tanh %u : tensor<64x64xf32>
  %r = arith.mulf %t, %gx : tensor<64x64xf32>
  return %r : tensor<64x64xf32>
}

// -----

// The views of the saved value have no effects, so an unrelated memref.store
// (a step counter) between them and their consumer holds neither them nor
// the load back: the load sits right before the views, right before tanh.
// CHECK-LABEL: func @store_between_views_and_consumer_backward
// CHECK: linalg.matmul
// CHECK-NEXT: memref.alloc
// CHECK-NEXT: memref.store
// CHECK-NEXT: %[[L:.*]] = offload.load_to_gpu %arg0
// CHECK-NEXT: %[[V:.*]] = tensor.collapse_shape %[[L]]
// CHECK-NEXT: %[[X:.*]] = tensor.expand_shape %[[V]]
// CHECK-NEXT: math.tanh %[[X]]
func.func @store_between_views_and_consumer_forward(%x: tensor<64x64xf32>, %w: tensor<64x64xf32>)
    -> (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>)
    attributes {offload.backward = @store_between_views_and_consumer_backward, offload.num_outputs = 1 : i64} {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<64x64xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<64x64xf32>) -> tensor<64x64xf32>
  %h = linalg.matmul ins(%x, %w : tensor<64x64xf32>, tensor<64x64xf32>) outs(%acc : tensor<64x64xf32>) -> tensor<64x64xf32>
  %a = math.tanh %h : tensor<64x64xf32>
  %y = arith.mulf %a, %a : tensor<64x64xf32>
  return %y, %h, %x : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
}
func.func @store_between_views_and_consumer_backward(%h: tensor<64x64xf32>, %x: tensor<64x64xf32>, %g: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %v = tensor.collapse_shape %h [[0, 1]] : tensor<64x64xf32> into tensor<4096xf32>
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1 : i64
  %init = tensor.empty() : tensor<64x64xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<64x64xf32>) -> tensor<64x64xf32>
  %gx = linalg.matmul ins(%g, %x : tensor<64x64xf32>, tensor<64x64xf32>) outs(%acc : tensor<64x64xf32>) -> tensor<64x64xf32>
  %u = tensor.expand_shape %v [[0, 1]] output_shape [64, 64] : tensor<4096xf32> into tensor<64x64xf32>
  %steps = memref.alloc() : memref<i64>
  memref.store %one, %steps[] : memref<i64>
  %t = math.tanh %u : tensor<64x64xf32>
  %r = arith.mulf %t, %gx : tensor<64x64xf32>
  return %r : tensor<64x64xf32>
}

// -----

// A module without training steps is left alone.
// CHECK-LABEL: func @plain
// CHECK-NOT: offload.
func.func @plain(%x: tensor<4096xf32>) -> tensor<4096xf32> {
  %0 = math.exp %x : tensor<4096xf32>
  return %0 : tensor<4096xf32>
}
