//===- OffloadDialect.h - offload dialect -----------------------*- C++ -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_DIALECT_OFFLOAD_IR_OFFLOADDIALECT_H
#define OFFLOAD_DIALECT_OFFLOAD_IR_OFFLOADDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <optional>

#include "offload/Dialect/Offload/IR/OffloadOpsDialect.h.inc"

#include "offload/Dialect/Offload/IR/OffloadEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "offload/Dialect/Offload/IR/OffloadAttrs.h.inc"

namespace mlir {
namespace offload {

/// True for a ranked tensor whose encoding is `#offload.host`.
bool isHostTensorType(Type type);

/// The host-resident counterpart of a device tensor type: same shape and
/// element type, `#offload.host` encoding.
RankedTensorType getHostTensorType(RankedTensorType deviceType);

/// The device-resident counterpart of a host tensor type.
RankedTensorType getDeviceTensorType(RankedTensorType hostType);

/// True for a memref in the `#offload.host` memory space, whatever its
/// layout: where a buffer lives is decided by its memory space alone, the same
/// everywhere (verifiers, bufferization, lowering).
bool isHostMemRefType(Type type);

/// The layout check for host buffers, separate from where they live: a host
/// buffer that a copy reads must have an identity layout, since a block of
/// the runtime's pinned pool is dense from its start. Emits the error on `op`,
/// naming the bufferization option that gives host buffers at function
/// boundaries that layout. Other types pass.
LogicalResult verifyHostBufferLayout(Operation *op, Type type);

/// True for a memref whose elements are dense in row-major order: an identity
/// layout, or a strided layout whose strides are the row-major ones (any
/// offset). A copy reads its source as one run of bytes, so only such a
/// source can be copied as is.
bool isContiguousMemRef(MemRefType type);

/// Checks that a copy from `source` to `result` keeps the kind (tensor or
/// buffer), shape and element type, that a device tensor has no encoding (a
/// host tensor's is #offload.host, so another would be dropped), and that a
/// result buffer has an identity layout (it is a new allocation); emits the
/// error on `op`.
LogicalResult verifyCopyTypes(Operation *op, Type source, Type result);

/// Bytes one element of type `element` occupies in a buffer: its bit width
/// rounded up to whole bytes, so i1 and other sub-byte types take one byte
/// each (PyTorch's bool, and memrefs lowered to LLVM, store them so); twice
/// the part's for a complex; `indexBits` rounded up for index. nullopt for
/// element types without a fixed width, and for widths whose padding depends
/// on the target's data layout (rounded up, anything but 1, 2, 4, 8 or 16
/// bytes: i24, f80).
///
/// This is the one definition of sizes: the analyses, the cost model, the
/// report and the lowering's copy sizes all go through it.
std::optional<int64_t> getElementStorageBytes(Type element,
                                              unsigned indexBits = 64);

/// Bytes a statically shaped tensor or memref of `type` occupies (elements
/// times getElementStorageBytes); nullopt for dynamic shapes, unranked types,
/// element types without a known size and sizes that do not fit in 64 bits.
std::optional<int64_t> getStorageBytes(Type type);

/// Checks that a buffer `source` of a device-to-host copy is contiguous
/// (isContiguousMemRef); emits the error on `op`. Tensors pass.
LogicalResult verifyContiguousSource(Operation *op, Type source);

/// Checks the consumed source of a device-to-host copy: a buffer source has
/// no use after `op` in its block; `releaseSource` only on a buffer. Emits
/// the error on `op`.
LogicalResult verifyConsumedSource(Operation *op, Value source,
                                   bool releaseSource);

/// True for a use of a buffer that reads no element of it and makes no new
/// name for it: an op without memory effects whose results are all scalars,
/// such as `memref.dim`. Such a use may follow the op that consumes the
/// buffer (a view makes a new name; its uses count instead).
bool readsOnlyMetadata(Operation *user);

/// Erases offload-plan's placements (every `offload.placement`) nested in
/// `root`.
void erasePlacements(Operation *root);

/// True for a host tensor or a host memref.
inline bool isHostResident(Type type) {
  return isHostTensorType(type) || isHostMemRefType(type);
}

/// The copies in flight, as a side-effect resource. A start writes it (on its
/// future: it begins one copy) and a wait reads and frees it (on the future it
/// waits: it observes the copy's end and retires it). Effects on it that name
/// different futures are on different copies and commute; nothing else
/// touches it. Since no other op has effects on this resource, passes can
/// move copies across any op whose effects are known and do not involve the
/// copy's buffers (see `effectsCommute` in offload/Analysis/Effects.h), and
/// no cleanup can merge, hoist or drop a start or a wait.
struct CopyResource : public SideEffects::Resource::Base<CopyResource> {
  StringRef getName() final { return "offload.copies"; }
};

/// The placements offload-plan records, as a side-effect resource: each
/// `offload.placement` writes it and nothing else touches it, so placements
/// are never dead code and keep their order among themselves, while every
/// other op commutes with them (see `offload.placement`).
struct PlacementResource
    : public SideEffects::Resource::Base<PlacementResource> {
  StringRef getName() final { return "offload.placements"; }
};

} // namespace offload
} // namespace mlir

MLIR_DECLARE_EXPLICIT_TYPE_ID(::mlir::offload::CopyResource)
MLIR_DECLARE_EXPLICIT_TYPE_ID(::mlir::offload::PlacementResource)

#include "offload/Dialect/Offload/IR/OffloadTypeInterfaces.h.inc"

#define GET_TYPEDEF_CLASSES
#include "offload/Dialect/Offload/IR/OffloadOpsTypes.h.inc"

namespace mlir {
namespace offload {
/// The future of a copy that produces `valueType`: `!offload.future` of a
/// ranked tensor, `!offload.buffer_future` of a memref.
FutureLikeType getFutureType(Type valueType);
} // namespace offload
} // namespace mlir

#define GET_OP_CLASSES
#include "offload/Dialect/Offload/IR/OffloadOps.h.inc"

#define GET_OP_CLASSES
#include "offload/Dialect/Offload/IR/OffloadBufferOps.h.inc"

namespace mlir {
namespace offload {
/// True for the ops that start device-to-host copies (offload_start,
/// offload_group_start) and host-to-device copies (load_start,
/// load_group_start).
inline bool isOffloadStart(Operation *op) {
  return isa_and_nonnull<OffloadStartOp, OffloadGroupStartOp>(op);
}
inline bool isLoadStart(Operation *op) {
  return isa_and_nonnull<LoadStartOp, LoadGroupStartOp>(op);
}
inline bool isCopyStart(Operation *op) {
  return isOffloadStart(op) || isLoadStart(op);
}
/// The value whose copy `future` (a result of a copy start, single or
/// grouped) carries; null for any other value.
Value getStartedCopySource(Value future);
} // namespace offload
} // namespace mlir

#endif // OFFLOAD_DIALECT_OFFLOAD_IR_OFFLOADDIALECT_H
