// saved-instances: the shipped Llama-3 layer compiled once and run as the
// eight layers of a model compiled per layer. When forward ends, every
// layer's saved values are on the device together, so what one layer keeps
// through forward counts eight times. Alone (saved-instances=1), the layer's
// own peak is in backward and the SwiGLU product (view_10, 224 MiB, cheap
// to compute again from the two saved projections) stays saved; as one of
// eight, the joint plan recomputes it, within the same step-time allowance.
// RUN: offload-opt %S/../Examples/llama_block_mincut.mlir \
// RUN:   --offload-activations="min-bytes=1048576 release=at-wait fuse-memory-bound=true report=text device-profile=%S/../../python/offload_mlir/profiles/h200.json" \
// RUN:   -o /dev/null 2>&1 | FileCheck %s --check-prefix=ALONE
// RUN: offload-opt %S/../Examples/llama_block_mincut.mlir \
// RUN:   --offload-activations="min-bytes=1048576 release=at-wait fuse-memory-bound=true report=text device-profile=%S/../../python/offload_mlir/profiles/h200.json saved-instances=8" \
// RUN:   -o /dev/null 2>&1 | FileCheck %s --check-prefix=EIGHT
// RUN: offload-opt %S/../Examples/llama_block_mincut.mlir \
// RUN:   --offload-activations="min-bytes=1048576 release=at-wait fuse-memory-bound=true report=json device-profile=%S/../../python/offload_mlir/profiles/h200.json saved-instances=8" \
// RUN:   -o /dev/null 2>&1 | FileCheck %s --check-prefix=JSON

// ALONE: {{^ +}}20  aten.view.default "view_10" {{.*}} 224.0 MiB  kept: plan: its copy cannot be hidden under compute
// ALONE-NOT: recomputed by the plan
// ALONE: predicted (h200-calibrated): moved 257.0 MiB to host and 257.0 MiB back; peak device memory 2.2 GiB -> 1.9 GiB
// ALONE-NOT: saved-instances=

// The peaks count the other seven layers' kept saved intermediates: 6.1 GiB
// (0.87 GiB each) without copies, 4.4 GiB (0.63 GiB each) with the plan.
// EIGHT-NOT: "view_10" {{.*}} kept:
// EIGHT: recomputed by the plan: "view_10" (224.0 MiB, 5 forward ops) before backward #2
// EIGHT: predicted (h200-calibrated): moved 257.0 MiB to host and 257.0 MiB back; peak device memory 8.3 GiB -> 6.3 GiB
// EIGHT-NEXT: saved-instances=8: the peaks include the saved values the 7 other instances keep on the device, 6.1 GiB -> 4.4 GiB

// JSON: "saved_instances": {
// JSON-NEXT: "held_bytes_after": 4{{[0-9]+}},
// JSON-NEXT: "held_bytes_before": 6{{[0-9]+}},
// JSON-NEXT: "instances": 8
