//===- OffloadOps.td - offload dialect ops and attributes --*- tablegen -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_DIALECT_OFFLOAD_OFFLOADOPS_TD
#define OFFLOAD_DIALECT_OFFLOAD_OFFLOADOPS_TD

include "offload/Dialect/Offload/IR/OffloadDialect.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/BuiltinTypeInterfaces.td"
include "offload/Dialect/Offload/IR/OffloadTypeInterfaces.td"

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

def Offload_HostMemoryAttr : Offload_Attr<"HostMemory", "host"> {
  let summary = "Marks a tensor as resident in pinned host memory";
  let description = [{
    Used as the encoding of a ranked tensor, `#offload.host` says the value
    lives in pinned host memory rather than on the device:

    ```mlir
    tensor<8x1024xbf16, #offload.host>
    ```

    Bufferization with `use-encoding-for-memory-space` carries the encoding
    over as the memory space of the resulting memref.
  }];
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

// A future's two type classes: bufferization tells tensors from buffers by
// type class (TensorLikeType, BufferLikeType), so a future of a tensor and a
// future of a buffer cannot be one class. Their bufferization models live in
// OffloadDialectTransforms, with the ops' (see OffloadDialect::initialize).
// Both are shaped like their value: bufferization's casts between a
// tensor-like and a buffer-like type require the same shape and element type.
class Offload_FutureTypeBase<string name, string typeMnemonic>
    : TypeDef<Offload_Dialect, name, [
        Offload_FutureLikeTypeInterface,
        DeclareTypeInterfaceMethods<ShapedTypeInterface>]> {
  let mnemonic = typeMnemonic;
  let parameters = (ins "::mlir::Type":$valueType);
  let builders = [
    TypeBuilderWithInferredContext<(ins "::mlir::Type":$valueType), [{
      return $_get(valueType.getContext(), valueType);
    }]>
  ];
  let genVerifyDecl = 1;
  let assemblyFormat = "`<` $valueType `>`";
}

def Offload_FutureType : Offload_FutureTypeBase<"Future", "future"> {
  let summary = "A tensor that an asynchronous copy is still producing";
  let description = [{
    `!offload.future<T>` is the handle of a copy in flight that will produce
    a ranked tensor of type `T`, host- or device-resident. It is made by
    `offload.offload_start` or `offload.load_start` and consumed by at most
    one `offload.wait`, which yields the `T`:

    ```mlir
    %f = offload.offload_start %x
        : tensor<8x1024xbf16> -> !offload.future<tensor<8x1024xbf16, #offload.host>>
    %h = offload.wait %f : !offload.future<tensor<8x1024xbf16, #offload.host>>
    ```

    For bufferization it is a tensor (`bufferization::TensorLikeType`): its
    buffer type is `!offload.buffer_future` of the memref that `T` becomes
    (host tensors in the `#offload.host` memory space, device tensors in the
    options' default space). So while one-shot-bufferize runs, a bufferized
    start reaches its wait through `bufferization.to_tensor`, and the IR
    verifies between any two steps.
  }];
}

def Offload_BufferFutureType
    : Offload_FutureTypeBase<"BufferFuture", "buffer_future"> {
  let summary = "A buffer that an asynchronous copy is still filling";
  let description = [{
    `!offload.buffer_future<M>` is what `!offload.future` becomes after
    bufferization: the handle of a copy in flight into the memref `M`. The
    copy ops on buffers make it, and `offload.wait` yields the `M`:

    ```mlir
    %f = offload.load_start %h
        : memref<8x1024xbf16, #offload.host> -> !offload.buffer_future<memref<8x1024xbf16>>
    %x = offload.wait %f : !offload.buffer_future<memref<8x1024xbf16>>
    ```

    For bufferization it is a buffer (`bufferization::BufferLikeType`).
  }];
}

def Offload_HostFuture : Type<
    And<[CPred<"::llvm::isa<::mlir::offload::FutureLikeType>($_self)">,
         CPred<"::mlir::offload::isHostResident(::llvm::cast<"
               "::mlir::offload::FutureLikeType>($_self).getValueType())">]>,
    "future of a host-resident tensor or buffer",
    "::mlir::offload::FutureLikeType">;

def Offload_DeviceFuture : Type<
    And<[CPred<"::llvm::isa<::mlir::offload::FutureLikeType>($_self)">,
         CPred<"!::mlir::offload::isHostResident(::llvm::cast<"
               "::mlir::offload::FutureLikeType>($_self).getValueType())">]>,
    "future of a device-resident tensor or buffer",
    "::mlir::offload::FutureLikeType">;

def Offload_AnyFuture : Type<
    CPred<"::llvm::isa<::mlir::offload::FutureLikeType>($_self)">,
    "future", "::mlir::offload::FutureLikeType">;

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Offload_DeviceTensor : Type<
    And<[AnyRankedTensor.predicate,
         CPred<"!::mlir::offload::isHostTensorType($_self)">]>,
    "device-resident ranked tensor", "::mlir::RankedTensorType">;

def Offload_HostTensor : Type<
    CPred<"::mlir::offload::isHostTensorType($_self)">,
    "host-resident ranked tensor (encoding #offload.host)",
    "::mlir::RankedTensorType">;

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

def Offload_OffloadToCpuOp : Offload_Op<"offload_to_cpu", [Pure]> {
  let summary = "Copies a device tensor to pinned host memory";
  let description = [{
    Produces a host-resident copy of a device tensor. Once the copy is made
    the device memory of `source` may be released, so the op is placed after
    the last device use of `source`. The result has the shape and element
    type of the source and the `#offload.host` encoding.

    Example:

    ```mlir
    %h = offload.offload_to_cpu %x
        : tensor<8x1024xbf16> -> tensor<8x1024xbf16, #offload.host>
    ```
  }];
  let arguments = (ins Offload_DeviceTensor:$source);
  let results = (outs Offload_HostTensor:$result);
  let assemblyFormat = "$source attr-dict `:` type($source) `->` type($result)";
  let hasVerifier = 1;
}

def Offload_LoadToGpuOp : Offload_Op<"load_to_gpu", [Pure]> {
  let summary = "Copies a host tensor back to device memory";
  let description = [{
    Produces a device-resident copy of a tensor held in pinned host memory.
    Placed right before the first real consumer of the value in backward;
    every later use reads the loaded value.

    Example:

    ```mlir
    %x = offload.load_to_gpu %h
        : tensor<8x1024xbf16, #offload.host> -> tensor<8x1024xbf16>
    ```
  }];
  let arguments = (ins Offload_HostTensor:$source);
  let results = (outs Offload_DeviceTensor:$result);
  let assemblyFormat = "$source attr-dict `:` type($source) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Recomputation
//===----------------------------------------------------------------------===//

def Offload_RecomputeOp : Offload_Op<"recompute", [
    Pure, IsolatedFromAbove, SingleBlock]> {
  let summary = "Computes a forward value again in backward";
  let description = [{
    The third fate of a saved value, beside keeping it on the device and
    offloading it: backward computes it again from `inputs` instead of
    receiving it from forward. The body is a copy of the forward ops that
    computed it; its block arguments stand for `inputs` in order, and
    `offload.yield` gives the value. The inputs are values backward has
    (saved values, kept or loaded, and the arguments of backward), never
    host-resident ones, and the body has no side effects, so computing it
    again gives the forward value bit for bit wherever its ops are
    deterministic (the planner never recomputes seeded random ops).

    `name` is the name of the forward value (its FX node for traced ops),
    for the report and the PyTorch bridge. `offload-plan` makes these ops
    (its recompute decisions), `offload-reorder-backward` places each right
    before its first real consumer, and `offload-inline-recomputes` replaces
    each by its body before bufferization.

    Example:

    ```mlir
    %n = offload.recompute(%x, %rstd) {name = "mul"}
        : (tensor<8x1024xf32>, tensor<8x1xf32>) -> tensor<8x1024xf32> {
    ^bb0(%a: tensor<8x1024xf32>, %b: tensor<8x1xf32>):
      %m = trace.op "aten.mul.Tensor"(%a, %b) {node = "mul"}
          : (tensor<8x1024xf32>, tensor<8x1xf32>) -> tensor<8x1024xf32>
      offload.yield %m : tensor<8x1024xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$inputs, StrAttr:$name);
  let results = (outs AnyType:$result);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `(` $inputs `)` attr-dict `:` functional-type($inputs, $result) $body
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def Offload_YieldOp : Offload_Op<"yield", [
    Pure, ReturnLike, Terminator, HasParent<"::mlir::offload::RecomputeOp">]> {
  let summary = "Yields the value an offload.recompute computes";
  let arguments = (ins AnyType:$value);
  let assemblyFormat = "$value attr-dict `:` type($value)";
}

//===----------------------------------------------------------------------===//
// Asynchronous forms
//===----------------------------------------------------------------------===//

// The copies in flight (mlir::offload::CopyResource, OffloadDialect.h). Starts
// write it and waits read and free it, each on its own future; no other op
// touches it, so a copy is ordered only against its own start or wait, the
// buffers it reads, and ops whose effects are unknown.
def Offload_CopyResource : Resource<"::mlir::offload::CopyResource">;

def Offload_OffloadStartOp : Offload_Op<"offload_start",
    [DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "Starts copying a device tensor to pinned host memory";
  let description = [{
    The asynchronous form of `offload.offload_to_cpu`: starts the
    device-to-host copy of `source` on the copy stream and returns a future
    of the host tensor. The copy runs while later ops compute; the device
    memory of `source` is released once the copy has completed (the runtime
    frees it in stream order), so the op is placed right after the last
    device use of `source`. `offload.wait` on the future yields the host
    tensor; it orders only the readers of the host value after the copy,
    not the compute that follows it.

    Effects: it writes its future on the `offload.copies` resource (the
    copy it begins) and, on a buffer, reads `source`; on a tensor it reads no
    memory. So no cleanup merges or drops a copy, and passes may move it
    across any op whose effects are known and commute with these.
    On a buffer, `source` must be contiguous and the op consumes it, as
    `offload.offload_buffer` does: it also frees `source`, nothing may use
    its storage after the op (neither it, nor the buffer it is a view of,
    nor another view of that; reading only its sizes, as `memref.dim` does,
    is not a use), and `release_source` (set by buffer deallocation) has
    the runtime free its allocation once the copy is done, so the source
    must then be that allocation, not a view into it.

    Example:

    ```mlir
    %f = offload.offload_start %x
        : tensor<8x1024xbf16> -> !offload.future<tensor<8x1024xbf16, #offload.host>>
    ```
  }];
  let arguments = (ins AnyTypeOf<[Offload_DeviceTensor, Offload_DeviceMemRef]>:$source,
                       UnitAttr:$release_source);
  let results = (outs Offload_HostFuture:$future);
  let assemblyFormat = [{
    $source (`release_source` $release_source^)? attr-dict `:` type($source)
    `->` qualified(type($future))
  }];
  let hasVerifier = 1;
}

def Offload_LoadStartOp : Offload_Op<"load_start",
    [DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "Starts copying a host tensor back to device memory";
  let description = [{
    The asynchronous form of `offload.load_to_gpu`: allocates device memory
    for the result and starts the host-to-device copy on the copy stream.
    The op is hoisted ahead of the value's first real consumer so the copy
    overlaps compute; the matching `offload.wait` stays right before that
    consumer and stalls the compute stream only if the copy is not done.

    Every load is waited: a `load_start` whose future has no `offload.wait`
    is rejected by the verifier (the copy would hold device memory that
    nothing releases, and the compute stream would never be ordered after
    it). Effects: as `offload.offload_start`, it writes its future on the
    `offload.copies` resource and, on a buffer, reads `source`. Hoisting it
    (offload-schedule-copies) stops below any op whose effects do not
    commute with these: an op of unknown effects, or one that writes or
    frees the host buffer it reads.

    Example:

    ```mlir
    %f = offload.load_start %h
        : tensor<8x1024xbf16, #offload.host> -> !offload.future<tensor<8x1024xbf16>>
    ```
  }];
  let arguments = (ins AnyTypeOf<[Offload_HostTensor, Offload_HostMemRef]>:$source);
  let results = (outs Offload_DeviceFuture:$future);
  let assemblyFormat = "$source attr-dict `:` type($source) `->` qualified(type($future))";
  let hasVerifier = 1;
}

def Offload_OffloadGroupStartOp : Offload_Op<"offload_group_start",
    [DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "Starts copying several device tensors to host as one transfer";
  let description = [{
    Several `offload.offload_start`s issued at the same point as one
    transfer: the runtime copies the sources side by side into one pinned
    block with one batched copy call, paying the per-copy host cost and the
    link's latency once, and the copies complete together. Each source gets
    its own future, waited on its own by `offload.wait`. Made by
    `offload-schedule-copies` (option `coalesce-below`) from starts of small
    copies the cost model issues at one point; every source is as that of
    `offload.offload_start` (on buffers: contiguous, consumed, and with
    `release_source` all of them handed to the runtime, so no two of them
    may share an allocation). The verifier follows views: no source's
    storage (the buffer it views and every other view of that) is used
    after the op.

    Example:

    ```mlir
    %f:2 = offload.offload_group_start %x, %y
        : tensor<1024xf32>, tensor<256xf32>
        -> !offload.future<tensor<1024xf32, #offload.host>>,
           !offload.future<tensor<256xf32, #offload.host>>
    ```
  }];
  let arguments = (ins
      Variadic<AnyTypeOf<[Offload_DeviceTensor, Offload_DeviceMemRef]>>:$sources,
      UnitAttr:$release_source);
  let results = (outs Variadic<Offload_HostFuture>:$futures);
  let assemblyFormat = [{
    $sources (`release_source` $release_source^)? attr-dict `:` type($sources)
    `->` qualified(type($futures))
  }];
  let hasVerifier = 1;
}

def Offload_LoadGroupStartOp : Offload_Op<"load_group_start",
    [DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "Starts copying several host tensors to device as one transfer";
  let description = [{
    Several `offload.load_start`s issued at the same point as one transfer:
    one batched host-to-device copy call, the per-copy host cost and the
    link's latency paid once, the copies complete together. Each source
    gets its own future, and every future must be waited by one
    `offload.wait` (as for `offload.load_start`). Made by
    `offload-schedule-copies` (option `coalesce-below`).

    Example:

    ```mlir
    %f:2 = offload.load_group_start %a, %b
        : tensor<1024xf32, #offload.host>, tensor<256xf32, #offload.host>
        -> !offload.future<tensor<1024xf32>>, !offload.future<tensor<256xf32>>
    ```
  }];
  let arguments = (ins
      Variadic<AnyTypeOf<[Offload_HostTensor, Offload_HostMemRef]>>:$sources);
  let results = (outs Variadic<Offload_DeviceFuture>:$futures);
  let assemblyFormat = [{
    $sources attr-dict `:` type($sources) `->` qualified(type($futures))
  }];
  let hasVerifier = 1;
}

def Offload_WaitOp : Offload_Op<"wait", [
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    TypesMatchWith<"result type is the value type of the future",
                   "future", "result",
                   "::llvm::cast<::mlir::offload::FutureLikeType>($_self).getValueType()">]> {
  let summary = "Waits for an asynchronous copy and yields its value";
  let description = [{
    Yields the value a copy started by `offload.offload_start` or
    `offload.load_start` produces, once the copy has completed. Every future
    is waited at most once, in the block that started it; readers of the
    result are ordered after the copy. For a load, the compute stream stalls
    here until the copy is done (exposed copy time); for an offload, only
    readers of the host value (the return, then the backward's loads) wait.

    The op is not `Pure`: it reads and frees its future on the
    `offload.copies` resource (it observes the end of the copy and retires
    it). So it is never dead code, even when its result is unused, and it
    moves only where those effects allow: never above its start, and across
    any other op whose effects are known. On a buffer future, its result is
    a new buffer, as that of `offload.offload_buffer` or
    `offload.load_buffer` is: the wait allocates and writes it (the copy's
    memory becomes visible here), so buffer deallocation owns it and frees
    it after its last use.

    Example:

    ```mlir
    %x = offload.wait %f : !offload.future<tensor<8x1024xbf16>>
    ```
  }];
  let arguments = (ins Arg<Offload_AnyFuture, "the copy it waits for">:$future);
  let results = (outs AnyTypeOf<[AnyRankedTensor, AnyMemRef]>:$result);
  let assemblyFormat = "$future attr-dict `:` qualified(type($future))";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Recorded placements
//===----------------------------------------------------------------------===//

// The placements offload-plan records (mlir::offload::PlacementResource,
// OffloadDialect.h). Each `offload.placement` writes it; no other op touches
// it, so a placement keeps its place among the others and is never dead code,
// while every other op moves across it as if it were not there.
def Offload_PlacementResource : Resource<"::mlir::offload::PlacementResource">;

def Offload_PlacementKind : I32EnumAttr<"PlacementKind",
    "which copy ops an offload.placement places", [
      I32EnumAttrCase<"LoadStarts", 0, "load_starts">,
      I32EnumAttrCase<"OffloadWaits", 1, "offload_waits">]> {
  let cppNamespace = "::mlir::offload";
}

def Offload_PlacementOp : Offload_Op<"placement", [
    MemoryEffects<[MemWrite<Offload_PlacementResource>]>]> {
  let summary = "Where offload-plan places the copies of saved values";
  let description = [{
    Marks the point where it stands as where the plan `offload-plan` chose
    puts copies that do not exist yet; `offload-schedule-copies` puts them
    there, so the planner's prediction and the scheduled IR have one source
    of truth. `saved` names saved values by their index among the step's
    saved results (0 is the first result past `offload.num_outputs`), each
    at most once. Of kind `load_starts`, in backward: the loads of
    these saved values start here, in this order. Of kind `offload_waits`,
    in forward: the offloads of these saved values are waited for here.

    ```mlir
    offload.placement load_starts [0, 2]
    %e = trace.op "aten.mm.default"(%d, %d) : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
    ```

    It is an op and not an attribute on the op after it, so other passes
    between the plan and the scheduling cannot lose it or let it stop them:
    it has no operands or results, and its one effect is a write of its own
    resource, `offload.placements`. So canonicalization and CSE keep it
    (never dead, never merged with another), loop-invariant code motion does
    not hoist it, and it stops none of them from merging, folding or
    hoisting the effect-free ops around it. (Upstream CSE merges two ops
    that read memory only if no op between them writes any resource, so a
    placement between two such ops keeps them apart.) The inliner may
    inline it.

    The passes keep it where it makes sense and drop it elsewhere, never
    failing on it: `offload-plan` replaces a step's placements with those
    of its new plan; where saved values leave the interface
    (`offload-insert-offloads`, `offload-insert-recomputes`), `saved` is
    renumbered (TrainingStep::dropSavedResults); `offload-schedule-copies`
    places the copies and erases every placement in the module, with a
    remark for one that places nothing (not at the top level of a step's
    forward or backward, of the wrong kind there, or naming a saved value
    the step does not have; the copies it would have placed are then placed
    by the cost model, with a remark each). The lowering to LLVM erases any
    placement left, with a remark; bufferization leaves it as it is (it has
    no tensors).
  }];
  let arguments = (ins Offload_PlacementKind:$kind, DenseI64ArrayAttr:$saved);
  let assemblyFormat = "$kind $saved attr-dict";
  let hasVerifier = 1;
}

#endif // OFFLOAD_DIALECT_OFFLOAD_OFFLOADOPS_TD
