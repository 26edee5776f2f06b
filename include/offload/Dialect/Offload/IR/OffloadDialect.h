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
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "offload/Dialect/Offload/IR/OffloadOpsDialect.h.inc"

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

/// True for a memref in the `#offload.host` memory space with an identity
/// layout (what bufferizing a host tensor produces).
bool isHostMemRefType(Type type);

/// Checks that a copy from `source` to `result` keeps the kind (tensor or
/// buffer), shape and element type, and that a result buffer has an identity
/// layout (it is a new allocation); emits the error on `op`.
LogicalResult verifyCopyTypes(Operation *op, Type source, Type result);

/// True for a host tensor or a host memref.
inline bool isHostResident(Type type) {
  return isHostTensorType(type) || isHostMemRefType(type);
}

} // namespace offload
} // namespace mlir

#define GET_TYPEDEF_CLASSES
#include "offload/Dialect/Offload/IR/OffloadOpsTypes.h.inc"

#define GET_OP_CLASSES
#include "offload/Dialect/Offload/IR/OffloadOps.h.inc"

#define GET_OP_CLASSES
#include "offload/Dialect/Offload/IR/OffloadBufferOps.h.inc"

#endif // OFFLOAD_DIALECT_OFFLOAD_IR_OFFLOADDIALECT_H
