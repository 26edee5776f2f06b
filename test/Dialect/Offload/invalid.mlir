// RUN: offload-opt %s -split-input-file -verify-diagnostics

func.func @offload_host_value(%h: tensor<4xf32, #offload.host>) {
  // expected-error @+1 {{operand #0 must be device-resident ranked tensor}}
  %0 = offload.offload_to_cpu %h : tensor<4xf32, #offload.host> -> tensor<4xf32, #offload.host>
  return
}

// -----

func.func @load_device_value(%x: tensor<4xf32>) {
  // expected-error @+1 {{operand #0 must be host-resident ranked tensor (encoding #offload.host)}}
  %0 = offload.load_to_gpu %x : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @offload_to_device_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{result #0 must be host-resident ranked tensor}}
  %0 = offload.offload_to_cpu %x : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @offload_shape_mismatch(%x: tensor<4xf32>) {
  // expected-error @+1 {{result 'tensor<8xf32, #offload.host>' must have the shape and element type of source 'tensor<4xf32>'}}
  %0 = offload.offload_to_cpu %x : tensor<4xf32> -> tensor<8xf32, #offload.host>
  return
}

// -----

func.func @load_element_type_mismatch(%h: tensor<4xf32, #offload.host>) {
  // expected-error @+1 {{must have the shape and element type of source}}
  %0 = offload.load_to_gpu %h : tensor<4xf32, #offload.host> -> tensor<4xbf16>
  return
}

// -----

func.func @generic_form_mismatch(%x: tensor<4xf32>) {
  // expected-error @+1 {{must have the shape and element type of source}}
  %0 = "offload.offload_to_cpu"(%x) : (tensor<4xf32>) -> tensor<4xf16, #offload.host>
  return
}

// -----

func.func @unranked(%x: tensor<*xf32>) {
  // expected-error @+1 {{operand #0 must be device-resident ranked tensor}}
  %0 = "offload.offload_to_cpu"(%x) : (tensor<*xf32>) -> tensor<4xf32, #offload.host>
  return
}

// -----

// expected-error @+1 {{expects 'offload.keep' to be a unit attribute}}
func.func @keep_not_unit() attributes {offload.keep = 1 : i64} {
  return
}

// -----

// expected-error @+1 {{unknown offload attribute 'offload.bogus'}}
func.func @unknown_attr() attributes {offload.bogus} {
  return
}

// -----

// Futures that cross from forward to backward (offload-waits-in-backward):
// forward may return an offload's future as a saved result; backward waits
// for it exactly once. Everything else is refused.

// A load is waited where it starts: forward may not return its future. (The
// cast makes the saved result look like an offload's, so that the training
// step's own check of saved futures lets the op's check speak.)
func.func @forward(%x: tensor<4xf32>, %h: tensor<4xf32, #offload.host>) -> (tensor<4xf32>, !offload.future<tensor<4xf32, #offload.host>>)
    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
  // expected-error @+1 {{'offload.load_start' op future of a load is returned: a load must be waited in the block that starts it}}
  %f = offload.load_start %h : tensor<4xf32, #offload.host> -> !offload.future<tensor<4xf32>>
  %c = builtin.unrealized_conversion_cast %f : !offload.future<tensor<4xf32>> to !offload.future<tensor<4xf32, #offload.host>>
  return %x, %c : tensor<4xf32>, !offload.future<tensor<4xf32, #offload.host>>
}
func.func @backward(%s: !offload.future<tensor<4xf32, #offload.host>>, %g: tensor<4xf32>) -> tensor<4xf32> {
  %h = offload.wait %s : !offload.future<tensor<4xf32, #offload.host>>
  return %g : tensor<4xf32>
}

// -----

// Only forward's return and one wait may read an offload's future (a plain
// function's return is refused too: async.mlir).
func.func private @consume(!offload.future<tensor<4xf32, #offload.host>>)
func.func @forward(%x: tensor<4xf32>) -> (tensor<4xf32>, !offload.future<tensor<4xf32, #offload.host>>)
    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
  // expected-error @+1 {{'offload.offload_start' op future may only be read by 'offload.wait', or returned by a forward function for backward to wait, not by 'func.call'}}
  %f = offload.offload_start %x : tensor<4xf32> -> !offload.future<tensor<4xf32, #offload.host>>
  func.call @consume(%f) : (!offload.future<tensor<4xf32, #offload.host>>) -> ()
  return %x, %f : tensor<4xf32>, !offload.future<tensor<4xf32, #offload.host>>
}
func.func @backward(%s: !offload.future<tensor<4xf32, #offload.host>>, %g: tensor<4xf32>) -> tensor<4xf32> {
  %h = offload.wait %s : !offload.future<tensor<4xf32, #offload.host>>
  return %g : tensor<4xf32>
}

// -----

// Returning the future is its wait: forward may not wait for it too.
func.func @forward(%x: tensor<4xf32>) -> (tensor<4xf32>, !offload.future<tensor<4xf32, #offload.host>>)
    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
  // expected-error @+1 {{'offload.offload_start' op future is waited more than once}}
  %f = offload.offload_start %x : tensor<4xf32> -> !offload.future<tensor<4xf32, #offload.host>>
  %h = offload.wait %f : !offload.future<tensor<4xf32, #offload.host>>
  return %x, %f : tensor<4xf32>, !offload.future<tensor<4xf32, #offload.host>>
}
func.func @backward(%s: !offload.future<tensor<4xf32, #offload.host>>, %g: tensor<4xf32>) -> tensor<4xf32> {
  %h = offload.wait %s : !offload.future<tensor<4xf32, #offload.host>>
  return %g : tensor<4xf32>
}

// -----

// The same for a group's future.
func.func @forward(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, !offload.future<tensor<4xf32, #offload.host>>, !offload.future<tensor<4xf32, #offload.host>>)
    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
  // expected-error @+1 {{'offload.offload_group_start' op future is waited more than once}}
  %f:2 = offload.offload_group_start %x, %y : tensor<4xf32>, tensor<4xf32> -> !offload.future<tensor<4xf32, #offload.host>>, !offload.future<tensor<4xf32, #offload.host>>
  %h = offload.wait %f#1 : !offload.future<tensor<4xf32, #offload.host>>
  return %x, %f#0, %f#1 : tensor<4xf32>, !offload.future<tensor<4xf32, #offload.host>>, !offload.future<tensor<4xf32, #offload.host>>
}
func.func @backward(%s: !offload.future<tensor<4xf32, #offload.host>>, %t: !offload.future<tensor<4xf32, #offload.host>>, %g: tensor<4xf32>) -> tensor<4xf32> {
  %h = offload.wait %s : !offload.future<tensor<4xf32, #offload.host>>
  %k = offload.wait %t : !offload.future<tensor<4xf32, #offload.host>>
  return %g : tensor<4xf32>
}

// -----

// An output goes to the caller, which does not wait: only saved results may
// be futures.
// expected-error @+1 {{result #0 is a future, but only saved results (past 'offload.num_outputs') may carry a copy in flight to backward}}
func.func @forward(%x: tensor<4xf32>) -> (!offload.future<tensor<4xf32, #offload.host>>, tensor<4xf32>)
    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
  %f = offload.offload_start %x : tensor<4xf32> -> !offload.future<tensor<4xf32, #offload.host>>
  return %f, %x : !offload.future<tensor<4xf32, #offload.host>>, tensor<4xf32>
}
func.func @backward(%s: tensor<4xf32>, %g: !offload.future<tensor<4xf32, #offload.host>>) -> tensor<4xf32> {
  return %s : tensor<4xf32>
}

// -----

// expected-error @+1 {{saved result #1 is the future of a load; only offloads may be waited for in backward}}
func.func @forward(%x: tensor<4xf32>, %h: tensor<4xf32, #offload.host>) -> (tensor<4xf32>, !offload.future<tensor<4xf32>>)
    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
  %f = offload.load_start %h : tensor<4xf32, #offload.host> -> !offload.future<tensor<4xf32>>
  return %x, %f : tensor<4xf32>, !offload.future<tensor<4xf32>>
}
func.func @backward(%s: !offload.future<tensor<4xf32>>, %g: tensor<4xf32>) -> tensor<4xf32> {
  %v = offload.wait %s : !offload.future<tensor<4xf32>>
  return %v : tensor<4xf32>
}

// -----

func.func @forward(%x: tensor<4xf32>) -> (tensor<4xf32>, !offload.future<tensor<4xf32, #offload.host>>)
    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
  %f = offload.offload_start %x : tensor<4xf32> -> !offload.future<tensor<4xf32, #offload.host>>
  return %x, %f : tensor<4xf32>, !offload.future<tensor<4xf32, #offload.host>>
}
func.func @backward(%s: !offload.future<tensor<4xf32, #offload.host>>, %g: tensor<4xf32>) -> !offload.future<tensor<4xf32, #offload.host>> {
  // expected-error @+1 {{'func.return' op reads saved future #0; only one 'offload.wait' may read it}}
  return %s : !offload.future<tensor<4xf32, #offload.host>>
}

// -----

func.func @forward(%x: tensor<4xf32>) -> (tensor<4xf32>, !offload.future<tensor<4xf32, #offload.host>>)
    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
  %f = offload.offload_start %x : tensor<4xf32> -> !offload.future<tensor<4xf32, #offload.host>>
  return %x, %f : tensor<4xf32>, !offload.future<tensor<4xf32, #offload.host>>
}
// expected-error @+1 {{argument #0 is a future of an offload forward started; backward must wait for it exactly once, but waits 0 times}}
func.func @backward(%s: !offload.future<tensor<4xf32, #offload.host>>, %g: tensor<4xf32>) -> tensor<4xf32> {
  return %g : tensor<4xf32>
}

// -----

func.func @forward(%x: tensor<4xf32>) -> (tensor<4xf32>, !offload.future<tensor<4xf32, #offload.host>>)
    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
  %f = offload.offload_start %x : tensor<4xf32> -> !offload.future<tensor<4xf32, #offload.host>>
  return %x, %f : tensor<4xf32>, !offload.future<tensor<4xf32, #offload.host>>
}
// expected-error @+1 {{argument #0 is a future of an offload forward started; backward must wait for it exactly once, but waits 2 times}}
func.func @backward(%s: !offload.future<tensor<4xf32, #offload.host>>, %g: tensor<4xf32>) -> tensor<4xf32> {
  %a = offload.wait %s : !offload.future<tensor<4xf32, #offload.host>>
  %b = offload.wait %s : !offload.future<tensor<4xf32, #offload.host>>
  return %g : tensor<4xf32>
}

// -----

// The wait is in backward's entry block, not in a region below it.
func.func @forward(%x: tensor<4xf32>) -> (tensor<4xf32>, !offload.future<tensor<4xf32, #offload.host>>)
    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
  %f = offload.offload_start %x : tensor<4xf32> -> !offload.future<tensor<4xf32, #offload.host>>
  return %x, %f : tensor<4xf32>, !offload.future<tensor<4xf32, #offload.host>>
}
func.func @backward(%s: !offload.future<tensor<4xf32, #offload.host>>, %g: tensor<4xf32>, %c: i1) -> tensor<4xf32> {
  scf.if %c {
    // expected-error @+1 {{'offload.wait' op reads saved future #0 outside the entry block of backward, which must wait for it}}
    %h = offload.wait %s : !offload.future<tensor<4xf32, #offload.host>>
  }
  return %g : tensor<4xf32>
}
