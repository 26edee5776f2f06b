// The copies lowered through the ConvertToLLVM interface (`--convert-to-llvm`)
// get the same checks as through `--convert-offload-to-llvm`: they live in
// the patterns, which say at the op what they cannot lower, and the driver
// then names the op it could not legalize.
// RUN: offload-opt %s -split-input-file -convert-to-llvm -verify-diagnostics | FileCheck %s

// CHECK-LABEL: llvm.func @offload_start_lowers_to_valid_calls
// CHECK: %[[S:.*]] = llvm.call @offload_rt_mlir_compute_stream() : () -> !llvm.ptr
// CHECK: %[[H:.*]] = llvm.call @offload_rt_mlir_offload_start(%{{.*}}, %{{.*}}, %[[S]]) : (!llvm.ptr, i64, !llvm.ptr) -> !llvm.ptr
// CHECK: llvm.call @offload_rt_mlir_host_data(%[[H]]) : (!llvm.ptr) -> !llvm.ptr
func.func @offload_start_lowers_to_valid_calls(%d: memref<4xf32>) -> memref<4xf32, #offload.host> {
  %f = offload.offload_start %d : memref<4xf32> -> !offload.buffer_future<memref<4xf32, #offload.host>>
  %h = offload.wait %f : !offload.buffer_future<memref<4xf32, #offload.host>>
  return %h : memref<4xf32, #offload.host>
}

// -----

func.func @group_in_other_address_space_is_refused(%a: memref<4xf32, 1>, %b: memref<4xf32, 1>) {
  // expected-error @+2 {{cannot lower 'offload.offload_group_start': memory space 1 : i64 of 'memref<4xf32, 1>' is not address space 0}}
  // expected-error @+1 {{failed to legalize operation 'offload.offload_group_start'}}
  %f:2 = offload.offload_group_start %a, %b : memref<4xf32, 1>, memref<4xf32, 1>
      -> !offload.buffer_future<memref<4xf32, #offload.host>>, !offload.buffer_future<memref<4xf32, #offload.host>>
  return
}

// -----

func.func @single_start_in_other_address_space_is_refused(%a: memref<4xf32, 1>) {
  // expected-error @+2 {{cannot lower 'offload.offload_start': memory space 1 : i64 of 'memref<4xf32, 1>' is not address space 0}}
  // expected-error @+1 {{failed to legalize operation 'offload.offload_start'}}
  %f = offload.offload_start %a : memref<4xf32, 1> -> !offload.buffer_future<memref<4xf32, #offload.host>>
  return
}

// -----

// A copy on tensors has no LLVM type: the driver names the op.
func.func @start_on_tensor_is_refused(%a: tensor<4xf32>) {
  // expected-error @+1 {{failed to legalize operation 'offload.offload_start'}}
  %f = offload.offload_start %a : tensor<4xf32> -> !offload.future<tensor<4xf32, #offload.host>>
  return
}
