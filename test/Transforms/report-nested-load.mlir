// A copy inside a region is reported at its top-level op's index, named by
// the path down to the op it stands before ("#3 scf.for > arith.mulf"), not
// by an index and an op of the nested block ("#0 scf.yield").
// RUN: offload-opt %s -split-input-file --offload-report -o /dev/null 2>&1 | FileCheck %s
// RUN: offload-opt %s -split-input-file --offload-report=format=json -o /dev/null 2>&1 | FileCheck %s --check-prefix=JSON

// CHECK-LABEL: offload report: @load_in_loop_body_forward -> @load_in_loop_body_backward
// CHECK: 1  math.exp {{.*}} #1 math.sin {{ *}}#3 scf.for > arith.mulf {{ *}}#3 scf.for > arith.mulf
// JSON: "load_before": {
// JSON-NEXT: "index": 3,
// JSON-NEXT: "op": "scf.for > arith.mulf"
func.func @load_in_loop_body_forward(%x: tensor<1024xf32>) -> (tensor<1024xf32>, tensor<1024xf32, #offload.host>)
    attributes {offload.backward = @load_in_loop_body_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1024xf32>
  %y = math.sin %e : tensor<1024xf32>
  %h = offload.offload_to_cpu %e : tensor<1024xf32> -> tensor<1024xf32, #offload.host>
  return %y, %h : tensor<1024xf32>, tensor<1024xf32, #offload.host>
}
func.func @load_in_loop_body_backward(%s: tensor<1024xf32, #offload.host>, %g: tensor<1024xf32>) -> tensor<1024xf32> {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %c2 step %c1 iter_args(%acc = %g) -> (tensor<1024xf32>) {
    %l = offload.load_to_gpu %s : tensor<1024xf32, #offload.host> -> tensor<1024xf32>
    %m = arith.mulf %acc, %l : tensor<1024xf32>
    scf.yield %m : tensor<1024xf32>
  }
  return %r : tensor<1024xf32>
}

// -----

// A load that ends its block stands before the terminator.
// CHECK-LABEL: offload report: @load_before_yield_forward -> @load_before_yield_backward
// CHECK: 1  math.exp {{.*}} #1 math.sin {{ *}}#2 scf.if > scf.yield
func.func @load_before_yield_forward(%x: tensor<1024xf32>) -> (tensor<1024xf32>, tensor<1024xf32, #offload.host>)
    attributes {offload.backward = @load_before_yield_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1024xf32>
  %y = math.sin %e : tensor<1024xf32>
  %h = offload.offload_to_cpu %e : tensor<1024xf32> -> tensor<1024xf32, #offload.host>
  return %y, %h : tensor<1024xf32>, tensor<1024xf32, #offload.host>
}
func.func @load_before_yield_backward(%s: tensor<1024xf32, #offload.host>, %g: tensor<1024xf32>, %c: i1) -> tensor<1024xf32> {
  %a = math.exp %g : tensor<1024xf32>
  %b = math.exp %a : tensor<1024xf32>
  %r = scf.if %c -> (tensor<1024xf32>) {
    %l = offload.load_to_gpu %s : tensor<1024xf32, #offload.host> -> tensor<1024xf32>
    scf.yield %l : tensor<1024xf32>
  } else {
    scf.yield %b : tensor<1024xf32>
  }
  return %r : tensor<1024xf32>
}
