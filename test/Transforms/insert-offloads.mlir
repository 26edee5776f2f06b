// RUN: offload-opt %s -split-input-file -offload-insert-offloads -verify-diagnostics | FileCheck %s

// The offload goes right after the last forward use, not after the return;
// backward reads the host value through one load at its entry.
// CHECK-LABEL: func @forward
// CHECK-SAME: -> (tensor<256xf32>, tensor<256xf32, #offload.host>)
// CHECK: %[[E:.*]] = math.exp
// CHECK-NEXT: %[[T:.*]] = math.tanh %[[E]]
// CHECK-NEXT: %[[H:.*]] = offload.offload_to_cpu %[[E]] : tensor<256xf32> -> tensor<256xf32, #offload.host>
// CHECK-NEXT: %[[R:.*]] = math.sqrt %[[T]]
// CHECK-NEXT: return %[[R]], %[[H]]
// CHECK-LABEL: func @backward
// CHECK-SAME: (%[[S:.*]]: tensor<256xf32, #offload.host>, %[[G:.*]]: tensor<256xf32>)
// CHECK-NEXT: %[[L:.*]] = offload.load_to_gpu %[[S]] : tensor<256xf32, #offload.host> -> tensor<256xf32>
// CHECK-NEXT: math.sqrt %[[G]]
// CHECK-NEXT: arith.mulf %[[L]]
func.func @forward(%x: tensor<256xf32>) -> (tensor<256xf32>, tensor<256xf32> {offload.selected})
    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
  %0 = math.exp %x : tensor<256xf32>
  %1 = math.tanh %0 : tensor<256xf32>
  %2 = math.sqrt %1 : tensor<256xf32>
  return %2, %0 : tensor<256xf32>, tensor<256xf32>
}
func.func @backward(%s: tensor<256xf32>, %g: tensor<256xf32>) -> tensor<256xf32> {
  %0 = math.sqrt %g : tensor<256xf32>
  %1 = arith.mulf %s, %0 : tensor<256xf32>
  return %1 : tensor<256xf32>
}

// -----

// A use nested in a region counts at its top-level ancestor, and a later use
// of a view sharing the value's storage delays the offload too.
// CHECK-LABEL: func @forward
// CHECK: %[[E:.*]] = math.exp
// CHECK: scf.for
// CHECK: }
// CHECK-NEXT: %[[V:.*]] = tensor.expand_shape %[[E]]
// CHECK-NEXT: math.absf %[[V]]
// CHECK-NEXT: offload.offload_to_cpu %[[E]]
// CHECK-NEXT: return
func.func @forward(%x: tensor<256xf32>, %n: index) -> (tensor<16x16xf32>, tensor<256xf32> {offload.selected})
    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %0 = math.exp %x : tensor<256xf32>
  %1 = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %x) -> tensor<256xf32> {
    %2 = arith.addf %acc, %0 : tensor<256xf32>
    scf.yield %2 : tensor<256xf32>
  }
  %v = tensor.expand_shape %0 [[0, 1]] output_shape [16, 16] : tensor<256xf32> into tensor<16x16xf32>
  %a = math.absf %v : tensor<16x16xf32>
  return %a, %0 : tensor<16x16xf32>, tensor<256xf32>
}
func.func @backward(%s: tensor<256xf32>) {
  return
}

// -----

// A value saved twice is offloaded once; a value with no use but the return
// is offloaded right after its producer.
// CHECK-LABEL: func @forward
// CHECK: %[[E:.*]] = math.exp
// CHECK-NEXT: %[[H:.*]] = offload.offload_to_cpu %[[E]]
// CHECK-NEXT: %[[T:.*]] = math.tanh
// CHECK-NEXT: return %[[T]], %[[H]], %[[H]]
// CHECK-LABEL: func @backward
// CHECK-NEXT: offload.load_to_gpu
// CHECK-NEXT: offload.load_to_gpu
func.func @forward(%x: tensor<256xf32>)
    -> (tensor<256xf32>, tensor<256xf32> {offload.selected}, tensor<256xf32> {offload.selected})
    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
  %0 = math.exp %x : tensor<256xf32>
  %1 = math.tanh %x : tensor<256xf32>
  return %1, %0, %0 : tensor<256xf32>, tensor<256xf32>, tensor<256xf32>
}
func.func @backward(%a: tensor<256xf32>, %b: tensor<256xf32>) -> tensor<256xf32> {
  %0 = arith.addf %a, %b : tensor<256xf32>
  return %0 : tensor<256xf32>
}

// -----

