// offload-plan records what it predicted for the plan it chose on the
// forward function (`offload.planned`, with the profile as it is: here
// plan=hidden searched with a 5% copy margin), and the report of the IR the
// passes emitted from that plan prints it next to its own prediction.
// RUN: offload-opt %s --offload-activations="min-bytes=0 plan=hidden schedule=true release=at-wait report=text" 2>&1 -o %t.mlir | FileCheck %s --check-prefix=REPORT
// RUN: FileCheck %s --check-prefix=IR < %t.mlir
// RUN: offload-opt %s --offload-activations="min-bytes=0 budget=0.9 report=json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=JSON
// The plan=all pipeline plans nothing and records nothing.
// RUN: offload-opt %s --offload-activations="plan=all min-bytes=0" | FileCheck %s --check-prefix=ALL

// REPORT-LABEL: offload report: @plan_records_prediction_forward -> @plan_records_prediction_backward
// REPORT: predicted (h100-pcie5): {{.*}} peak device memory {{.*}} -> [[PEAK:[0-9.]+ [KMG]?i?B]]; step {{.*}} -> [[STEP:[0-9.]+ [mu]s]]
// REPORT-NEXT: offload-plan predicted for its plan: peak device memory [[PEAK]]; step [[STEP]]
// IR-LABEL: func.func @plan_records_prediction_forward({{.*}} attributes {offload.backward = @plan_records_prediction_backward, offload.num_outputs =
// IR-SAME: 1 : i64, offload.planned = {peak_bytes = {{[0-9]+}} : i64, step_seconds = {{.*}} : f64}}
// JSON-LABEL: "backward": "plan_records_prediction_backward",
// JSON:      "planned": {
// JSON-NEXT:   "peak_bytes": {{[0-9]+}},
// JSON-NEXT:   "step_seconds": {{.*}}
// ALL-LABEL: func.func @plan_records_prediction_forward
// ALL-NOT: offload.planned

func.func @plan_records_prediction_forward(%x: tensor<1024x1024xf32>, %w: tensor<1024x1024xf32>)
    -> (tensor<1024x1024xf32>, tensor<1024x1024xf32>, tensor<1024x1024xf32>)
    attributes {offload.backward = @plan_records_prediction_backward, offload.num_outputs = 1 : i64} {
  %h = trace.op "aten.mm.default"(%x, %w) {node = "mm"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %a = trace.op "aten.relu.default"(%h) {node = "relu"} : (tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %b = trace.op "aten.mm.default"(%a, %w) {node = "mm_1"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %c = trace.op "aten.mm.default"(%b, %w) {node = "mm_2"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  return %c, %h, %a : tensor<1024x1024xf32>, tensor<1024x1024xf32>, tensor<1024x1024xf32>
}
func.func @plan_records_prediction_backward(%h: tensor<1024x1024xf32>, %a: tensor<1024x1024xf32>, %g: tensor<1024x1024xf32>) -> tensor<1024x1024xf32> {
  %d = trace.op "aten.mm.default"(%g, %g) {node = "mm_3"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %e = trace.op "aten.mm.default"(%d, %g) {node = "mm_4"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %f = trace.op "aten.mul.Tensor"(%e, %a) {node = "mul"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %r = trace.op "aten.mul.Tensor"(%f, %h) {node = "mul_1"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  return %r : tensor<1024x1024xf32>
}
