// RUN: offload-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: offload-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | offload-opt -split-input-file | FileCheck %s
// RUN: offload-opt %s -split-input-file -verify-diagnostics -canonicalize -cse | FileCheck %s --check-prefix=CANON

// Copy groups round-trip: one future per source, each waited on its own.
// CHECK-LABEL: func @round_trip
// CHECK: %[[F:.*]]:2 = offload.offload_group_start %arg0, %arg1 : tensor<1024xf32>, tensor<256xbf16> -> !offload.future<tensor<1024xf32,
// CHECK-SAME: #offload.host>>, !offload.future<tensor<256xbf16, #offload.host>>
// CHECK: %[[H0:.*]] = offload.wait %[[F]]#0 : !offload.future<tensor<1024xf32, #offload.host>>
// CHECK: %[[H1:.*]] = offload.wait %[[F]]#1 : !offload.future<tensor<256xbf16, #offload.host>>
// CHECK: %[[G:.*]]:2 = offload.load_group_start %[[H1]], %[[H0]] : tensor<256xbf16, #offload.host>, tensor<1024xf32, #offload.host> ->
// CHECK-SAME: !offload.future<tensor<256xbf16>>, !offload.future<tensor<1024xf32>>
// CHECK: offload.wait %[[G]]#1
// CHECK: offload.wait %[[G]]#0
// Starts and waits are never merged or dropped.
// CANON-LABEL: func @round_trip
// CANON: offload.offload_group_start
// CANON-COUNT-2: offload.wait
// CANON: offload.load_group_start
// CANON-COUNT-2: offload.wait
func.func @round_trip(%x: tensor<1024xf32>, %y: tensor<256xbf16>) -> (tensor<1024xf32>, tensor<256xbf16>) {
  %f:2 = offload.offload_group_start %x, %y : tensor<1024xf32>, tensor<256xbf16>
      -> !offload.future<tensor<1024xf32, #offload.host>>, !offload.future<tensor<256xbf16, #offload.host>>
  %h0 = offload.wait %f#0 : !offload.future<tensor<1024xf32, #offload.host>>
  %h1 = offload.wait %f#1 : !offload.future<tensor<256xbf16, #offload.host>>
  %g:2 = offload.load_group_start %h1, %h0 : tensor<256xbf16, #offload.host>, tensor<1024xf32, #offload.host>
      -> !offload.future<tensor<256xbf16>>, !offload.future<tensor<1024xf32>>
  %d0 = offload.wait %g#1 : !offload.future<tensor<1024xf32>>
  %d1 = offload.wait %g#0 : !offload.future<tensor<256xbf16>>
  return %d0, %d1 : tensor<1024xf32>, tensor<256xbf16>
}

// -----

func.func @one_member(%x: tensor<4xf32>) {
  // expected-error @below {{groups at least two copies; one copy is a single start}}
  %f = offload.offload_group_start %x : tensor<4xf32> -> !offload.future<tensor<4xf32, #offload.host>>
  %h = offload.wait %f : !offload.future<tensor<4xf32, #offload.host>>
  return
}

// -----

func.func @counts(%x: tensor<4xf32>, %y: tensor<4xf32>) {
  // expected-error @below {{has 2 sources but 1 futures}}
  %f = "offload.offload_group_start"(%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> !offload.future<tensor<4xf32, #offload.host>>
  %h = offload.wait %f : !offload.future<tensor<4xf32, #offload.host>>
  return
}

// -----

func.func @member_types(%x: tensor<4xf32>, %y: tensor<8xf32>) {
  // expected-error @below {{shape}}
  %f:2 = offload.offload_group_start %x, %y : tensor<4xf32>, tensor<8xf32>
      -> !offload.future<tensor<4xf32, #offload.host>>, !offload.future<tensor<4xf32, #offload.host>>
  %h0 = offload.wait %f#0 : !offload.future<tensor<4xf32, #offload.host>>
  %h1 = offload.wait %f#1 : !offload.future<tensor<4xf32, #offload.host>>
  return
}

// -----

func.func @unwaited_load(%a: tensor<4xf32, #offload.host>, %b: tensor<4xf32, #offload.host>) -> tensor<4xf32> {
  // expected-error @below {{starts a load that is never waited: each future must be read by one 'offload.wait' in this block}}
  %g:2 = offload.load_group_start %a, %b : tensor<4xf32, #offload.host>, tensor<4xf32, #offload.host>
      -> !offload.future<tensor<4xf32>>, !offload.future<tensor<4xf32>>
  %d = offload.wait %g#0 : !offload.future<tensor<4xf32>>
  return %d : tensor<4xf32>
}

// -----

func.func @waited_twice(%a: tensor<4xf32, #offload.host>, %b: tensor<4xf32, #offload.host>) -> tensor<4xf32> {
  // expected-error @below {{future is waited more than once}}
  %g:2 = offload.load_group_start %a, %b : tensor<4xf32, #offload.host>, tensor<4xf32, #offload.host>
      -> !offload.future<tensor<4xf32>>, !offload.future<tensor<4xf32>>
  %d = offload.wait %g#0 : !offload.future<tensor<4xf32>>
  %e = offload.wait %g#1 : !offload.future<tensor<4xf32>>
  %f = offload.wait %g#1 : !offload.future<tensor<4xf32>>
  return %d : tensor<4xf32>
}

// -----

func.func @host_source(%a: tensor<4xf32, #offload.host>, %b: tensor<4xf32>) {
  // expected-error @below {{operand #0 must be variadic of device-resident ranked tensor or}}
  %f:2 = offload.offload_group_start %a, %b : tensor<4xf32, #offload.host>, tensor<4xf32>
      -> !offload.future<tensor<4xf32, #offload.host>>, !offload.future<tensor<4xf32, #offload.host>>
  return
}
