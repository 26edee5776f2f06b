// A module that already declares an offload_rt entry point with another type
// (or as something other than an llvm.func) gets an error at the copy that
// calls it, with a note at the declaration, through either driver.
// RUN: offload-opt %s -split-input-file -convert-offload-to-llvm -verify-diagnostics
// RUN: not offload-opt %s -split-input-file -convert-to-llvm 2>&1 | FileCheck %s --check-prefix=GENERIC
// RUN: not offload-opt %s -split-input-file -convert-offload-to-llvm -o /dev/null 2>&1 | FileCheck %s --check-prefix=FULL
// GENERIC: error: cannot lower 'offload.load_buffer': the runtime function 'offload_rt_mlir_wait' is already declared as something else

// expected-note @+1 {{declared here}}
llvm.func @offload_rt_mlir_wait(i64) -> i64

func.func @runtime_function_declared_with_other_type(%h: memref<4xf32, #offload.host>) -> memref<4xf32> {
  // FULL: runtime-declarations.mlir:[[@LINE+3]]:{{[0-9]+}}: error: cannot lower 'offload.load_buffer': the runtime function 'offload_rt_mlir_wait' is already declared as something else;
  // FULL-SAME: the lowering calls it as an 'llvm.func' of type '!llvm.func<ptr (ptr, ptr)>'
  // expected-error @+1 {{cannot lower 'offload.load_buffer': the runtime function 'offload_rt_mlir_wait' is already declared as something else}}
  %d = offload.load_buffer %h : memref<4xf32, #offload.host> -> memref<4xf32>
  return %d : memref<4xf32>
}

// -----

// expected-note @+1 {{declared here}}
memref.global @offload_rt_mlir_compute_stream : memref<4xf32>

func.func @runtime_function_name_taken_by_other_symbol(%d: memref<4xf32>) -> memref<4xf32, #offload.host> {
  // expected-error @+1 {{the runtime function 'offload_rt_mlir_compute_stream' is already declared as something else}}
  %h = offload.offload_buffer %d : memref<4xf32> -> memref<4xf32, #offload.host>
  return %h : memref<4xf32, #offload.host>
}
