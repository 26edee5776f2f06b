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

// expected-error @+1 {{'offload.prefetch' is only valid on a load start}}
func.func @prefetch_not_on_a_load() attributes {offload.prefetch} {
  return
}

// -----

// expected-error @+1 {{expects 'offload.prefetch_issue' to be a unit attribute}}
func.func @prefetch_issue_not_unit() attributes {offload.prefetch_issue = 2 : i64} {
  return
}

// -----

// expected-error @+1 {{'offload.deferred' is only valid on an offload's wait}}
func.func @deferred_not_on_a_wait() attributes {offload.deferred} {
  return
}
