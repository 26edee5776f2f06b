//===- TraceDialect.cpp - trace dialect -----------------------------------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "offload/Dialect/Trace/IR/TraceDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::trace;

#include "offload/Dialect/Trace/IR/TraceOpsDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "offload/Dialect/Trace/IR/TraceAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "offload/Dialect/Trace/IR/TraceOpsTypes.cpp.inc"

MLIR_DEFINE_EXPLICIT_TYPE_ID(::mlir::trace::RandomStateResource)

void TraceDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "offload/Dialect/Trace/IR/TraceOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "offload/Dialect/Trace/IR/TraceAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "offload/Dialect/Trace/IR/TraceOpsTypes.cpp.inc"
      >();
}

/// Checks that every `#trace.operand<i>` in the argument spec names an
/// operand, and that every operand is placed somewhere, so the call can be
/// rebuilt exactly.
static LogicalResult verifyArgumentSpec(Operation *op, unsigned numOperands,
                                        ArrayAttr args, DictionaryAttr kwargs) {
  if (!args && !kwargs)
    return success();
  llvm::SmallBitVector placed(numOperands);
  bool outOfRange = false;
  int64_t badIndex = 0;
  auto visit = [&](Attribute attr) {
    attr.walk([&](OperandAttr operand) {
      int64_t index = operand.getIndex();
      if (index < 0 || index >= static_cast<int64_t>(numOperands)) {
        outOfRange = true;
        badIndex = index;
        return;
      }
      placed.set(index);
    });
  };
  if (args)
    visit(args);
  if (kwargs)
    visit(kwargs);
  if (outOfRange)
    return op->emitOpError() << "argument spec refers to operand #" << badIndex
                             << " but the op has " << numOperands
                             << " operands";
  if (!placed.all())
    return op->emitOpError() << "operand #" << placed.find_first_unset()
                             << " does not appear in 'args' or 'kwargs'";
  return success();
}

//===----------------------------------------------------------------------===//
// OpOp
//===----------------------------------------------------------------------===//

LogicalResult OpOp::verify() {
  if (getTarget().empty())
    return emitOpError() << "requires a non-empty target name";
  if (std::optional<ArrayRef<int64_t>> mutated = getMutates()) {
    for (int64_t index : *mutated)
      if (index < 0 || index >= static_cast<int64_t>(getInputs().size()))
        return emitOpError() << "'mutates' names operand #" << index
                             << " but the op has " << getInputs().size()
                             << " operands";
  }
  return verifyArgumentSpec(*this, getInputs().size(), getArgsAttr(),
                            getKwargsAttr());
}

void OpOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  // A random op reads and advances random-number state, whichever generator
  // it draws from: one resource, so random ops keep their order.
  if (getRng()) {
    effects.emplace_back(MemoryEffects::Read::get(),
                         RandomStateResource::get());
    effects.emplace_back(MemoryEffects::Write::get(),
                         RandomStateResource::get());
  }
  std::optional<ArrayRef<int64_t>> mutated = getMutates();
  if (!mutated)
    return;
  for (int64_t index : *mutated) {
    OpOperand &operand = getInputsMutable()[index];
    effects.emplace_back(MemoryEffects::Read::get(), &operand,
                         SideEffects::DefaultResource::get());
    effects.emplace_back(MemoryEffects::Write::get(), &operand,
                         SideEffects::DefaultResource::get());
  }
}

//===----------------------------------------------------------------------===//
// ViewOp
//===----------------------------------------------------------------------===//

LogicalResult ViewOp::verify() {
  if (getTarget().empty())
    return emitOpError() << "requires a non-empty target name";
  return verifyArgumentSpec(*this, 1, getArgsAttr(), getKwargsAttr());
}

Value ViewOp::getViewSource() { return getSource(); }

#define GET_OP_CLASSES
#include "offload/Dialect/Trace/IR/TraceOps.cpp.inc"
