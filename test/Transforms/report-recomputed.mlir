// The report lists backward ops marked `recomputed` (the partitioner chose
// to compute the value again instead of saving it) with their predicted
// time. At the H100 defaults' 3 TB/s an elementwise op on 32 KiB in and
// out takes 2 us overhead plus about 22 ns.
// RUN: offload-opt %s -offload-report="format=text" -o /dev/null 2>&1 | FileCheck %s --check-prefix=TEXT
// RUN: offload-opt %s -offload-report="format=json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=JSON
// The attribute survives the pipeline.
// RUN: offload-opt %s -offload-activations | FileCheck %s --check-prefix=IR

// TEXT-LABEL: offload report: @report_recomputed_forward -> @report_recomputed_backward
// TEXT: recomputed in backward: 2 ops, predicted 4.{{[0-9]}} us: #0 aten.relu.default "relu" #1 aten.exp.default "exp"

// JSON-LABEL: "backward": "report_recomputed_backward",
// JSON:      "recompute_seconds": 4.{{[0-9]+}}e-06,
// JSON-NEXT: "recomputed": [
// JSON-NEXT:   {
// JSON-NEXT:     "index": 0,
// JSON-NEXT:     "node": "relu",
// JSON-NEXT:     "op": "aten.relu.default \"relu\"",
// JSON-NEXT:     "planned": false,
// JSON-NEXT:     "seconds": 2.{{[0-9]+}}e-06
// JSON-NEXT:   },
// JSON-NEXT:   {
// JSON-NEXT:     "index": 1,
// JSON-NEXT:     "node": "exp",

// IR-LABEL: func.func @report_recomputed_backward
// IR: trace.op "aten.relu.default"(%{{.*}}) {node = "relu", recomputed}

func.func @report_recomputed_forward(%x: tensor<8x1024xf32>, %w: tensor<1024x1024xf32>)
    -> (tensor<8x1024xf32>, tensor<8x1024xf32>)
    attributes {offload.backward = @report_recomputed_backward, offload.num_outputs = 1 : i64} {
  %0 = trace.op "aten.mm.default"(%x, %w) {node = "mm"} : (tensor<8x1024xf32>, tensor<1024x1024xf32>) -> tensor<8x1024xf32>
  %1 = trace.op "aten.relu.default"(%0) {node = "relu"} : (tensor<8x1024xf32>) -> tensor<8x1024xf32>
  %2 = trace.op "aten.exp.default"(%1) {node = "exp"} : (tensor<8x1024xf32>) -> tensor<8x1024xf32>
  return %2, %0 : tensor<8x1024xf32>, tensor<8x1024xf32>
}
func.func @report_recomputed_backward(%s0: tensor<8x1024xf32>, %g: tensor<8x1024xf32>) -> tensor<8x1024xf32> {
  %r = trace.op "aten.relu.default"(%s0) {node = "relu", recomputed} : (tensor<8x1024xf32>) -> tensor<8x1024xf32>
  %e = trace.op "aten.exp.default"(%r) {node = "exp", recomputed} : (tensor<8x1024xf32>) -> tensor<8x1024xf32>
  %m = trace.op "aten.mul.Tensor"(%g, %e) {node = "mul_1"} : (tensor<8x1024xf32>, tensor<8x1024xf32>) -> tensor<8x1024xf32>
  return %m : tensor<8x1024xf32>
}

