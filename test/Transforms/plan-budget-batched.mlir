// budget= runs its greedy lazily and in batches (docs/scaling.md): a
// candidate's last known effect bounds its current one, and a batch is taken
// when its simulation shows every member had exactly that effect. Where that
// assumption holds the plan is the one-candidate-at-a-time greedy's. The
// numbers below are that greedy's (the planner before batching, commit
// 44ab409, which took 14 s and 21 s for these two runs) on the 3k-op
// synthetic step of python/benchmarks/scaling.py with 512 tokens, where the
// peak is at the start of backward: 49 values of 128 KiB, the peak from
// 60.49 MiB to 54.36 MiB.
// RUN: %python %offload_src/python/benchmarks/scaling.py --emit-only %t --sizes 3000 --tokens 512 > /dev/null
// RUN: offload-opt %t/scaling_3000.mlir --offload-activations="budget=0.9 report=json report-file=-" -o /dev/null | FileCheck %s --check-prefixes=CHECK,SYNC
// RUN: offload-opt %t/scaling_3000.mlir --offload-activations="budget=0.9 schedule=true report=json report-file=-" -o /dev/null | FileCheck %s --check-prefixes=CHECK,SCHED
// CHECK: "offloaded_values": 49,
// CHECK: "peak_bytes_after": 57005568,
// SYNC: "step_seconds_after": 0.00465281816436362
// SCHED: "step_seconds_after": 0.00404604492800001
