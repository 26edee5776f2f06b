// Each pass either succeeds with valid IR or fails with a diagnostic, also
// with --verify-each=false (no verifier between passes to stop invalid IR):
// every pass, alone and after the passes it expects, on each case below,
// its output parsed and verified again (Inputs/valid_or_diagnosed.py).
// RUN: %python %S/Inputs/valid_or_diagnosed.py offload-opt %offload_src %s | FileCheck %s --check-prefix=RUNS

// What each case does, with the verifier off between passes.
// RUN: offload-opt %s -split-input-file --verify-each=false --offload-activations="min-bytes=0 plan=all" -verify-diagnostics | offload-opt -split-input-file | FileCheck %s
// RUN: offload-opt %s -split-input-file --verify-each=false --convert-trace-to-calls | offload-opt -split-input-file | FileCheck %s --check-prefix=CALLS

// Backward recomputes through a call of a private function: the saved
// value is read by the call, which is a real use.
// RUNS: recompute_call_in_backward offload-activations: transformed
// CHECK-LABEL: func.func @recompute_call_in_backward_backward
// CHECK: %[[F:.*]] = offload.load_start %arg0
// CHECK: %[[L:.*]] = offload.wait %[[F]]
// CHECK: call @recompute_sin(%[[L]])
func.func @recompute_call_in_backward(%x: tensor<4096xf32>) -> (tensor<4096xf32>, tensor<4096xf32>)
    attributes {offload.backward = @recompute_call_in_backward_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<4096xf32>
  %y = math.sin %e : tensor<4096xf32>
  return %y, %e : tensor<4096xf32>, tensor<4096xf32>
}
func.func private @recompute_sin(%e: tensor<4096xf32>) -> tensor<4096xf32> {
  %y = math.sin %e : tensor<4096xf32>
  return %y : tensor<4096xf32>
}
func.func @recompute_call_in_backward_backward(%s: tensor<4096xf32>, %g: tensor<4096xf32>) -> tensor<4096xf32> {
  %r = func.call @recompute_sin(%s) : (tensor<4096xf32>) -> tensor<4096xf32>
  %o = arith.mulf %r, %g : tensor<4096xf32>
  return %o : tensor<4096xf32>
}

// -----

// An async.func returns a tensor as an !async.value: the passes cannot
// retype a saved result through its returned value, and say so.
// RUNS: async_forward offload-find-saved-activations: diagnosed
// expected-error @+1 {{forward function 'async_forward' returns 'tensor<4096xf32>' as result #0 but its type has '!async.value<tensor<4096xf32>>'}}
async.func @async_forward(%x: tensor<4096xf32>) -> (!async.value<tensor<4096xf32>>, !async.value<tensor<4096xf32>>)
    attributes {offload.backward = @async_forward_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<4096xf32>
  %y = math.sin %e : tensor<4096xf32>
  // expected-note @+1 {{returned here}}
  return %y, %e : tensor<4096xf32>, tensor<4096xf32>
}
func.func @async_forward_backward(%s: !async.value<tensor<4096xf32>>, %g: tensor<4096xf32>) -> tensor<4096xf32> {
  %v = async.await %s : !async.value<tensor<4096xf32>>
  %o = arith.mulf %v, %g : tensor<4096xf32>
  return %o : tensor<4096xf32>
}

// -----

// A driver that calls forward and reads a saved value itself would read a
// host value if it moved: the value stays, with the reason. The other saved
// value, only handed to backward, moves.
// RUNS: driver_reads_saved_forward offload-activations: transformed
// CHECK-LABEL: func.func @driver_reads_saved_forward
// CHECK-SAME: tensor<4096xf32, #offload.host>, tensor<4096xf32> {offload.kept = "a caller of forward reads it ('math.absf' in 'driver_reads_saved')"}
// CHECK-LABEL: func.func @driver_reads_saved(
// CHECK: %[[R:.*]]:3 = call @driver_reads_saved_forward
// CHECK: math.absf %[[R]]#2 : tensor<4096xf32>
func.func @driver_reads_saved_forward(%x: tensor<4096xf32>) -> (tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>)
    attributes {offload.backward = @driver_reads_saved_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<4096xf32>
  %c = math.cos %x : tensor<4096xf32>
  %y = math.sin %e : tensor<4096xf32>
  return %y, %e, %c : tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>
}
func.func @driver_reads_saved_backward(%s: tensor<4096xf32>, %c: tensor<4096xf32>, %g: tensor<4096xf32>) -> tensor<4096xf32> {
  %o = arith.mulf %s, %g : tensor<4096xf32>
  %p = arith.mulf %o, %c : tensor<4096xf32>
  return %p : tensor<4096xf32>
}
func.func @driver_reads_saved(%x: tensor<4096xf32>) -> tensor<4096xf32> {
  %y, %s, %c = func.call @driver_reads_saved_forward(%x) : (tensor<4096xf32>) -> (tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>)
  %peek = math.absf %c : tensor<4096xf32>
  %d = func.call @driver_reads_saved_backward(%s, %c, %y) : (tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>) -> tensor<4096xf32>
  %o = arith.addf %d, %peek : tensor<4096xf32>
  return %o : tensor<4096xf32>
}

// -----

