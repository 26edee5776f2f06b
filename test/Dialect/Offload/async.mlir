// RUN: offload-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: offload-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | offload-opt -split-input-file | FileCheck %s
// RUN: offload-opt %s -split-input-file -verify-diagnostics -canonicalize -cse | FileCheck %s --check-prefix=CANON

// The asynchronous copies round-trip; wait infers its result type.
// CHECK-LABEL: func @round_trip
// CHECK: %[[F:.*]] = offload.offload_start %{{.*}} : tensor<8x1024xbf16> -> !offload.future<tensor<8x1024xbf16, #offload.host>>
// CHECK: %[[H:.*]] = offload.wait %[[F]] : !offload.future<tensor<8x1024xbf16, #offload.host>>
// CHECK: %[[G:.*]] = offload.load_start %[[H]] : tensor<8x1024xbf16, #offload.host> -> !offload.future<tensor<8x1024xbf16>>
// CHECK: %[[D:.*]] = offload.wait %[[G]] : !offload.future<tensor<8x1024xbf16>>
// CHECK: return %[[D]]
func.func @round_trip(%x: tensor<8x1024xbf16>) -> tensor<8x1024xbf16> {
  %f = offload.offload_start %x : tensor<8x1024xbf16> -> !offload.future<tensor<8x1024xbf16, #offload.host>>
  %h = offload.wait %f : !offload.future<tensor<8x1024xbf16, #offload.host>>
  %g = offload.load_start %h : tensor<8x1024xbf16, #offload.host> -> !offload.future<tensor<8x1024xbf16>>
  %d = offload.wait %g : !offload.future<tensor<8x1024xbf16>>
  return %d : tensor<8x1024xbf16>
}

// -----

// A training step may read host values through load_start.
// CHECK-LABEL: func @step_loads_host_value_backward
// CHECK: offload.load_start %arg0
func.func @step_loads_host_value_forward(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32, #offload.host>)
    attributes {offload.backward = @step_loads_host_value_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<4xf32>
  %f = offload.offload_start %e : tensor<4xf32> -> !offload.future<tensor<4xf32, #offload.host>>
  %n = math.exp %x : tensor<4xf32>
  %h = offload.wait %f : !offload.future<tensor<4xf32, #offload.host>>
  return %n, %h : tensor<4xf32>, tensor<4xf32, #offload.host>
}
func.func @step_loads_host_value_backward(%s: tensor<4xf32, #offload.host>, %g: tensor<4xf32>) -> tensor<4xf32> {
  %f = offload.load_start %s : tensor<4xf32, #offload.host> -> !offload.future<tensor<4xf32>>
  %a = math.exp %g : tensor<4xf32>
  %v = offload.wait %f : !offload.future<tensor<4xf32>>
  %b = arith.mulf %a, %v : tensor<4xf32>
  return %b : tensor<4xf32>
}

// -----

func.func @offload_start_host_value(%h: tensor<4xf32, #offload.host>) {
  // expected-error @+1 {{operand #0 must be device-resident ranked tensor}}
  %f = offload.offload_start %h : tensor<4xf32, #offload.host> -> !offload.future<tensor<4xf32, #offload.host>>
  return
}

// -----

func.func @offload_start_device_future(%x: tensor<4xf32>) {
  // expected-error @+1 {{result #0 must be future of a host-resident tensor}}
  %f = offload.offload_start %x : tensor<4xf32> -> !offload.future<tensor<4xf32>>
  return
}

// -----

func.func @load_start_host_future(%h: tensor<4xf32, #offload.host>) {
  // expected-error @+1 {{result #0 must be future of a device-resident tensor}}
  %f = offload.load_start %h : tensor<4xf32, #offload.host> -> !offload.future<tensor<4xf32, #offload.host>>
  return
}

// -----

func.func @load_start_shape_mismatch(%h: tensor<4xf32, #offload.host>) {
  // expected-error @+1 {{result 'tensor<8xf32>' must have the shape and element type of source 'tensor<4xf32, #offload.host>'}}
  %f = offload.load_start %h : tensor<4xf32, #offload.host> -> !offload.future<tensor<8xf32>>
  return
}

// -----

func.func @waited_twice(%x: tensor<4xf32>) {
  // expected-error @+1 {{future is waited more than once}}
  %f = offload.offload_start %x : tensor<4xf32> -> !offload.future<tensor<4xf32, #offload.host>>
  %a = offload.wait %f : !offload.future<tensor<4xf32, #offload.host>>
  %b = offload.wait %f : !offload.future<tensor<4xf32, #offload.host>>
  return
}

// -----

func.func @future_returned(%x: tensor<4xf32>) -> !offload.future<tensor<4xf32, #offload.host>> {
  // expected-error @+1 {{future may only be read by 'offload.wait', not by 'func.return'}}
  %f = offload.offload_start %x : tensor<4xf32> -> !offload.future<tensor<4xf32, #offload.host>>
  return %f : !offload.future<tensor<4xf32, #offload.host>>
}

