// The main job: the offload pipeline on one traced Llama-3-8B layer.
// RUN: offload-opt %S/llama_block.mlir --offload-activations="report=text" -o %t.mlir 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: FileCheck %s --check-prefix=IR < %t.mlir
// RUN: offload-opt %t.mlir -o /dev/null

// Everything but the weights' transposed views and two 8-byte RNG seeds goes.
// REPORT: offload report: @forward -> @backward: 23 of 36 saved results offloaded
// REPORT: 5  aten._to_copy.default "_to_copy"  {{ *}}tensor<8x1024x4096xf32>  {{ *}}128.0 MiB  #6 aten.mul.Tensor "mul"
// REPORT: 9  aten.t.default "t"  {{ *}}tensor<4096x4096xbf16>  {{ *}}32.0 MiB  kept: view of a function argument
// REPORT: 19  aten._scaled_dot_product_cudnn_attention.default {{.*}} kept: below min-bytes (8 < 1024)
// REPORT: 31  aten.silu.default "silu"  {{ *}}tensor<8x1024x14336xbf16>  {{ *}}224.0 MiB  #96 aten.mul.Tensor "mul_8"  {{ *}}#10 aten.mul.Tensor "mul_9"
// REPORT: total: offloaded 23 values, 1.9 GiB; kept 13 values, 416.5 MiB

// IR-LABEL: func.func @forward
// IR-COUNT-23: offload.offload_to_cpu
// IR-NOT: offload.offload_to_cpu
// IR-LABEL: func.func @backward
// IR-COUNT-23: offload.load_to_gpu
// IR-NOT: offload.load_to_gpu
