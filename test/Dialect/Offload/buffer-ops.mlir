// RUN: offload-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: offload-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | offload-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func @round_trip
// CHECK: %[[H:.*]] = offload.offload_buffer %{{.*}} : memref<4x8xbf16> -> memref<4x8xbf16, #offload.host>
// CHECK: offload.load_buffer %[[H]] : memref<4x8xbf16, #offload.host> -> memref<4x8xbf16>
func.func @round_trip(%d: memref<4x8xbf16>) -> memref<4x8xbf16> {
  %h = offload.offload_buffer %d : memref<4x8xbf16> -> memref<4x8xbf16, #offload.host>
  %l = offload.load_buffer %h : memref<4x8xbf16, #offload.host> -> memref<4x8xbf16>
  return %l : memref<4x8xbf16>
}

// -----

func.func @offload_host_buffer(%h: memref<4xf32, #offload.host>) {
  // expected-error @+1 {{operand #0 must be device-resident ranked memref}}
  %0 = offload.offload_buffer %h : memref<4xf32, #offload.host> -> memref<4xf32, #offload.host>
  return
}

// -----

func.func @load_device_buffer(%d: memref<4xf32>) {
  // expected-error @+1 {{operand #0 must be host-resident ranked memref}}
  %0 = offload.load_buffer %d : memref<4xf32> -> memref<4xf32>
  return
}

// -----

func.func @shape_mismatch(%d: memref<4xf32>) {
  // expected-error @+1 {{result 'memref<8xf32, #offload.host>' must have the shape and element type of source 'memref<4xf32>'}}
  %0 = offload.offload_buffer %d : memref<4xf32> -> memref<8xf32, #offload.host>
  return
}

// -----

func.func @strided_result(%h: memref<4xf32, #offload.host>) {
  // expected-error @+1 {{result 'memref<4xf32, strided<[2]>>' must have an identity layout (it is a new allocation)}}
  %0 = offload.load_buffer %h : memref<4xf32, #offload.host> -> memref<4xf32, strided<[2]>>
  return
}
