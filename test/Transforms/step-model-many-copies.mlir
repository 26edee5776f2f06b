// Regression test: building the step model of a step with many split
// copies read a DenseMap iterator after an insertion that can grow the map
// (StepModelBuilder::addOp, on offload.wait). The read was of freed memory;
// with glibc told to poison freed memory (no tcache, MALLOC_PERTURB_) it
// crashed every time. Found by test/Transforms/property/random-steps.mlir.
// RUN: env GLIBC_TUNABLES=glibc.malloc.tcache_count=0 MALLOC_PERTURB_=165 offload-opt %s -offload-activations="plan=all min-bytes=1024 schedule=true report=text" -o /dev/null 2>&1 | FileCheck %s
// RUN: env GLIBC_TUNABLES=glibc.malloc.tcache_count=0 MALLOC_PERTURB_=165 offload-opt %s -offload-activations="plan=all min-bytes=1024 schedule=true" | FileCheck %s --check-prefix=IR
// RUN: env GLIBC_TUNABLES=glibc.malloc.tcache_count=0 MALLOC_PERTURB_=165 offload-opt %s -offload-activations="plan=all min-bytes=1024 schedule=true" | FileCheck %s --check-prefix=WAITS

// The last saved value is also the forward output, so it stays.
// CHECK-LABEL: offload report: @step_model_many_copies_forward -> @step_model_many_copies_backward: 23 of 24 saved results offloaded
// CHECK: predicted (h100-pcie5): moved 92.0 KiB to host and 92.0 KiB back
// IR-LABEL: func @step_model_many_copies_forward
// IR-COUNT-23: offload.offload_start
// Each offload's wait sits at its release point, among the starts.
// WAITS-LABEL: func @step_model_many_copies_forward
// WAITS-COUNT-23: offload.wait
// WAITS: return
// IR-LABEL: func @step_model_many_copies_backward
// IR-COUNT-23: offload.load_start

func.func @step_model_many_copies_forward(%x: tensor<1024xf32>) -> (tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>,
    tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>,
        tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>,
            tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>)
    attributes {offload.backward = @step_model_many_copies_backward, offload.num_outputs = 1 : i64} {
  %a0 = math.exp %x : tensor<1024xf32>
  %a1 = math.exp %a0 : tensor<1024xf32>
  %a2 = math.exp %a1 : tensor<1024xf32>
  %a3 = math.exp %a2 : tensor<1024xf32>
  %a4 = math.exp %a3 : tensor<1024xf32>
  %a5 = math.exp %a4 : tensor<1024xf32>
  %a6 = math.exp %a5 : tensor<1024xf32>
  %a7 = math.exp %a6 : tensor<1024xf32>
  %a8 = math.exp %a7 : tensor<1024xf32>
  %a9 = math.exp %a8 : tensor<1024xf32>
  %a10 = math.exp %a9 : tensor<1024xf32>
  %a11 = math.exp %a10 : tensor<1024xf32>
  %a12 = math.exp %a11 : tensor<1024xf32>
  %a13 = math.exp %a12 : tensor<1024xf32>
  %a14 = math.exp %a13 : tensor<1024xf32>
  %a15 = math.exp %a14 : tensor<1024xf32>
  %a16 = math.exp %a15 : tensor<1024xf32>
  %a17 = math.exp %a16 : tensor<1024xf32>
  %a18 = math.exp %a17 : tensor<1024xf32>
  %a19 = math.exp %a18 : tensor<1024xf32>
  %a20 = math.exp %a19 : tensor<1024xf32>
  %a21 = math.exp %a20 : tensor<1024xf32>
  %a22 = math.exp %a21 : tensor<1024xf32>
  %a23 = math.exp %a22 : tensor<1024xf32>
  return %a23, %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7, %a8, %a9, %a10, %a11, %a12, %a13, %a14, %a15, %a16, %a17, %a18, %a19, %a20, %a21, %a22,
      %a23 : tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>,
          tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>,
              tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>
}
func.func @step_model_many_copies_backward(%s0: tensor<1024xf32>, %s1: tensor<1024xf32>, %s2: tensor<1024xf32>, %s3: tensor<1024xf32>, %s4: tensor<1024xf32>,
    %s5: tensor<1024xf32>, %s6: tensor<1024xf32>, %s7: tensor<1024xf32>, %s8: tensor<1024xf32>, %s9: tensor<1024xf32>, %s10: tensor<1024xf32>,
        %s11: tensor<1024xf32>, %s12: tensor<1024xf32>, %s13: tensor<1024xf32>, %s14: tensor<1024xf32>, %s15: tensor<1024xf32>, %s16: tensor<1024xf32>,
            %s17: tensor<1024xf32>, %s18: tensor<1024xf32>, %s19: tensor<1024xf32>, %s20: tensor<1024xf32>, %s21: tensor<1024xf32>, %s22: tensor<1024xf32>,
                %s23: tensor<1024xf32>, %g: tensor<1024xf32>) -> tensor<1024xf32> {
  %b23 = arith.mulf %g, %s23 : tensor<1024xf32>
  %b22 = arith.mulf %b23, %s22 : tensor<1024xf32>
  %b21 = arith.mulf %b22, %s21 : tensor<1024xf32>
  %b20 = arith.mulf %b21, %s20 : tensor<1024xf32>
  %b19 = arith.mulf %b20, %s19 : tensor<1024xf32>
  %b18 = arith.mulf %b19, %s18 : tensor<1024xf32>
  %b17 = arith.mulf %b18, %s17 : tensor<1024xf32>
  %b16 = arith.mulf %b17, %s16 : tensor<1024xf32>
  %b15 = arith.mulf %b16, %s15 : tensor<1024xf32>
  %b14 = arith.mulf %b15, %s14 : tensor<1024xf32>
  %b13 = arith.mulf %b14, %s13 : tensor<1024xf32>
  %b12 = arith.mulf %b13, %s12 : tensor<1024xf32>
  %b11 = arith.mulf %b12, %s11 : tensor<1024xf32>
  %b10 = arith.mulf %b11, %s10 : tensor<1024xf32>
  %b9 = arith.mulf %b10, %s9 : tensor<1024xf32>
  %b8 = arith.mulf %b9, %s8 : tensor<1024xf32>
  %b7 = arith.mulf %b8, %s7 : tensor<1024xf32>
  %b6 = arith.mulf %b7, %s6 : tensor<1024xf32>
  %b5 = arith.mulf %b6, %s5 : tensor<1024xf32>
  %b4 = arith.mulf %b5, %s4 : tensor<1024xf32>
  %b3 = arith.mulf %b4, %s3 : tensor<1024xf32>
  %b2 = arith.mulf %b3, %s2 : tensor<1024xf32>
  %b1 = arith.mulf %b2, %s1 : tensor<1024xf32>
  %b0 = arith.mulf %b1, %s0 : tensor<1024xf32>
  return %b0 : tensor<1024xf32>
}
