// With fuse-memory-bound=true a fused kernel reads each buffer once. A
// value saved twice is one buffer, which backward reads through two
// arguments (and, once offloaded as one copy, through one loaded value), so
// the model reads it once either way. Before, the planner's model of the
// step read the two arguments as two buffers and the report of the emitted
// IR read the one loaded value once: the recorded prediction and the
// report's disagreed by the bytes of one read.
// RUN: offload-opt %s --offload-activations="min-bytes=0 plan=hidden max-slowdown=10 max-interference=10 copy-margin=0 release=at-wait fuse-memory-bound=true report=text" \
// RUN:   -o /dev/null 2>&1 | FileCheck %s

// CHECK-LABEL: offload report: @plan_fused_saved_twice_forward -> @plan_fused_saved_twice_backward
// CHECK: offloaded 1 values
// CHECK: predicted (h100-pcie5): {{.*}} peak device memory {{.*}} -> [[PEAK:[0-9.]+ [KMG]?i?B]]; step {{.*}} -> [[STEP:[0-9.]+ [mu]s]]
// CHECK-NEXT: offload-plan predicted for its plan: peak device memory [[PEAK]]; step [[STEP]]

func.func @plan_fused_saved_twice_forward(%x: tensor<1024x1024xf32>, %w: tensor<1024x1024xf32>)
    -> (tensor<1024x1024xf32>, tensor<1024x1024xf32>, tensor<1024x1024xf32>)
    attributes {offload.backward = @plan_fused_saved_twice_backward, offload.num_outputs = 1 : i64} {
  %h = trace.op "aten.mm.default"(%x, %w) {node = "mm"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %c = trace.op "aten.mm.default"(%h, %w) {node = "mm_1"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %d = trace.op "aten.mm.default"(%c, %w) {node = "mm_2"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  return %d, %h, %h : tensor<1024x1024xf32>, tensor<1024x1024xf32>, tensor<1024x1024xf32>
}
func.func @plan_fused_saved_twice_backward(%h: tensor<1024x1024xf32>, %h2: tensor<1024x1024xf32>, %g: tensor<1024x1024xf32>) -> tensor<1024x1024xf32> {
  %e = trace.op "aten.mm.default"(%g, %g) {node = "mm_3"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %f = trace.op "aten.mm.default"(%e, %g) {node = "mm_4"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %k = trace.op "aten.mul.Tensor"(%h, %h2) {node = "mul"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %r = trace.op "aten.add.Tensor"(%k, %f) {node = "add"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  return %r : tensor<1024x1024xf32>
}
