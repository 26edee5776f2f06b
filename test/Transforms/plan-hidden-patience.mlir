// plan=hidden stops trying candidates after `hidden-patience` of them in a
// row were simulated and dropped (default 64; 0 tries every candidate, exact
// first fit). On the 8-layer Llama step the default gives first fit's plan;
// a patience of 16 stops before the small values that fit after a long run
// of drops (the same bytes: the 18 values it leaves are small).
//
// In a run of drops the planner simulates the next candidates at once, on
// the context's threads; the plan is the same as one by one (patience
// counted the same), so the IR is the same with threading disabled.
// RUN: offload-opt %S/../Examples/llama_8layers.mlir --offload-activations="min-bytes=1024 recompute=false plan=hidden report=text" -o /dev/null 2>&1 | FileCheck %s --check-prefix=DEFAULT
// RUN: offload-opt %S/../Examples/llama_8layers.mlir --offload-activations="min-bytes=1024 recompute=false plan=hidden hidden-patience=0 report=text" \
// RUN:   -o /dev/null 2>&1 | FileCheck %s --check-prefix=DEFAULT
// RUN: offload-opt %S/../Examples/llama_8layers.mlir \
// RUN:   --offload-activations="min-bytes=1024 recompute=false plan=hidden hidden-patience=16 report=text" -o /dev/null 2>&1 | \
// RUN:   FileCheck %s --check-prefix=SHORT
// RUN: offload-opt %S/../Examples/llama_8layers.mlir --mlir-disable-threading \
// RUN:   --offload-activations="min-bytes=1024 recompute=false plan=hidden hidden-patience=16 report=text" -o /dev/null 2>&1 | \
// RUN:   FileCheck %s --check-prefix=SHORT
// RUN: offload-opt %S/../Examples/llama_8layers.mlir --offload-activations="min-bytes=1024 recompute=false plan=hidden" -o %t.threads
// RUN: offload-opt %S/../Examples/llama_8layers.mlir --mlir-disable-threading --offload-activations="min-bytes=1024 recompute=false plan=hidden" -o %t.serial
// RUN: diff %t.threads %t.serial

// DEFAULT: total: offloaded 37 values, 3.8 GiB
// SHORT: total: offloaded 19 values, 3.8 GiB
