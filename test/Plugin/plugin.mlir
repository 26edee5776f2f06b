// REQUIRES: plugin
// Debian's mlir-opt loads the project as one plugin and runs the same pipeline,
// named the upstream way, in --pass-pipeline.
// RUN: host-mlir-opt %s --load-dialect-plugin=%offload_libs/OffloadPlugin%shlibext --load-pass-plugin=%offload_libs/OffloadPlugin%shlibext \
// RUN:   --pass-pipeline="builtin.module(offload-activations{plan=all min-bytes=1024 schedule=false})" | FileCheck %s
// RUN: host-mlir-opt %s --load-dialect-plugin=%offload_libs/OffloadPlugin%shlibext --load-pass-plugin=%offload_libs/OffloadPlugin%shlibext \
// RUN:   --pass-pipeline="builtin.module(offload-activations{plan=all schedule=false min-bytes=16384 report=text})" -o /dev/null 2>&1 | \
// RUN:   FileCheck %s --check-prefix=REPORT
// RUN: host-mlir-opt %s --load-dialect-plugin=%offload_libs/OffloadPlugin%shlibext --load-pass-plugin=%offload_libs/OffloadPlugin%shlibext \
// RUN:   --pass-pipeline="builtin.module(offload-find-saved-activations{min-bytes=0},offload-insert-offloads,offload-reorder-backward,offload-insert-loads)" \
// RUN:   | FileCheck %s

// The plugin adds no flags, so mlir-opt's own keep working next to it:
// upstream passes in the same pipeline, and flags such as
// --mlir-print-ir-after.
// RUN: host-mlir-opt %s --load-dialect-plugin=%offload_libs/OffloadPlugin%shlibext --load-pass-plugin=%offload_libs/OffloadPlugin%shlibext \
// RUN:   --pass-pipeline="builtin.module(canonicalize,offload-activations{plan=all min-bytes=1024 schedule=false},cse)" --mlir-print-ir-after=cse \
// RUN:   2>%t.after | FileCheck %s
// RUN: FileCheck %s --check-prefix=AFTER < %t.after
// Upstream per-pass flags work with the plugin loaded.
// RUN: host-mlir-opt %s --load-dialect-plugin=%offload_libs/OffloadPlugin%shlibext --load-pass-plugin=%offload_libs/OffloadPlugin%shlibext --canonicalize --cse | FileCheck %s --check-prefix=UPSTREAM
// The former --offload-activations flag is gone: it filled in --pass-pipeline,
// so mlir-opt refused it next to --canonicalize, and a later --pass-pipeline
// silently replaced it.
// RUN: not host-mlir-opt %s --load-dialect-plugin=%offload_libs/OffloadPlugin%shlibext --load-pass-plugin=%offload_libs/OffloadPlugin%shlibext \
// RUN:   --offload-activations --canonicalize 2>&1 | FileCheck %s --check-prefix=NOFLAG

// NOFLAG: Unknown command line argument '--offload-activations'

// AFTER: IR Dump After CSE
// AFTER: offload.offload_to_cpu

// UPSTREAM-LABEL: func @plugin_step_forward
// UPSTREAM-NOT: offload.{{[a-z_]+}} %
// UPSTREAM: return %{{.*}}, %{{.*}} : tensor<64x64xf32>, tensor<64x64xf32>
// UPSTREAM-LABEL: func @plugin_step_backward
// UPSTREAM-NOT: offload.{{[a-z_]+}} %

// REPORT-LABEL: offload report: @plugin_step_forward -> @plugin_step_backward: 1 of 1 saved results offloaded
// REPORT: total: offloaded 1 values, 16.0 KiB; kept 0 values, 0 B

// CHECK-LABEL: func @plugin_step_forward
// CHECK: %[[M:.*]] = trace.op "aten.mm.default"
// CHECK-NEXT: trace.op "aten.relu.default"(%[[M]])
// CHECK-NEXT: %[[H:.*]] = offload.offload_to_cpu %[[M]] : tensor<64x64xf32> -> tensor<64x64xf32, #offload.host>
// CHECK: return %{{.*}}, %[[H]]
// CHECK-LABEL: func @plugin_step_backward
// CHECK-NEXT: trace.op "aten.neg.default"
// CHECK-NEXT: %[[L:.*]] = offload.load_to_gpu %arg0
// CHECK-NEXT: %[[T:.*]] = trace.view "aten.t.default"(%[[L]])
// CHECK-NEXT: trace.op "aten.mm.default"(%[[T]]
func.func @plugin_step_forward(%x: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>)
    attributes {offload.backward = @plugin_step_backward, offload.num_outputs = 1 : i64} {
  %0 = trace.op "aten.mm.default"(%x, %x) {node = "mm"} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %1 = trace.op "aten.relu.default"(%0) {node = "relu"} : (tensor<64x64xf32>) -> tensor<64x64xf32>
  return %1, %0 : tensor<64x64xf32>, tensor<64x64xf32>
}
func.func @plugin_step_backward(%s: tensor<64x64xf32>, %g: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %t = trace.view "aten.t.default"(%s) {node = "t"} : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %n = trace.op "aten.neg.default"(%g) {node = "neg"} : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %m = trace.op "aten.mm.default"(%t, %n) {node = "mm_1"} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  return %m : tensor<64x64xf32>
}
