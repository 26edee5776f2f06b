//===- OffloadOps.cpp - offload dialect ops -------------------------------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "offload/Dialect/Offload/IR/OffloadDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::offload;

/// A copy between memories keeps shape and element type; only the encoding
/// (the memory it lives in) changes.
static LogicalResult verifySameTensorContents(Operation *op, Type source,
                                              Type result) {
  auto src = cast<RankedTensorType>(source);
  auto res = cast<RankedTensorType>(result);
  if (src.getShape() != res.getShape() ||
      src.getElementType() != res.getElementType())
    return op->emitOpError()
           << "result " << result
           << " must have the shape and element type of source " << source;
  return success();
}

LogicalResult OffloadToCpuOp::verify() {
  return verifySameTensorContents(*this, getSource().getType(),
                                  getResult().getType());
}

LogicalResult LoadToGpuOp::verify() {
  return verifySameTensorContents(*this, getSource().getType(),
                                  getResult().getType());
}

#define GET_OP_CLASSES
#include "offload/Dialect/Offload/IR/OffloadOps.cpp.inc"
