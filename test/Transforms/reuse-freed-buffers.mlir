// reuse-freed-buffers: the code generator keeps a buffer it frees for its
// next allocation of the same element type and size (Inductor's memory
// planning), unless holding it that long would raise its estimate of the
// graph's peak; the model then keeps the storage live until then. Inductor
// estimates each graph without offload (it counts host tensors like device
// ones), so the holds are found on the plan without offload and every plan
// keeps them. Link and memory at 1 GB/s, no fixed costs; tensor<1000xf32>
// is 4000 B, tensor<1000xf16> 2000 B.
// RUN: offload-opt %s -split-input-file -offload-report="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0" -o /dev/null 2>&1 | FileCheck %s --check-prefix=OFF
// RUN: offload-opt %s -split-input-file \
// RUN:   -offload-report="hbm-gbps=1 d2h-gbps=1 h2d-gbps=1 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0 reuse-freed-buffers=true" -o /dev/null \
// RUN:   2>&1 | FileCheck %s --check-prefix=ON

// Without offload the peak is backward's first op (x, e, g, a: 16000 B),
// and below it %m can take %a's storage (12000 B live between them, plus
// 4000 held) and %n the storage of %t. With %e offloaded, its load at #3
// then meets both held buffers: 16000 B, where without the holds the peak
// is 14000 B at %m.
// OFF-LABEL: offload report: @freed_buffer_held_for_next_allocation_forward -> @freed_buffer_held_for_next_allocation_backward
// OFF: peak device memory 15.6 KiB -> 13.7 KiB
// OFF: peak with offload: at 38.0 us into the step, @freed_buffer_held_for_next_allocation_backward #4 arith.mulf
// ON-LABEL: offload report: @freed_buffer_held_for_next_allocation_forward -> @freed_buffer_held_for_next_allocation_backward
// ON: peak device memory 15.6 KiB -> 15.6 KiB
// ON: peak with offload: at 34.0 us into the step, @freed_buffer_held_for_next_allocation_backward #2 math.exp
func.func @freed_buffer_held_for_next_allocation_forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32, #offload.host>)
    attributes {offload.backward = @freed_buffer_held_for_next_allocation_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1000xf32>
  %h = offload.offload_to_cpu %e : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  %z = math.sin %x : tensor<1000xf32>
  return %z, %h : tensor<1000xf32>, tensor<1000xf32, #offload.host>
}
func.func @freed_buffer_held_for_next_allocation_backward(%s: tensor<1000xf32, #offload.host>, %g: tensor<1000xf32>) -> tensor<1000xf16> {
  %a = math.exp %g : tensor<1000xf32>
  %t = arith.truncf %a : tensor<1000xf32> to tensor<1000xf16>
  %u = math.exp %t : tensor<1000xf16>
  %l = offload.load_to_gpu %s : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %m = arith.mulf %l, %l : tensor<1000xf32>
  %n = arith.truncf %m : tensor<1000xf32> to tensor<1000xf16>
  %v = arith.extf %u : tensor<1000xf16> to tensor<1000xf32>
  %k = arith.truncf %v : tensor<1000xf32> to tensor<1000xf16>
  %r = arith.addf %k, %n : tensor<1000xf16>
  return %r : tensor<1000xf16>
}

// -----

// No room: %w (8000 B) lives from #3 on, so holding %a for %m (or %t or %u
// for an f16 buffer) would take the graph past its peak of 20000 B at %m.
// Nothing is held, and the plan's peak is the same either way (holding %a
// alone would have made it 22000 B).
// OFF-LABEL: offload report: @no_room_to_hold_forward -> @no_room_to_hold_backward
// OFF: peak device memory 19.5 KiB -> 19.5 KiB
// ON-LABEL: offload report: @no_room_to_hold_forward -> @no_room_to_hold_backward
// ON: peak device memory 19.5 KiB -> 19.5 KiB
// ON: peak with offload: at 48.0 us into the step, @no_room_to_hold_backward #5 arith.mulf
func.func @no_room_to_hold_forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32, #offload.host>)
    attributes {offload.backward = @no_room_to_hold_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1000xf32>
  %h = offload.offload_to_cpu %e : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  %z = math.sin %x : tensor<1000xf32>
  return %z, %h : tensor<1000xf32>, tensor<1000xf32, #offload.host>
}
func.func @no_room_to_hold_backward(%s: tensor<1000xf32, #offload.host>, %g: tensor<1000xf32>) -> tensor<1000xf16> {
  %a = math.exp %g : tensor<1000xf32>
  %t = arith.truncf %a : tensor<1000xf32> to tensor<1000xf16>
  %u = math.exp %t : tensor<1000xf16>
  %w = arith.extf %u : tensor<1000xf16> to tensor<1000xf64>
  %l = offload.load_to_gpu %s : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %m = arith.mulf %l, %l : tensor<1000xf32>
  %n = arith.truncf %m : tensor<1000xf32> to tensor<1000xf16>
  %k = arith.truncf %w : tensor<1000xf64> to tensor<1000xf16>
  %r = arith.addf %k, %n : tensor<1000xf16>
  return %r : tensor<1000xf16>
}

