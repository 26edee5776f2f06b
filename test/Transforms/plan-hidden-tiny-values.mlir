// plan=hidden with hidden-patience=0 (exact first fit) on 4,800 tiny saved
// values whose kept offloads fill the H2D link: the pipeline keeps what
// first fit keeps when it simulates every candidate (913), while the bounds
// settle the candidates left (test/Unit/PlanHiddenTest.cpp counts the
// simulations; docs/scaling.md#the-loads-a-candidate-delays).
// RUN: %python %S/Inputs/chain_of_tiny_values.py 4800 > %t.mlir
// RUN: offload-opt %t.mlir \
// RUN:   --offload-activations="plan=hidden hidden-patience=0 min-bytes=0 recompute=false report=text" \
// RUN:   -o /dev/null 2>&1 | FileCheck %s

// CHECK: offload report: @forward -> @backward: 913 of 4800 saved results offloaded
