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

LogicalResult OffloadBufferOp::verify() {
  if (failed(verifyCopyTypes(*this, getSource().getType(),
                             getResult().getType())))
    return failure();
  if (failed(verifyContiguousSource(*this, getSource().getType())))
    return failure();
  return verifyConsumedSource(*this, getSource(), getReleaseSource());
}

LogicalResult LoadBufferOp::verify() {
  if (failed(verifyCopyTypes(*this, getSource().getType(),
                             getResult().getType())))
    return failure();
  return verifyHostBufferLayout(*this, getSource().getType());
}

#define GET_OP_CLASSES
#include "offload/Dialect/Offload/IR/OffloadBufferOps.cpp.inc"
