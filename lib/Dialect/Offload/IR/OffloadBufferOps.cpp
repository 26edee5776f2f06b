//===- OffloadBufferOps.cpp - offload ops on buffers ----------------------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "offload/Dialect/Offload/IR/OffloadDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::offload;

/// A buffer copy between memories keeps shape and element type.
static LogicalResult verifySameBufferContents(Operation *op, Type source,
                                              Type result) {
  auto src = cast<MemRefType>(source);
  auto res = cast<MemRefType>(result);
  if (src.getShape() != res.getShape() ||
      src.getElementType() != res.getElementType())
    return op->emitOpError()
           << "result " << result
           << " must have the shape and element type of source " << source;
  if (!res.getLayout().isIdentity())
    return op->emitOpError() << "result " << result
                             << " must have an identity layout (it is a new "
                                "allocation)";
  return success();
}

LogicalResult OffloadBufferOp::verify() {
  return verifySameBufferContents(*this, getSource().getType(),
                                  getResult().getType());
}

LogicalResult LoadBufferOp::verify() {
  return verifySameBufferContents(*this, getSource().getType(),
                                  getResult().getType());
}

#define GET_OP_CLASSES
#include "offload/Dialect/Offload/IR/OffloadBufferOps.cpp.inc"