// -----

func.func @waited_in_other_block(%x: tensor<4xf32>, %c: i1) {
  // expected-error @+1 {{future must be waited in the block that starts the copy}}
  %f = offload.offload_start %x : tensor<4xf32> -> !offload.future<tensor<4xf32, #offload.host>>
  scf.if %c {
    %a = offload.wait %f : !offload.future<tensor<4xf32, #offload.host>>
  }
  return
}

// -----

func.func @wait_wrong_result(%f: !offload.future<tensor<4xf32>>) {
  // expected-error @+1 {{result type is the value type of the future}}
  %a = "offload.wait"(%f) : (!offload.future<tensor<4xf32>>) -> tensor<8xf32>
  return
}

// -----

// A load is always waited: its wait orders the compute stream after the copy
// and hands over the device buffer it fills.
func.func @load_never_waited(%h: tensor<4xf32, #offload.host>) {
  // expected-error @+1 {{starts a load that is never waited: its future must be read by one 'offload.wait'}}
  %f = offload.load_start %h : tensor<4xf32, #offload.host> -> !offload.future<tensor<4xf32>>
  return
}

// -----

func.func @load_buffer_never_waited(%h: memref<4xf32, #offload.host>) {
  // expected-error @+1 {{starts a load that is never waited}}
  %f = offload.load_start %h : memref<4xf32, #offload.host> -> !offload.buffer_future<memref<4xf32>>
  return
}

// -----

// An offload's future may go unwaited: nothing reads the host value, and the
// copy still runs (the start writes the copies resource, so it is not dead).
// CHECK-LABEL: func @offload_not_waited
// CHECK: offload.offload_start
func.func @offload_not_waited(%x: tensor<4xf32>) {
  %f = offload.offload_start %x : tensor<4xf32> -> !offload.future<tensor<4xf32, #offload.host>>
  return
}

// -----

// A wait is not Pure: it reads and frees its future on the copies resource,
// so cleanups keep it even when nothing reads its result (the load would
// otherwise be left unwaited), and never merge two copies of one value.
// CANON-LABEL: func @unused_wait
// CANON: %[[A:.*]] = offload.load_start %arg0
// CANON-NEXT: %[[B:.*]] = offload.load_start %arg0
// CANON-NEXT: offload.wait %[[A]]
// CANON-NEXT: offload.wait %[[B]]
// CANON-NEXT: return
func.func @unused_wait(%h: tensor<4xf32, #offload.host>) {
  %f = offload.load_start %h : tensor<4xf32, #offload.host> -> !offload.future<tensor<4xf32>>
  %g = offload.load_start %h : tensor<4xf32, #offload.host> -> !offload.future<tensor<4xf32>>
  %v = offload.wait %f : !offload.future<tensor<4xf32>>
  %w = offload.wait %g : !offload.future<tensor<4xf32>>
  return
}
