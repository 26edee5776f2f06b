//===- TraceDialect.h - trace dialect ---------------------------*- C++ -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_DIALECT_TRACE_IR_TRACEDIALECT_H
#define OFFLOAD_DIALECT_TRACE_IR_TRACEDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "offload/Interfaces/StorageViewOpInterface.h"
#include "offload/Interfaces/TracedOpInterface.h"

#include "offload/Dialect/Trace/IR/TraceOpsDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "offload/Dialect/Trace/IR/TraceAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "offload/Dialect/Trace/IR/TraceOpsTypes.h.inc"

namespace mlir {
namespace trace {
/// The random-number state that ops marked `rng` read and advance: one
/// resource for every generator, so no two such ops trade places.
struct RandomStateResource
    : public SideEffects::Resource::Base<RandomStateResource> {
  StringRef getName() final { return "trace.random_state"; }
};
} // namespace trace
} // namespace mlir

MLIR_DECLARE_EXPLICIT_TYPE_ID(::mlir::trace::RandomStateResource)

#define GET_OP_CLASSES
#include "offload/Dialect/Trace/IR/TraceOps.h.inc"

#endif // OFFLOAD_DIALECT_TRACE_IR_TRACEDIALECT_H