// An op that writes its operand in place returns that operand's storage
// (trace.op with `mutates`, like aten.relu_): a later read of its result is a
// read of the saved storage, so the offload goes after it, not before.
// CHECK-LABEL: func @forward
// CHECK: %[[E:.*]] = trace.op "aten.exp.default"
// CHECK-NEXT: %[[R:.*]] = trace.op "aten.relu_.default"(%[[E]])
// CHECK-NEXT: trace.op "aten.tanh.default"
// CHECK-NEXT: %[[N:.*]] = trace.op "aten.neg.default"(%[[R]])
// CHECK-NEXT: offload.offload_to_cpu %[[E]]
// CHECK-NEXT: return %[[N]]
func.func @forward(%x: tensor<256xf32>) -> (tensor<256xf32>, tensor<256xf32> {offload.selected})
    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
  %0 = trace.op "aten.exp.default"(%x) : (tensor<256xf32>) -> tensor<256xf32>
  %1 = trace.op "aten.relu_.default"(%0) {mutates = array<i64: 0>} : (tensor<256xf32>) -> tensor<256xf32>
  %2 = trace.op "aten.tanh.default"(%x) : (tensor<256xf32>) -> tensor<256xf32>
  %3 = trace.op "aten.neg.default"(%1) : (tensor<256xf32>) -> tensor<256xf32>
  return %3, %0 : tensor<256xf32>, tensor<256xf32>
}
func.func @backward(%s: tensor<256xf32>) {
  return
}

// -----

// The same when the saved value is the in-place result: reads of the
// storage under its earlier name count too.
// CHECK-LABEL: func @forward
// CHECK: %[[E:.*]] = trace.op "aten.exp.default"
// CHECK-NEXT: %[[R:.*]] = trace.op "aten.relu_.default"(%[[E]])
// CHECK-NEXT: %[[N:.*]] = trace.op "aten.neg.default"(%[[E]])
// CHECK-NEXT: offload.offload_to_cpu %[[R]]
// CHECK-NEXT: return %[[N]]
func.func @forward(%x: tensor<256xf32>) -> (tensor<256xf32>, tensor<256xf32> {offload.selected})
    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
  %0 = trace.op "aten.exp.default"(%x) : (tensor<256xf32>) -> tensor<256xf32>
  %1 = trace.op "aten.relu_.default"(%0) {mutates = array<i64: 0>} : (tensor<256xf32>) -> tensor<256xf32>
  %2 = trace.op "aten.neg.default"(%0) : (tensor<256xf32>) -> tensor<256xf32>
  return %2, %1 : tensor<256xf32>, tensor<256xf32>
}
func.func @backward(%s: tensor<256xf32>) {
  return
}

// -----

// expected-error @+1 {{cannot offload saved result #1: it is a function argument}}
func.func @forward(%x: tensor<256xf32>) -> (tensor<256xf32>, tensor<256xf32> {offload.selected})
    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
  return %x, %x : tensor<256xf32>, tensor<256xf32>
}
func.func @backward(%a: tensor<256xf32>) {
  return
}

// -----

// expected-error @+1 {{cannot offload saved result #1: it is not a ranked tensor}}
func.func @forward(%x: f32) -> (f32, f32 {offload.selected})
    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
  %0 = arith.addf %x, %x : f32
  return %0, %0 : f32, f32
}
func.func @backward(%a: f32) {
  return
}

// -----

func.func @forward(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
  return %x, %x : tensor<4xf32>, tensor<4xf32>
}
// expected-error @+1 {{backward function 'backward' must have a single block}}
func.func @backward(%a: tensor<4xf32>) {
  cf.br ^bb1
^bb1:
  return
}

// -----

func.func @forward(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
  return %x, %x : tensor<4xf32>, tensor<4xf32>
}
// expected-error @+1 {{backward function 'backward' must have a body}}
func.func private @backward(%a: tensor<4xf32>)

// -----

func.func @forward_a(%x: tensor<256xf32>) -> (tensor<256xf32>, tensor<256xf32>)
    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
  %0 = math.exp %x : tensor<256xf32>
  return %0, %0 : tensor<256xf32>, tensor<256xf32>
}
// expected-error @+1 {{backward function 'backward' is already the backward of 'forward_a'; each forward needs its own}}
func.func @forward_b(%x: tensor<256xf32>) -> (tensor<256xf32>, tensor<256xf32>)
    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
  %0 = math.exp %x : tensor<256xf32>
  return %0, %0 : tensor<256xf32>, tensor<256xf32>
}
func.func @backward(%a: tensor<256xf32>) {
  return
}
