//===- StorageViewOpInterface.cpp - Tensor views of storage ---------------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "offload/Interfaces/StorageViewOpInterface.h"

using namespace mlir;
using namespace mlir::offload;

#include "offload/Interfaces/StorageViewOpInterface.cpp.inc"
