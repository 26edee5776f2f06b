// The main job: the offload pipeline on one traced Llama-3-8B layer.
// RUN: offload-opt %S/llama_block.mlir --offload-activations="plan=all min-bytes=1024 schedule=false report=text" -o %t.mlir 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: FileCheck %s --check-prefix=IR < %t.mlir
// RUN: offload-opt %t.mlir -o /dev/null

// Everything but the weights' transposed views and two 8-byte RNG seeds goes.
// Saved views of one storage move as one copy of it (36 saved results, 30
// after the merge): `view`, `view_2` and `view_4`, the three 2-D views of
// the normalised input `mul_1` that feed the q, k and v projections, are one
// 64 MiB copy instead of three, rebuilt in backward right before each
// projection's gradient reads them; likewise `view_8`/`view_9` (of `mul_7`),
// `detach_1`/`view_7` (of the attention output) and each RMSNorm's
// `rsqrt`/`detach`.
// REPORT-LABEL: offload report: @forward -> @backward: 17 of 30 saved results offloaded
// REPORT: 5  aten._to_copy.default "_to_copy"  {{ *}}tensor<8x1024x4096xf32>  {{ *}}128.0 MiB  #6 aten.mul.Tensor "mul"
// REPORT: 6  aten.rsqrt.default "rsqrt"  {{ *}}tensor<8x1024x1xf32>  {{ *}}32.0 KiB  #6 aten.mul.Tensor "mul"
// REPORT-NEXT: one copy for saved views rebuilt in backward: #{{[0-9]+}} aten.detach.default "detach"
// REPORT: 8  aten.t.default "t"  {{ *}}tensor<4096x4096xbf16>  {{ *}}32.0 MiB  kept: view of a function argument
// REPORT: 9  aten.mul.Tensor "mul_1"  {{ *}}tensor<8x1024x4096xbf16>  {{ *}}64.0 MiB  #26 aten.mm.default "mm_2"  {{ *}}#[[QKV:[0-9]+]] aten.view.default "view_4"
// REPORT-NEXT: one copy for saved views rebuilt in backward: #[[QKV]] aten.view.default "view_4" #{{[0-9]+}} aten.view.default "view_2" #{{[0-9]+}} aten.view.default "view"
// REPORT: 17  aten._scaled_dot_product_cudnn_attention.default {{.*}} kept: below min-bytes (8 < 1024)
// REPORT: 26  aten.silu.default "silu"  {{ *}}tensor<8x1024x14336xbf16>  {{ *}}224.0 MiB  #90 aten.mul.Tensor "mul_8"  {{ *}}#10 aten.mul.Tensor "mul_9"
// REPORT: total: offloaded 17 values, 1.6 GiB; kept 13 values, 416.5 MiB

// IR-LABEL: func.func @forward
// IR-COUNT-17: offload.offload_to_cpu
// IR-NOT: offload.offload_to_cpu
// IR-LABEL: func.func @backward
// IR-COUNT-17: offload.load_to_gpu
// IR-NOT: offload.load_to_gpu
