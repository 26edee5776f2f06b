//===- TrainingStepSymbolUses.cpp - The step contract's symbol uses -------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "offload/Dialect/Offload/Transforms/TrainingStepSymbolUses.h"
#include "offload/Dialect/Offload/IR/TrainingStep.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::offload;

namespace {
template <typename FuncOpT>
struct TrainingStepSymbolUser
    : public SymbolUserOpInterface::ExternalModel<
          TrainingStepSymbolUser<FuncOpT>, FuncOpT> {
  LogicalResult verifySymbolUses(Operation *op,
                                 SymbolTableCollection &tables) const {
    return verifyTrainingStepSymbolUses(cast<FunctionOpInterface>(op),
                                        tables);
  }
};
} // namespace

void mlir::offload::registerTrainingStepSymbolUseModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, func::FuncDialect *) {
    func::FuncOp::attachInterface<TrainingStepSymbolUser<func::FuncOp>>(*ctx);
  });
  registry.addExtension(+[](MLIRContext *ctx, LLVM::LLVMDialect *) {
    LLVM::LLVMFuncOp::attachInterface<
        TrainingStepSymbolUser<LLVM::LLVMFuncOp>>(*ctx);
  });
}
