// A scheduled budget plan is never worse than the synchronous one. With
// release=at-wait a scheduled offload holds its source until its wait,
// where forward no longer stalls for the copy; a synchronous copy frees it
// at once, at the price of the stall. So on llama_block with the PyTorch
// bridge's options a budget of 0.8 is out of reach scheduled (the smallest
// scheduled peak is above it) but not synchronously. The planner then
// plans synchronously and records those placements (each offload waited
// right after it starts, each load started at its wait), which
// offload-schedule-copies follows: the same plan, peak and step as
// schedule=false, and the report agrees with the planner. The profile is a
// fixed copy of the H100's of 2026-11-23, so that recalibrating the shipped
// one does not move the budget this premise rests on.
// RUN: offload-opt %S/../Examples/llama_block.mlir \
// RUN:   --offload-activations="recompute=false budget=0.8 min-bytes=1048576 release=at-wait fuse-memory-bound=true device-profile=%S/Inputs/h100-sxm-2026-11-23.json report=text" \
// RUN:   -o %t.mlir 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=IR --implicit-check-not=offload.placement < %t.mlir
// RUN: offload-opt %S/../Examples/llama_block.mlir \
// RUN:   --offload-activations="recompute=false budget=0.8 schedule=false min-bytes=1048576 release=at-wait fuse-memory-bound=true device-profile=%S/Inputs/h100-sxm-2026-11-23.json report=text" \
// RUN:   -o /dev/null 2>&1 | FileCheck %s

// CHECK: total: offloaded 4 values, 544.0 MiB
// CHECK: peak device memory 2.5 GiB -> 2.0 GiB; step 17.271 ms -> 38.589 ms
// CHECK-NOT: offload-plan predicted for its plan: {{.*}} 17.
// CHECK-NOT: error

// IR-LABEL: func.func @forward
// IR: %[[F:.*]] = offload.offload_start
// IR-NEXT: offload.wait %[[F]]
// IR: %[[G:.*]] = offload.offload_start
// IR-NEXT: offload.wait %[[G]]
// IR-LABEL: func.func @backward
