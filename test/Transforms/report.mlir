// RUN: offload-opt %s -offload-activations="plan=all min-bytes=1024 schedule=false report=text" -o /dev/null 2>&1 | FileCheck %s --check-prefix=TEXT
// RUN: offload-opt %s -offload-activations="plan=all min-bytes=1024 schedule=false report=json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=JSON
// RUN: offload-opt %s -offload-activations="plan=all min-bytes=1024 schedule=false" -offload-report="format=json output=%t.json" -o /dev/null && FileCheck %s --check-prefix=JSON < %t.json
// The issue's spelling, --offload-report=json, works too.
// RUN: offload-opt %s -offload-activations="plan=all min-bytes=1024 schedule=false" -offload-report=json -o /dev/null 2>&1 | FileCheck %s --check-prefix=JSON
// The report goes to stderr by default, never into the IR on stdout;
// report-file=- (output=- for the pass) asks for stdout.
// RUN: offload-opt %s -offload-activations="plan=all min-bytes=1024 schedule=false report=text" 2>/dev/null | FileCheck %s --check-prefix=IR --implicit-check-not="offload report"
// RUN: offload-opt %s -offload-activations="plan=all min-bytes=1024 schedule=false" -offload-report 2>/dev/null | FileCheck %s --check-prefix=IR --implicit-check-not="offload report"
// RUN: offload-opt %s -offload-activations="plan=all min-bytes=1024 schedule=false report=text report-file=-" -o /dev/null 2>/dev/null | FileCheck %s --check-prefix=TEXT
// RUN: offload-opt %s -offload-activations="plan=all min-bytes=1024 schedule=false" -offload-report="format=json output=-" -o /dev/null 2>/dev/null | FileCheck %s --check-prefix=JSON
// IR-LABEL: func.func @report_forward
// IR: func.func @report_backward
// RUN: not offload-opt %s -offload-report="format=yaml" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not offload-opt %s -offload-report="device-profile=%t.missing.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PROFILE
// RUN: echo '{"name": "slow-link", "h2d_GBps": 1, "d2h_GBps": 1, "both_ways_GBps": 2}' > %t.profile.json
// RUN: offload-opt %s -offload-activations="plan=all min-bytes=1024 schedule=false" -offload-report="device-profile=%t.profile.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SLOW
// RUN: echo '{"h2d_gbps": 1}' > %t.typo.json
// RUN: not offload-opt %s -offload-report="device-profile=%t.typo.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=TYPO

// TEXT-LABEL: offload report: @report_forward -> @report_backward: 2 of 3 saved results offloaded
// TEXT: result  producer
// TEXT-NEXT: 1  aten.mm.default "mm"   {{ *}}tensor<8x1024xf32>  {{ *}}32.0 KiB  #1 aten.relu.default "relu" {{ *}}#2 aten.t.default "t_1"
// TEXT-NEXT: 2  aten.relu.default "relu"  {{ *}}tensor<8x1024xf32>  {{ *}}32.0 KiB  #5 aten.mul.Tensor "mul" {{ *}}#6 aten.add.Tensor "add"
// TEXT-NEXT: 3  argument #0  {{ *}}tensor<8x1024xf32>  {{ *}}32.0 KiB  kept: function argument
// TEXT-NEXT: total: offloaded 2 values, 64.0 KiB; kept 1 values, 32.0 KiB
// TEXT-NEXT: predicted (h100-pcie5): moved 64.0 KiB to host and 64.0 KiB back; peak device memory {{.*}}; step {{.*}} (exposed copies {{.*}})
// Where the peak is: the op running when it is first reached. Without
// offload that is mm_3 (%c, %d and the weight, 4 MiB each); with the plan
// %s1 is on the host during mm_3 and back for the add, which reaches the
// same peak.
// TEXT-NEXT: peak without offload: at 17.0 us into the step, @report_backward #4 aten.mm.default "mm_3"
// TEXT-NEXT: peak with offload: at {{[0-9.]+}} us into the step, @report_backward #6 aten.add.Tensor "add"

// SLOW-LABEL: offload report: @report_forward -> @report_backward
// SLOW: predicted (slow-link): moved 64.0 KiB to host and 64.0 KiB back
// PROFILE: error: cannot read device profile
// TYPO: error: device profile '{{.*}}': unknown key 'h2d_gbps'

