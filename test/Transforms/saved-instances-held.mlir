// What saved-instances=3 counts: the forward intermediates a plan keeps for
// backward, twice more (the two other instances). %e and %f (4000 bytes
// each) are intermediates; %x is an argument, the caller's memory, held
// once however many instances run, and not counted.
// RUN: offload-opt %s -offload-report="saved-instances=3 format=json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=KEPT
// RUN: offload-opt %s --offload-activations="plan=all min-bytes=0 saved-instances=3 report=json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=OFFLOADED
// RUN: offload-opt %s -offload-report="format=json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ALONE

// Without copies every intermediate stays: 2 x 8000 bytes before and after.
// KEPT: "saved_instances": {
// KEPT-NEXT: "held_bytes_after": 16000,
// KEPT-NEXT: "held_bytes_before": 16000,
// KEPT-NEXT: "instances": 3

// With both offloaded, the other instances hold none of them.
// OFFLOADED: "saved_instances": {
// OFFLOADED-NEXT: "held_bytes_after": 0,
// OFFLOADED-NEXT: "held_bytes_before": 16000,

// One instance: no entry.
// ALONE-NOT: "saved_instances"

func.func @saved_instances_held_forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32>, tensor<1000xf32>, tensor<1000xf32>)
    attributes {offload.backward = @saved_instances_held_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1000xf32>
  %f = math.sin %e : tensor<1000xf32>
  %z = math.sin %f : tensor<1000xf32>
  return %z, %x, %e, %f : tensor<1000xf32>, tensor<1000xf32>, tensor<1000xf32>, tensor<1000xf32>
}
func.func @saved_instances_held_backward(%sx: tensor<1000xf32>, %se: tensor<1000xf32>, %sf: tensor<1000xf32>, %g: tensor<1000xf32>) -> tensor<1000xf32> {
  %a = arith.mulf %g, %sf : tensor<1000xf32>
  %b = arith.mulf %a, %se : tensor<1000xf32>
  %c = arith.mulf %b, %sx : tensor<1000xf32>
  return %c : tensor<1000xf32>
}
