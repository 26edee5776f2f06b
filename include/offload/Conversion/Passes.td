//===- Passes.td - offload-mlir conversion passes ----------*- tablegen -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_CONVERSION_PASSES_TD
#define OFFLOAD_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertOffloadToLLVM : Pass<"convert-offload-to-llvm", "ModuleOp"> {
  let summary = "Lower the buffer copies to offload_rt calls in the LLVM dialect";
  let description = [{
    Runs after one-shot-bufferize (with `use-encoding-for-memory-space`).
    Each `offload.offload_buffer` becomes a call of
    `offload_rt_mlir_offload_start(ptr, bytes, stream)` that returns the host
    block's handle; each `offload.load_buffer` becomes
    `offload_rt_mlir_load_start(handle, bytes, stream)`, returning a token,
    followed by `offload_rt_mlir_wait(token, stream)`, which makes the compute
    stream (never the host) wait and yields the device buffer. `stream` is
    `offload_rt_mlir_compute_stream()`, the compute stream the caller set for
    this thread. `memref.dealloc` of a host buffer becomes
    `offload_rt_mlir_free_host(handle)`.

    A host memref's descriptor holds the block's handle as its allocated
    pointer and the pinned data as its aligned pointer. Once the copies are
    lowered the pass drops the `#offload.host` memory space from the
    remaining memref types, so the upstream conversions to LLVM
    (`finalize-memref-to-llvm`, `convert-func-to-llvm`, ...) finish the job.
    `populateOffloadToLLVMConversionPatterns` gives the patterns to other
    compilers; the dialect also implements `ConvertToLLVMPatternInterface`,
    so `--convert-to-llvm` lowers the copies too.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def ConvertTraceToCalls : Pass<"convert-trace-to-calls", "ModuleOp"> {
  let summary = "Turn framework-traced ops into calls of external functions";
  let description = [{
    A `trace.op` or `trace.view` names a framework op (`aten.mm.default`)
    that has no MLIR lowering of its own. This pass turns each into a
    `func.call` of a private external function that the framework side
    provides, so a traced step can be bufferized and lowered to LLVM like
    any other code, with the copies lowered to `offload_rt` calls.

    One declaration is made per target and signature in each module that
    holds traced ops (the nearest one, where the call resolves it), named
    `<target>_<n>` (`@aten.mm.default_0`); it carries the target in
    `trace.target`. The call keeps the FX node name and the non-tensor
    arguments (`trace.node`, `trace.args`, `trace.kwargs`,
    `trace.mutates`), so nothing of the traced call is lost.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

#endif // OFFLOAD_CONVERSION_PASSES_TD
