// The planner's and the options' errors read as plain messages at their
// location: no pass-name prefix ("offload-plan: ..."), sizes in human units.
// RUN: offload-opt %s -split-input-file -verify-diagnostics -offload-activations="budget=100" -o /dev/null
// RUN: not offload-opt %s -split-input-file -offload-activations="budget=100" -mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s --check-prefix=PLAIN
// RUN: not offload-opt %s -split-input-file -offload-activations="budget=lots" -mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s --check-prefix=OPTION
// PLAIN: plan-diagnostics.mlir:14:3: error: no plan fits the budget of 100 B
// PLAIN: plan-diagnostics.mlir:31:3: error: no plan fits the budget of 100 B
// The option's error names the option; it comes when the option is parsed.
// OPTION: for the --budget option: 'lots' is not a byte size
// OPTION-NOT: see current operation

module {
  // expected-error @below {{no plan fits the budget of 100 B (100 bytes): the smallest predicted peak is 15.62 KiB (16000 bytes); without offload it is 15.62 KiB (16000 bytes)}}
  func.func @no_plan_fits_budget_forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32>)
      attributes {offload.backward = @no_plan_fits_budget_backward, offload.num_outputs = 1 : i64} {
    %e = math.exp %x : tensor<1000xf32>
    %y = math.sin %e : tensor<1000xf32>
    return %y, %e : tensor<1000xf32>, tensor<1000xf32>
  }
  func.func @no_plan_fits_budget_backward(%s: tensor<1000xf32>, %g: tensor<1000xf32>) -> tensor<1000xf32> {
    %o = arith.mulf %g, %s : tensor<1000xf32>
    return %o : tensor<1000xf32>
  }
}

// -----

// A second step in the same module fails on its own.
module {
  // expected-error @below {{no plan fits the budget of 100 B (100 bytes)}}
  func.func @second_step_fails_alone_forward(%x: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>)
      attributes {offload.backward = @second_step_fails_alone_backward, offload.num_outputs = 1 : i64} {
    %e = math.exp %x : tensor<64x64xf32>
    %y = math.sin %e : tensor<64x64xf32>
    return %y, %e : tensor<64x64xf32>, tensor<64x64xf32>
  }
  func.func @second_step_fails_alone_backward(%s: tensor<64x64xf32>, %g: tensor<64x64xf32>) -> tensor<64x64xf32> {
    %o = arith.mulf %g, %s : tensor<64x64xf32>
    return %o : tensor<64x64xf32>
  }
}
