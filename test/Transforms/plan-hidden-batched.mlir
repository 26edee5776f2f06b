// plan=hidden decides candidates in batches and rules some out with a lower
// bound on the step time (docs/scaling.md); wherever adding offloads never
// shortens the predicted step, its plan is that of first fit, one
// simulation per candidate. The counts below are first fit's, from the
// planner before batching (commit 785f365), on the 3k-op synthetic step of
// python/benchmarks/scaling.py: with synchronous loads the bound rules out
// all but a few candidates; with schedule=true a long run of candidates is
// kept, then the rest are dropped. (copy-margin=0: planned with the
// profile as it is, as first fit was.)
// RUN: %python %offload_src/python/benchmarks/scaling.py --emit-only %t --sizes 3000 > /dev/null
// RUN: offload-opt %t/scaling_3000.mlir \
// RUN:   --offload-activations="min-bytes=1024 recompute=false schedule=false plan=hidden max-slowdown=0.01 copy-margin=0 report=json report-file=-" -o \
// RUN:   /dev/null | FileCheck %s --check-prefix=SYNC
// RUN: offload-opt %t/scaling_3000.mlir \
// RUN:   --offload-activations="min-bytes=1024 recompute=false plan=hidden max-slowdown=0.01 copy-margin=0 schedule=true report=json report-file=-" -o \
// RUN:   /dev/null | FileCheck %s --check-prefix=SCHED
// SYNC: "offloaded_values": 3,
// SYNC: "step_seconds_after": 0.00390118296436358
// SCHED: "offloaded_values": 191,
// SCHED: "step_seconds_after": 0.00388286128601604
