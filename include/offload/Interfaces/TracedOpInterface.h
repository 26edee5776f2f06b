//===- TracedOpInterface.h - Ops that stand for framework calls -*- C++ -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// TracedOpInterface: an op that stands for one call of a framework op (see
// TracedOpInterface.td). Below the dialects: the trace dialect implements
// it and the analyses read it, and neither depends on the other for it.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_INTERFACES_TRACEDOPINTERFACE_H
#define OFFLOAD_INTERFACES_TRACEDOPINTERFACE_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpDefinition.h"

#include <optional>

#include "offload/Interfaces/TracedOpInterface.h.inc"

#endif // OFFLOAD_INTERFACES_TRACEDOPINTERFACE_H
