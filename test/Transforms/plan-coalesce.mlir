// With coalesce-below, the planner predicts the copy groups that
// offload-schedule-copies forms (StepModel::coalesceCopies on both sides),
// so its recorded prediction is the report's. On the 8-layer Llama step,
// small loads issued before one op (the norms' 32 KiB rstd values and the
// attention's 1 MiB logsumexp) move as one transfer each.
// RUN: offload-opt %S/../Examples/llama_8layers.mlir \
// RUN:   --offload-activations="min-bytes=1024 recompute=false plan=hidden coalesce-below=4MiB report=text" -o %t.mlir 2>&1 | \
// RUN:   FileCheck %s --check-prefix=REPORT
// RUN: FileCheck %s --check-prefix=IR < %t.mlir

// REPORT: predicted (h100-pcie5): {{.*}} peak device memory {{.*}} -> [[PEAK:[0-9.]+ [KMG]?i?B]]; step {{.*}} -> [[STEP:[0-9.]+ [mu]?s]]
// REPORT-NEXT: offload-plan predicted for its plan: peak device memory [[PEAK]]; step [[STEP]]

// IR-LABEL: func.func @backward
// IR: offload.load_group_start %{{.*}} : tensor<8x1024x1xf32, #offload.host>, tensor<8x32x1024x1xf32, #offload.host>, {{.*}} ->
// IR-SAME: !offload.future<tensor<8x1024x1xf32>>, !offload.future<tensor<8x32x1024x1xf32>>
