// Bad option values of the offload-activations pipeline and its passes: a
// diagnostic that names the option and the values it takes, a non-zero exit,
// never a crash. Enum-valued options (plan, report, format, release) are
// C++ enums parsed by llvm::cl.

// RUN: not offload-opt %s --offload-activations="report=xml" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: not offload-opt %s --offload-activations="release=later" -o /dev/null 2>&1 | FileCheck %s --check-prefix=RELEASE
// RUN: not offload-opt %s --offload-activations="plan=Hidden" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PLAN
// RUN: not offload-opt %s -offload-plan="plan=some" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PASS-PLAN
// REPORT: for the --report option: 'xml' is not one of none, text, json
// RELEASE: for the --release option: 'later' is not one of after-copy, at-wait
// PLAN: for the --plan option: 'Hidden' is not one of all, hidden, budget
// PASS-PLAN: for the --plan option: 'some' is not one of all, hidden, budget

// Numbers that are not finite, and negative sizes, are errors: in options
// and in a device profile file alike.
// RUN: not offload-opt %s --offload-activations="plan=hidden max-slowdown=nan" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NAN
// RUN: not offload-opt %s --offload-activations="min-bytes=-5" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NEG
// RUN: not offload-opt %s --offload-schedule-copies="hbm-gbps=inf" -o /dev/null 2>&1 | FileCheck %s --check-prefix=INF
// RUN: echo '{"name": "x", "d2h_GBps": 1e400}' > %t.profile.json
// RUN: not offload-opt %s --offload-activations="plan=hidden device-profile=%t.profile.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PROFILE
// NAN: error: max-slowdown must be a finite fraction >= 0, got nan
// NEG: for the --min-bytes option: byte size '-5' is negative
// INF: error: device profile option hbm-gbps must be a finite number
// PROFILE: error: device profile '{{.*}}': 'd2h_GBps' must be a finite non-negative number

// A step is at least one instance of itself.
// RUN: not offload-opt %s --offload-activations="saved-instances=0" -o /dev/null 2>&1 | FileCheck %s --check-prefix=INSTANCES
// INSTANCES: error: option saved-instances: expected a count >= 1 (1: the step alone), got 0

// A report that cannot be written (a full disk) is an error, not a fatal
// one when the file closes.
// RUN: not offload-opt %s --offload-activations="report=text report-file=/dev/full" -o /dev/null 2>&1 | FileCheck %s --check-prefix=FULL
// FULL: error: cannot write the report to '/dev/full': No space left on device
// FULL-NOT: LLVM ERROR

// The enums print back by name in the pass pipeline.
// RUN: offload-opt %s --offload-activations="plan=hidden release=at-wait report=json report-file=%t.json" --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=PIPELINE
// PIPELINE: offload-plan{{.*}} plan=hidden
// PIPELINE-SAME: release=at-wait
// PIPELINE: offload-report{{.*}}format=json

func.func @invalid_options_forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32>)
    attributes {offload.backward = @invalid_options_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1000xf32>
  %y = math.sin %e : tensor<1000xf32>
  return %y, %e : tensor<1000xf32>, tensor<1000xf32>
}
func.func @invalid_options_backward(%s: tensor<1000xf32>, %g: tensor<1000xf32>) -> tensor<1000xf32> {
  %o = arith.mulf %g, %s : tensor<1000xf32>
  return %o : tensor<1000xf32>
}
