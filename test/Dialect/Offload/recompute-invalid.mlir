// RUN: offload-opt %s -split-input-file -verify-diagnostics

func.func @host_input(%h: tensor<4xf32, #offload.host>) -> tensor<4xf32> {
  // expected-error @below {{input #0 is 'tensor<4xf32, #offload.host>': a recomputation reads device values only}}
  %r = offload.recompute(%h) {name = "n"} : (tensor<4xf32, #offload.host>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32, #offload.host>):
    %z = tensor.empty() : tensor<4xf32>
    offload.yield %z : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @effects(%x: memref<4xf32>, %v: f32) -> tensor<4xf32> {
  %t = tensor.empty() : tensor<4xf32>
  // expected-error @below {{'offload.recompute' op body argument #0 is 'tensor<4xf32>', input #0 is 'memref<4xf32>'}}
  %r = offload.recompute(%x) {name = "n"} : (memref<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    offload.yield %a : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @writes(%x: memref<4xf32>, %v: f32) -> memref<4xf32> {
  %r = offload.recompute(%x, %v) {name = "n"} : (memref<4xf32>, f32) -> memref<4xf32> {
  ^bb0(%a: memref<4xf32>, %b: f32):
    %c0 = arith.constant 0 : index
    // expected-error @below {{has memory effects; the body of 'offload.recompute' must be free of side effects}}
    memref.store %b, %a[%c0] : memref<4xf32>
    offload.yield %a : memref<4xf32>
  }
  return %r : memref<4xf32>
}

// -----

func.func @yield_type(%x: tensor<4xf32>) -> tensor<8xf32> {
  // expected-error @below {{yields 'tensor<4xf32>' but its result is 'tensor<8xf32>'}}
  %r = offload.recompute(%x) {name = "n"} : (tensor<4xf32>) -> tensor<8xf32> {
  ^bb0(%a: tensor<4xf32>):
    offload.yield %a : tensor<4xf32>
  }
  return %r : tensor<8xf32>
}

// -----

func.func @isolated(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-note @below {{required by region isolation constraints}}
  %r = offload.recompute() {name = "n"} : () -> tensor<4xf32> {
    // expected-error @below {{using value defined outside the region}}
    %m = math.exp %x : tensor<4xf32>
    offload.yield %m : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @no_name(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{expects a non-empty 'name'}}
  %r = offload.recompute(%x) {name = ""} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    offload.yield %a : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
