// The shipped traced Llama-3 layer, offloaded and lowered to LLVM dialect:
// the copies become offload_rt calls, the ATen ops calls of external
// functions the framework provides (docs/lowering.md).
// RUN: offload-opt %S/llama_block.mlir --offload-activations="plan=all min-bytes=1024" --convert-trace-to-calls \
// RUN:   --one-shot-bufferize="bufferize-function-boundaries use-encoding-for-memory-space function-boundary-type-conversion=identity-layout-map" \
// RUN:   --convert-offload-to-llvm --finalize-memref-to-llvm=use-generic-functions --convert-func-to-llvm --convert-arith-to-llvm \
// RUN:   --reconcile-unrealized-casts -o %t.mlir
// RUN: FileCheck %s < %t.mlir
// mlir-translate does not know the trace attributes the calls keep; LLVM IR
// translation ignores them.
// RUN: mlir-translate --allow-unregistered-dialect --mlir-to-llvmir %t.mlir | FileCheck %s --check-prefix=LLVMIR
// LLVMIR: declare ptr @offload_rt_mlir_offload_start(ptr, i64, ptr)
// LLVMIR: define {{.*}} @forward(

// CHECK-DAG: llvm.func @offload_rt_mlir_offload_start(!llvm.ptr, i64, !llvm.ptr) -> !llvm.ptr
// CHECK-DAG: llvm.func @offload_rt_mlir_load_start(!llvm.ptr, i64, !llvm.ptr) -> !llvm.ptr
// CHECK-DAG: llvm.func @offload_rt_mlir_wait(!llvm.ptr, !llvm.ptr) -> !llvm.ptr
// CHECK-DAG: llvm.func @aten.mm.default_0
// CHECK-LABEL: llvm.func @forward
// CHECK-COUNT-17: llvm.call @offload_rt_mlir_offload_start
// CHECK-NOT: llvm.call @offload_rt_mlir_offload_start
// CHECK-LABEL: llvm.func @backward
// CHECK-COUNT-17: llvm.call @offload_rt_mlir_wait
// CHECK-NOT: llvm.call @offload_rt_mlir_wait
// CHECK-NOT: trace.op "
// CHECK-NOT: trace.view "
// CHECK-NOT: offload.offload_
// CHECK-NOT: offload.load_
// CHECK-NOT: offload.wait