// -----

// An attention kernel allocates its own result: it takes no freed buffer,
// so %a is not held for it and the peak stays at the attention (only %t is
// held, for %n). A traced elementwise op in its place takes %a's storage,
// and the load at #3 meets %a held (the next case).
// ON-LABEL: offload report: @attention_allocates_its_result_forward -> @attention_allocates_its_result_backward
// ON: peak with offload: at 38.0 us into the step, @attention_allocates_its_result_backward #4 aten._scaled_dot_product_flash_attention.default
func.func @attention_allocates_its_result_forward(%x: tensor<1x1x10x100xf32>) -> (tensor<1x1x10x100xf32>, tensor<1x1x10x100xf32, #offload.host>)
    attributes {offload.backward = @attention_allocates_its_result_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1x1x10x100xf32>
  %h = offload.offload_to_cpu %e : tensor<1x1x10x100xf32> -> tensor<1x1x10x100xf32, #offload.host>
  %z = math.sin %x : tensor<1x1x10x100xf32>
  return %z, %h : tensor<1x1x10x100xf32>, tensor<1x1x10x100xf32, #offload.host>
}
func.func @attention_allocates_its_result_backward(%s: tensor<1x1x10x100xf32, #offload.host>, %g: tensor<1x1x10x100xf32>) -> tensor<1x1x10x100xf16> {
  %a = math.exp %g : tensor<1x1x10x100xf32>
  %t = arith.truncf %a : tensor<1x1x10x100xf32> to tensor<1x1x10x100xf16>
  %u = math.exp %t : tensor<1x1x10x100xf16>
  %l = offload.load_to_gpu %s : tensor<1x1x10x100xf32, #offload.host> -> tensor<1x1x10x100xf32>
  %m = trace.op "aten._scaled_dot_product_flash_attention.default"(%l, %l, %l) : (tensor<1x1x10x100xf32>, tensor<1x1x10x100xf32>, tensor<1x1x10x100xf32>) -> tensor<1x1x10x100xf32>
  %n = arith.truncf %m : tensor<1x1x10x100xf32> to tensor<1x1x10x100xf16>
  %r = arith.addf %u, %n : tensor<1x1x10x100xf16>
  return %r : tensor<1x1x10x100xf16>
}

// -----

// The same with an elementwise op for the attention: %m takes %a's storage.
// ON-LABEL: offload report: @elementwise_takes_freed_storage_forward -> @elementwise_takes_freed_storage_backward
// ON: peak with offload: at 34.0 us into the step, @elementwise_takes_freed_storage_backward #2 math.exp
func.func @elementwise_takes_freed_storage_forward(%x: tensor<1x1x10x100xf32>) -> (tensor<1x1x10x100xf32>, tensor<1x1x10x100xf32, #offload.host>)
    attributes {offload.backward = @elementwise_takes_freed_storage_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1x1x10x100xf32>
  %h = offload.offload_to_cpu %e : tensor<1x1x10x100xf32> -> tensor<1x1x10x100xf32, #offload.host>
  %z = math.sin %x : tensor<1x1x10x100xf32>
  return %z, %h : tensor<1x1x10x100xf32>, tensor<1x1x10x100xf32, #offload.host>
}
func.func @elementwise_takes_freed_storage_backward(%s: tensor<1x1x10x100xf32, #offload.host>, %g: tensor<1x1x10x100xf32>) -> tensor<1x1x10x100xf16> {
  %a = math.exp %g : tensor<1x1x10x100xf32>
  %t = arith.truncf %a : tensor<1x1x10x100xf32> to tensor<1x1x10x100xf16>
  %u = math.exp %t : tensor<1x1x10x100xf16>
  %l = offload.load_to_gpu %s : tensor<1x1x10x100xf32, #offload.host> -> tensor<1x1x10x100xf32>
  %m = trace.op "aten.mul.Tensor"(%l, %l) : (tensor<1x1x10x100xf32>, tensor<1x1x10x100xf32>) -> tensor<1x1x10x100xf32>
  %n = arith.truncf %m : tensor<1x1x10x100xf32> to tensor<1x1x10x100xf16>
  %r = arith.addf %u, %n : tensor<1x1x10x100xf16>
  return %r : tensor<1x1x10x100xf16>
}
