// budget= runs its greedy lazily and in batches (docs/scaling.md): a
// candidate's last known effect bounds its current one, and a batch is taken
// when its simulation shows every member had exactly that effect. Where that
// assumption holds the plan is the one-candidate-at-a-time greedy's. The
// numbers below are that greedy's (the planner before batching, commit
// 44ab409, which took 14 s and 21 s for the first two runs) on the 3k-op
// synthetic step of python/benchmarks/scaling.py with 512 tokens, where the
// peak is at the start of backward: 49 values of 128 KiB for budget=0.9, 121
// for budget=0.75. Tighter budgets are out of reach (the D2H stream cannot
// drain forward's copies before backward starts): the planner fails naming
// the same smallest peak as before.
// RUN: %python %offload_src/python/benchmarks/scaling.py --emit-only %t --sizes 3000 --tokens 512 > /dev/null
// RUN: offload-opt %t/scaling_3000.mlir --offload-activations="min-bytes=1024 recompute=false schedule=false budget=0.9 report=json report-file=-" -o /dev/null | FileCheck %s --check-prefix=SYNC
// RUN: offload-opt %t/scaling_3000.mlir --offload-activations="min-bytes=1024 recompute=false budget=0.9 schedule=true report=json report-file=-" -o /dev/null | FileCheck %s --check-prefix=SCHED
// RUN: offload-opt %t/scaling_3000.mlir --offload-activations="min-bytes=1024 recompute=false schedule=false budget=0.75 report=json report-file=-" -o /dev/null | FileCheck %s --check-prefix=SYNC75
// RUN: not offload-opt %t/scaling_3000.mlir --offload-activations="min-bytes=1024 recompute=false schedule=false budget=0.6" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOFIT
// Scheduled with release=at-wait, 0.75 is out of reach (the offloads hold
// their sources until their waits; smallest peak 46.99 MiB): the planner
// plans it synchronously, where it fits (plan-budget-synchronous.mlir).
// RUN: offload-opt %t/scaling_3000.mlir \
// RUN:   --offload-activations="min-bytes=1024 recompute=false budget=0.75 schedule=true release=at-wait fuse-memory-bound=true report=text" -o \
// RUN:   /dev/null 2>&1 | FileCheck %s --check-prefix=AT-WAIT
// SYNC: "offloaded_values": 49,
// SYNC: "peak_bytes_after": 57005568,
// SYNC: "step_seconds_after": 0.00465281816436362
// SCHED: "offloaded_values": 49,
// SCHED: "peak_bytes_after": 57005568,
// SCHED: "step_seconds_after": 0.00404604492800001
// SYNC75: "offloaded_values": 121,
// SYNC75: "peak_bytes_after": 47568384,
// SYNC75: "step_seconds_after": 0.00554440332799999
// NOFIT: error: no plan fits the budget of 36.29 MiB (38056857 bytes): the smallest predicted peak is 42.49 MiB (44553728 bytes)
// AT-WAIT: total: offloaded 121 values, 15.1 MiB
// AT-WAIT-NEXT: peak device memory 60.5 MiB -> 45.4 MiB; step 3.581 ms -> 6.577 ms
// AT-WAIT-NEXT: offload-plan predicted for its plan: peak device memory 45.4 MiB; step 6.577 ms
