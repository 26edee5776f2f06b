//===- TraceToCalls.cpp - Framework-traced ops as external calls ----------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// Guarantees: no trace op is left; each became a func.call of a private
// declaration whose type is the op's, in the op's nearest module (a nested
// module gets its own; a traced op under another kind of symbol table is an
// error), with every attribute of the op kept on
// the call (prefixed `trace.`), so the framework side can run the call and
// the round trip loses nothing.
//
//===----------------------------------------------------------------------===//

#include "offload/Conversion/Passes.h"
#include "offload/Dialect/Trace/IR/TraceDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"

namespace mlir {
namespace offload {
#define GEN_PASS_DEF_CONVERTTRACETOCALLS
#include "offload/Conversion/Passes.h.inc"
} // namespace offload
} // namespace mlir

using namespace mlir;

namespace {
/// Declares one external function per (target, signature).
class CalleeTable {
public:
  explicit CalleeTable(ModuleOp module)
      : module(module), symbols(module) {}

  func::FuncOp get(StringRef target, FunctionType type, Location loc) {
    auto key = std::make_pair(StringAttr::get(module.getContext(), target),
                              type);
    auto it = callees.find(key);
    if (it != callees.end())
      return it->second;
    unsigned &count = perTarget[target];
    std::string name = (target + "_" + Twine(count++)).str();
    OpBuilder builder = OpBuilder::atBlockBegin(module.getBody());
    auto callee = func::FuncOp::create(builder, loc, name, type);
    callee.setPrivate();
    callee->setAttr("trace.target", builder.getStringAttr(target));
    symbols.insert(callee); // renames on a clash with an existing symbol
    callees[key] = callee;
    return callee;
  }

private:
  ModuleOp module;
  SymbolTable symbols;
  llvm::DenseMap<std::pair<StringAttr, Type>, func::FuncOp> callees;
  llvm::StringMap<unsigned> perTarget;
};

void convertToCall(Operation *op, StringRef target, CalleeTable &callees) {
  OpBuilder builder(op);
  auto type = builder.getFunctionType(op->getOperandTypes(),
                                      op->getResultTypes());
  func::FuncOp callee = callees.get(target, type, op->getLoc());
  auto call = func::CallOp::create(builder, op->getLoc(), callee,
                                   op->getOperands());
  for (NamedAttribute attr : op->getAttrs())
    if (attr.getName() != "target")
      call->setAttr(("trace." + attr.getName().getValue()).str(),
                    attr.getValue());
  op->replaceAllUsesWith(call.getResults());
  op->erase();
}

struct ConvertTraceToCalls
    : public offload::impl::ConvertTraceToCallsBase<ConvertTraceToCalls> {
  void runOnOperation() override {
    // A call resolves its callee in its nearest symbol table, so each module
    // (a nested one too) gets its own declarations.
    llvm::MapVector<Operation *, std::unique_ptr<CalleeTable>> tables;
    SmallVector<Operation *> traced;
    WalkResult result = getOperation().walk([&](Operation *op) {
      if (!isa<trace::OpOp, trace::ViewOp>(op))
        return WalkResult::advance();
      Operation *table = SymbolTable::getNearestSymbolTable(op->getParentOp());
      auto module = dyn_cast_or_null<ModuleOp>(table);
      if (!module) {
        InFlightDiagnostic diag =
            op->emitError() << "cannot declare the callee of a traced op "
                               "whose nearest symbol table is not a module";
        if (table)
          diag.attachNote(table->getLoc())
              << "its nearest symbol table is '" << table->getName() << "'";
        return WalkResult::interrupt();
      }
      std::unique_ptr<CalleeTable> &callees = tables[module];
      if (!callees)
        callees = std::make_unique<CalleeTable>(module);
      traced.push_back(op);
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return signalPassFailure();
    for (Operation *op : traced) {
      auto module = cast<ModuleOp>(
          SymbolTable::getNearestSymbolTable(op->getParentOp()));
      convertToCall(op, cast<offload::TracedOpInterface>(op).getTarget(),
                    *tables[module]);
    }
  }
};
} // namespace
