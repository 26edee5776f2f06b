// The verifier of `offload.placement` checks what the op says on its own:
// at least one saved value, each an index >= 0 and named once. Where it
// stands and whether its step has those values is offload-schedule-copies'
// to judge (Transforms/schedule-copies-recorded.mlir). offload-plan's old
// placement attributes are no offload attributes any more.
// RUN: offload-opt %s -split-input-file -verify-diagnostics

func.func @placement_names_nothing() {
  // expected-error @below {{'offload.placement' op names no saved value}}
  offload.placement load_starts []
  return
}

// -----

func.func @placement_negative_index() {
  // expected-error @below {{'offload.placement' op names saved value -1; saved value indices are >= 0}}
  offload.placement offload_waits [0, -1]
  return
}

// -----

func.func @placement_index_twice() {
  // expected-error @below {{'offload.placement' op names saved value 2 twice}}
  offload.placement load_starts [2, 0, 2]
  return
}

// -----

func.func @placement_unknown_kind() {
  // expected-error @below {{expected string or keyword containing one of the following enum values for attribute 'kind' [load_starts, offload_waits]}}
  offload.placement load_waits [0]
  return
}

// -----

func.func @placement_generic_kind_out_of_range() {
  // expected-error @below {{Invalid attribute `kind` in property conversion: 7 : i32}}
  "offload.placement"() <{kind = 7 : i32, saved = array<i64: 0>}> : () -> ()
  return
}

// -----

func.func @load_starts_attribute_is_gone(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{unknown offload attribute 'offload.load_starts'}}
  %e = math.exp %x {offload.load_starts = array<i64: 0>} : tensor<4xf32>
  return %e : tensor<4xf32>
}
