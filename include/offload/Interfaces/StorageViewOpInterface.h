//===- StorageViewOpInterface.h - Tensor views of storage -------*- C++ -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// StorageViewOpInterface: an op whose result shares one operand's storage and
// reads none of its data (see StorageViewOpInterface.td). Below the dialects,
// like TracedOpInterface.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_INTERFACES_STORAGEVIEWOPINTERFACE_H
#define OFFLOAD_INTERFACES_STORAGEVIEWOPINTERFACE_H

#include "mlir/IR/OpDefinition.h"

#include "offload/Interfaces/StorageViewOpInterface.h.inc"

#endif // OFFLOAD_INTERFACES_STORAGEVIEWOPINTERFACE_H
