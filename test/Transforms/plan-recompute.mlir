// offload-plan plans recomputation with the copies on the shipped Llama-3
// layer as Inductor's min-cut partition saves it. Three saved values are
// cheap to compute again from values backward keeps anyway: the SwiGLU
// product (view_10, from the two saved MLP projections) and the two RMSNorm
// outputs (view, view_8, from the layer input, the saved attention output
// and the saved inverse norms). With budget=0.8 the joint plan recomputes
// them and offloads less than the offload-only plan, for a shorter step.
// RUN: offload-opt %S/../Examples/llama_block_mincut.mlir \
// RUN:   --offload-activations="budget=0.8 min-bytes=1048576 release=at-wait fuse-memory-bound=true report=text" -o %t.mlir 2>&1 | \
// RUN:   FileCheck %s --check-prefix=JOINT
// RUN: FileCheck %s --check-prefix=IR < %t.mlir
// RUN: offload-opt %S/../Examples/llama_block_mincut.mlir \
// RUN:   --offload-activations="budget=0.8 recompute=false min-bytes=1048576 release=at-wait fuse-memory-bound=true report=text" -o /dev/null 2>&1 | \
// RUN:   FileCheck %s --check-prefix=COPIES
// The joint plan lowers to LLVM dialect: the recomputations are inlined
// after scheduling and bufferize with the rest.
// RUN: offload-opt %t.mlir --offload-inline-recomputes --convert-trace-to-calls \
// RUN:   --one-shot-bufferize="bufferize-function-boundaries use-encoding-for-memory-space function-boundary-type-conversion=identity-layout-map" \
// RUN:   --convert-offload-to-llvm --finalize-memref-to-llvm=use-generic-functions --convert-func-to-llvm --convert-arith-to-llvm \
// RUN:   --reconcile-unrealized-casts | FileCheck %s --check-prefix=LLVM

// JOINT: recomputed by the plan: "view_10" (224.0 MiB, 5 forward ops) before backward #{{[0-9]+}}, predicted {{[0-9.]+}} us
// JOINT: recomputed by the plan: "view_8" (64.0 MiB, 7 forward ops)
// JOINT: recomputed by the plan: "view" (64.0 MiB, 5 forward ops)
// JOINT: predicted (h100-pcie5): moved 320.0 MiB to host and 320.0 MiB back; peak device memory 2.0 GiB -> 1.7 GiB; step 16.608 ms -> 19.420 ms
// JOINT: before the plan's recomputation (the step as it came): peak device memory 2.2 GiB; step 16.256 ms

// COPIES-NOT: recomputed by the plan
// COPIES: predicted (h100-pcie5): moved 448.0 MiB to host and 448.0 MiB back; peak device memory 2.2 GiB -> 1.7 GiB; step 16.256 ms -> 21.935 ms

// The recomputed values leave the interface (28 saved results, 25 left),
// and backward reads the loaded attention output in view_8's recomputation.
// IR-LABEL: func.func @forward
// IR-SAME: offload.planned = {peak_bytes = {{[0-9]+}} : i64, step_seconds = {{.*}} : f64, unplanned_peak_bytes = {{[0-9]+}} : i64, unplanned_step_seconds = {{.*}} : f64}
// IR-LABEL: func.func @backward
// IR: %[[MM3:.*]] = offload.wait %{{.*}} : !offload.future<tensor<8192x4096xbf16>>
// IR-NEXT: offload.recompute(%[[MM3]], %{{.*}}, %{{.*}}, %{{.*}}) {name = "view_8"}

// LLVM-LABEL: llvm.func @backward
// LLVM-NOT: offload.recompute
// LLVM: llvm.call @aten.silu.default