// A func.constant of forward keeps its type: nothing moves, with the reason.
// RUNS: function_typed_constant_forward offload-activations: transformed
// CHECK-LABEL: func.func @function_typed_constant_forward
// CHECK-SAME: {offload.kept = "'function_typed_constant_forward' is used by 'func.constant', not only called"}
func.func @function_typed_constant_forward(%x: tensor<4096xf32>) -> (tensor<4096xf32>, tensor<4096xf32>)
    attributes {offload.backward = @function_typed_constant_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<4096xf32>
  %y = math.sin %e : tensor<4096xf32>
  return %y, %e : tensor<4096xf32>, tensor<4096xf32>
}
func.func @function_typed_constant_backward(%s: tensor<4096xf32>, %g: tensor<4096xf32>) -> tensor<4096xf32> {
  %o = arith.mulf %s, %g : tensor<4096xf32>
  return %o : tensor<4096xf32>
}
func.func @function_typed_constant(%x: tensor<4096xf32>) -> tensor<4096xf32> {
  %f = func.constant @function_typed_constant_forward : (tensor<4096xf32>) -> (tensor<4096xf32>, tensor<4096xf32>)
  %y, %s = func.call_indirect %f(%x) : (tensor<4096xf32>) -> (tensor<4096xf32>, tensor<4096xf32>)
  %d = func.call @function_typed_constant_backward(%s, %y) : (tensor<4096xf32>, tensor<4096xf32>) -> tensor<4096xf32>
  return %d : tensor<4096xf32>
}

// -----

// Saved values with mixed encodings: a plain tensor moves, a sparse one
// keeps its encoding on the device (a host copy's encoding is
// #offload.host), a host one is already there.
// RUNS: mixed_encodings offload-activations: transformed
// CHECK-LABEL: func.func @mixed_encodings
// CHECK-SAME: -> (tensor<64x64xf32>, tensor<64x64xf32, #offload.host>,
// CHECK-SAME: tensor<64x64xf32, #sparse> {offload.kept = "encoding #sparse_tensor.encoding<{{.*}}> has no host form"},
// CHECK-SAME: tensor<64x64xf32, #offload.host> {offload.kept = "already in host memory"})
// CHECK-LABEL: func.func @mixed_encodings_backward
// CHECK-SAME: (%{{.*}}: tensor<64x64xf32, #offload.host>, %[[S:.*]]: tensor<64x64xf32, #sparse>,
// CHECK: sparse_tensor.convert %[[S]]
#csr = #sparse_tensor.encoding<{map = (d0, d1) -> (d0 : dense, d1 : compressed)}>
func.func @mixed_encodings(%x: tensor<64x64xf32>, %h: tensor<64x64xf32, #offload.host>) -> (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32, #csr>, tensor<64x64xf32, #offload.host>)
    attributes {offload.backward = @mixed_encodings_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<64x64xf32>
  %s = sparse_tensor.convert %e : tensor<64x64xf32> to tensor<64x64xf32, #csr>
  %y = math.sin %e : tensor<64x64xf32>
  return %y, %e, %s, %h : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32, #csr>, tensor<64x64xf32, #offload.host>
}
func.func @mixed_encodings_backward(%e: tensor<64x64xf32>, %s: tensor<64x64xf32, #csr>, %h: tensor<64x64xf32, #offload.host>, %g: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32, #csr>) {
  %d = sparse_tensor.convert %s : tensor<64x64xf32, #csr> to tensor<64x64xf32>
  %l = offload.load_to_gpu %h : tensor<64x64xf32, #offload.host> -> tensor<64x64xf32>
  %o = arith.mulf %e, %d : tensor<64x64xf32>
  %p = arith.mulf %o, %l : tensor<64x64xf32>
  return %p, %s : tensor<64x64xf32>, tensor<64x64xf32, #csr>
}

// -----

// Traced ops in a nested module call declarations in that module, where
// the calls resolve them.
// RUNS: outer convert-trace-to-calls: transformed
// CALLS-LABEL: module @outer
// CALLS-NEXT: func.func private @aten.exp.default_0
// CALLS-NEXT: module @nested
// CALLS-DAG: func.func private @aten.mul.Tensor_0
// CALLS-DAG: func.func private @aten.sin.default_0
// CALLS-DAG: func.func private @aten.exp.default_0
// CALLS: call @aten.exp.default_0(%arg0) {trace.node = "exp"}
module @outer {
  module @nested {
    func.func @nested_forward(%x: tensor<4096xf32>) -> (tensor<4096xf32>, tensor<4096xf32>)
        attributes {offload.backward = @nested_backward, offload.num_outputs = 1 : i64} {
      %e = trace.op "aten.exp.default"(%x) {node = "exp"} : (tensor<4096xf32>) -> tensor<4096xf32>
      %y = trace.op "aten.sin.default"(%e) {node = "sin"} : (tensor<4096xf32>) -> tensor<4096xf32>
      return %y, %e : tensor<4096xf32>, tensor<4096xf32>
    }
    func.func @nested_backward(%s: tensor<4096xf32>, %g: tensor<4096xf32>) -> tensor<4096xf32> {
      %o = trace.op "aten.mul.Tensor"(%s, %g) {node = "mul"} : (tensor<4096xf32>, tensor<4096xf32>) -> tensor<4096xf32>
      return %o : tensor<4096xf32>
    }
  }
  func.func @trace_outside(%x: tensor<4096xf32>) -> tensor<4096xf32> {
    %e = trace.op "aten.exp.default"(%x) {node = "exp2"} : (tensor<4096xf32>) -> tensor<4096xf32>
    return %e : tensor<4096xf32>
  }
}

// RUNS: 0 broken
