// offload-plan's placements (the `offload.load_starts` and
// `offload.offload_waits` stamps) hold under any pass order:
//  - canonicalize, cse and inline between planning and scheduling change
//    nothing: the scheduled step is the one the planner predicted;
//  - a new plan replaces the stamps of the old one (a plan that records
//    none leaves none);
//  - a copy whose stamp another pass dropped is placed by the cost model,
//    with a remark saying so, instead of staying at its wait silently;
//  - no stamp outlives the lowering.
// RUN: offload-opt %S/../Examples/tiny_block.mlir --offload-find-saved-activations="min-bytes=0" --offload-plan="plan=hidden schedule=true max-slowdown=0.5 recompute=false" -o %t.planned.mlir
// RUN: offload-opt %t.planned.mlir --canonicalize --cse --inline --offload-insert-offloads --offload-reorder-backward --offload-insert-loads \
// RUN:   --canonicalize --cse --offload-schedule-copies --offload-report -o /dev/null 2>&1 | FileCheck %s --check-prefix=BETWEEN
// BETWEEN: predicted ({{.*}}): {{.*}} -> [[PEAK:[0-9.]+ [KMG]?i?B]]; step {{.*}} -> [[STEP:[0-9.]+ [mu]s]] (
// BETWEEN-NEXT: offload-plan predicted for its plan: peak device memory [[PEAK]]; step [[STEP]]

// RUN: offload-opt %t.planned.mlir --offload-plan="plan=hidden schedule=false max-slowdown=0.5" | FileCheck %s --check-prefix=REPLACED
// REPLACED-NOT: offload.load_starts
// REPLACED-NOT: offload.offload_waits

// RUN: sed -e 's/offload\.load_starts/dropped_load_starts/' %t.planned.mlir | offload-opt --offload-insert-offloads --offload-reorder-backward \
// RUN:   --offload-insert-loads --offload-schedule-copies -o /dev/null 2>&1 | FileCheck %s --check-prefix=DROPPED
// DROPPED: remark: offload-plan's placement of this copy is gone (another pass dropped its stamp); placed by the cost model instead

// RUN: offload-opt %t.planned.mlir --convert-offload-to-llvm | FileCheck %s --check-prefix=LOWERED
// LOWERED-NOT: offload.load_starts
// LOWERED-NOT: offload.offload_waits
