// A driver calls forward and hands its saved results to backward while six
// saved views of one storage leave the interface for one copy: every call of
// backward loses the same arguments (erased in reverse from a named vector;
// a range-for over a temporary one read freed memory and crashed).
// RUN: offload-opt %s --offload-activations="plan=all min-bytes=0 schedule=false" | FileCheck %s

// CHECK-LABEL: func.func @driver_of_shared_copy(
// CHECK: %[[R:.*]]:2 = call @shared_copy_forward(%arg0)
// CHECK-SAME: -> (tensor<64xf32>, tensor<6x64xf32, #offload.host>)
// CHECK: call @shared_copy_backward(%[[R]]#1, %arg1)
func.func @shared_copy_forward(%x: tensor<6x64xf32>)
    -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)
    attributes {offload.backward = @shared_copy_backward, offload.num_outputs = 1 : i64} {
  %p = math.exp %x : tensor<6x64xf32>
  %v0 = tensor.extract_slice %p[0, 0] [1, 64] [1, 1] : tensor<6x64xf32> to tensor<64xf32>
  %v1 = tensor.extract_slice %p[1, 0] [1, 64] [1, 1] : tensor<6x64xf32> to tensor<64xf32>
  %v2 = tensor.extract_slice %p[2, 0] [1, 64] [1, 1] : tensor<6x64xf32> to tensor<64xf32>
  %v3 = tensor.extract_slice %p[3, 0] [1, 64] [1, 1] : tensor<6x64xf32> to tensor<64xf32>
  %v4 = tensor.extract_slice %p[4, 0] [1, 64] [1, 1] : tensor<6x64xf32> to tensor<64xf32>
  %v5 = tensor.extract_slice %p[5, 0] [1, 64] [1, 1] : tensor<6x64xf32> to tensor<64xf32>
  %y = math.sin %v0 : tensor<64xf32>
  return %y, %v0, %v1, %v2, %v3, %v4, %v5
      : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
}
func.func @shared_copy_backward(%s0: tensor<64xf32>, %s1: tensor<64xf32>, %s2: tensor<64xf32>, %s3: tensor<64xf32>,
                                %s4: tensor<64xf32>, %s5: tensor<64xf32>, %g: tensor<64xf32>) -> tensor<64xf32> {
  %m0 = arith.mulf %g, %s0 : tensor<64xf32>
  %m1 = arith.mulf %m0, %s1 : tensor<64xf32>
  %m2 = arith.mulf %m1, %s2 : tensor<64xf32>
  %m3 = arith.mulf %m2, %s3 : tensor<64xf32>
  %m4 = arith.mulf %m3, %s4 : tensor<64xf32>
  %m5 = arith.mulf %m4, %s5 : tensor<64xf32>
  return %m5 : tensor<64xf32>
}
func.func @driver_of_shared_copy(%x: tensor<6x64xf32>, %g: tensor<64xf32>) -> tensor<64xf32> {
  %y, %r0, %r1, %r2, %r3, %r4, %r5 = func.call @shared_copy_forward(%x)
      : (tensor<6x64xf32>) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)
  %d = func.call @shared_copy_backward(%r0, %r1, %r2, %r3, %r4, %r5, %g)
      : (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  return %d : tensor<64xf32>
}