// JSON:      "steps": [
// JSON-LABEL:    "backward": "report_backward",
// JSON-NEXT:     "forward": "report_forward",
// JSON-NEXT:     "offloaded_bytes": 65536,
// JSON-NEXT:     "offloaded_values": 2,
// JSON-NEXT:     "predicted": {
// JSON-NEXT:       "backward_seconds": {{[0-9.e-]+}},
// JSON-NEXT:       "d2h_bytes": 65536,
// JSON-NEXT:       "device": "h100-pcie5",
// JSON-NEXT:       "exposed_seconds_after": {{[0-9.e-]+}},
// JSON-NEXT:       "forward_seconds": {{[0-9.e-]+}},
// JSON-NEXT:       "h2d_bytes": 65536,
// JSON-NEXT:       "interference_seconds_after": 0,
// JSON-NEXT:       "peak_at_after": {
// JSON-NEXT:         "function": "report_backward",
// JSON-NEXT:         "index": 6,
// JSON-NEXT:         "op": "aten.add.Tensor \"add\"",
// JSON-NEXT:         "seconds": {{[0-9.e-]+}}
// JSON-NEXT:       },
// JSON-NEXT:       "peak_at_before": {
// JSON-NEXT:         "function": "report_backward",
// JSON-NEXT:         "index": 4,
// JSON-NEXT:         "op": "aten.mm.default \"mm_3\"",
// JSON-NEXT:         "seconds": {{[0-9.e-]+}}
// JSON-NEXT:       },
// JSON-NEXT:       "peak_bytes_after": {{[0-9]+}},
// JSON-NEXT:       "peak_bytes_before": {{[0-9]+}},
// JSON-NEXT:       "step_seconds_after": {{[0-9.e-]+}},
// JSON-NEXT:       "step_seconds_before": {{[0-9.e-]+}}
// JSON-NEXT:     },
// JSON:              "bytes": 32768,
// JSON-NEXT:         "exposed_seconds": {{[0-9.e-]+}},
// JSON-NEXT:         "load_before": {
// JSON-NEXT:           "index": 2,
// JSON-NEXT:           "op": "aten.t.default \"t_1\""
// JSON-NEXT:         },
// JSON-NEXT:         "load_start": {
// JSON-NEXT:           "index": 2,
// JSON-NEXT:           "op": "aten.t.default \"t_1\""
// JSON-NEXT:         },
// JSON-NEXT:         "offload_after": {
// JSON-NEXT:           "index": 1,
// JSON-NEXT:           "op": "aten.relu.default \"relu\""
// JSON-NEXT:         },
// JSON-NEXT:         "offloaded": true,
// JSON-NEXT:         "producer": "aten.mm.default \"mm\"",
// JSON-NEXT:         "result": 1,
// JSON:              "kept_reason": "function argument",
// JSON-NEXT:         "offloaded": false,

// BAD: for the --format option: 'yaml' is not one of text, json

func.func @report_forward(%x: tensor<8x1024xf32>, %w: tensor<1024x1024xf32>)
    -> (tensor<8x1024xf32>, tensor<8x1024xf32>, tensor<8x1024xf32>, tensor<8x1024xf32>)
    attributes {offload.backward = @report_backward, offload.num_outputs = 1 : i64} {
  %0 = trace.op "aten.mm.default"(%x, %w) {node = "mm"} : (tensor<8x1024xf32>, tensor<1024x1024xf32>) -> tensor<8x1024xf32>
  %1 = trace.op "aten.relu.default"(%0) {node = "relu"} : (tensor<8x1024xf32>) -> tensor<8x1024xf32>
  %2 = trace.op "aten.exp.default"(%1) {node = "exp"} : (tensor<8x1024xf32>) -> tensor<8x1024xf32>
  %3 = trace.op "aten.neg.default"(%2) {node = "neg"} : (tensor<8x1024xf32>) -> tensor<8x1024xf32>
  %4 = trace.op "aten.mul.Tensor"(%3, %1) {node = "mul"} : (tensor<8x1024xf32>, tensor<8x1024xf32>) -> tensor<8x1024xf32>
  return %4, %0, %1, %x : tensor<8x1024xf32>, tensor<8x1024xf32>, tensor<8x1024xf32>, tensor<8x1024xf32>
}
func.func @report_backward(%s0: tensor<8x1024xf32>, %s1: tensor<8x1024xf32>, %s2: tensor<8x1024xf32>, %g: tensor<8x1024xf32>)
    -> tensor<1024x1024xf32> {
  %a = trace.view "aten.t.default"(%s0) {node = "t_1"} : (tensor<8x1024xf32>) -> tensor<1024x8xf32>
  %b = trace.op "aten.mul.Tensor"(%g, %s2) {node = "mul_2"} : (tensor<8x1024xf32>, tensor<8x1024xf32>) -> tensor<8x1024xf32>
  %c = trace.op "aten.mm.default"(%a, %b) {node = "mm_2"} : (tensor<1024x8xf32>, tensor<8x1024xf32>) -> tensor<1024x1024xf32>
  %d = trace.op "aten.mm.default"(%c, %c) {node = "mm_3"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %e = trace.op "aten.add.Tensor"(%d, %s1) {node = "add"} : (tensor<1024x1024xf32>, tensor<8x1024xf32>) -> tensor<1024x1024xf32>
  return %e : tensor<1024x1024xf32>
}
