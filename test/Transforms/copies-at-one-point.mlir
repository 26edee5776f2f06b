// Forming copy groups is linear in the copies issued at one point: 16k
// offloads after one forward op (grouped) and 16k loads before one backward
// op (considered for grouping) take about the time of the same step without
// grouping (it was quadratic: 20k values took 47.7 s against 3.9 s). The
// timeout catches a return to quadratic time on any machine of usual speed.
// RUN: %python %S/Inputs/copies_at_one_point.py 16000 > %t.mlir
// RUN: timeout 120 offload-opt %t.mlir --offload-activations="plan=all min-bytes=0 coalesce-below=1MiB" | FileCheck %s

// CHECK-LABEL: func.func @forward
// CHECK: offload.offload_group_start
// CHECK-LABEL: func.func @backward
// CHECK: offload.load_start
