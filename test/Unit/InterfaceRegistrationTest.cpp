//===- InterfaceRegistrationTest.cpp - Models are promised or depended on -===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// The offload dialect promises the models of upstream interfaces that live in
// other libraries (so a tool that forgets them gets MLIR's error naming the
// interface, in builds with assertions), and registerAllOffloadDialects
// resolves every promise. The passes that read tensor views register the
// tensor storage-view models themselves, so they see views even in a context
// that was given no registry. The training-step contract is checked as a
// symbol use where the function ops have the models, and by the attribute
// verifier where they do not.
//
//===----------------------------------------------------------------------===//

#include "offload/Dialect/Offload/IR/OffloadDialect.h"
#include "offload/InitAll.h"
#include "offload/Interfaces/StorageViewOpInterface.h"
#include "offload/Transforms/Passes.h"

#include "mlir/Conversion/ConvertToLLVM/ToLLVMInterface.h"
#include "mlir/Dialect/Bufferization/IR/BufferDeallocationOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::offload;

namespace {

using bufferization::BufferDeallocationOpInterface;
using bufferization::BufferizableOpInterface;

/// Unresolved promises of `dialect`: the (op or dialect, interface) pairs the
/// project's registration functions must resolve.
std::vector<bool> promises(Dialect *dialect) {
  return {
      dialect->hasPromisedInterface<OffloadToCpuOp, BufferizableOpInterface>(),
      dialect->hasPromisedInterface<LoadToGpuOp, BufferizableOpInterface>(),
      dialect->hasPromisedInterface<OffloadStartOp, BufferizableOpInterface>(),
      dialect->hasPromisedInterface<LoadStartOp, BufferizableOpInterface>(),
      dialect->hasPromisedInterface<WaitOp, BufferizableOpInterface>(),
      dialect->hasPromisedInterface<OffloadBufferOp,
                                    BufferDeallocationOpInterface>(),
      dialect->hasPromisedInterface<OffloadStartOp,
                                    BufferDeallocationOpInterface>(),
      dialect->hasPromisedInterface<OffloadDialect,
                                    ConvertToLLVMPatternInterface>(),
      dialect->hasPromisedInterface<FutureType, bufferization::TensorLikeType>(),
      dialect->hasPromisedInterface<BufferFutureType,
                                    bufferization::BufferLikeType>(),
  };
}

TEST(OffloadDialect, PromisesItsExternalModels) {
  MLIRContext context;
  Dialect *dialect = context.getOrLoadDialect<OffloadDialect>();
  for (bool promised : promises(dialect))
    EXPECT_TRUE(promised);
}

TEST(OffloadDialect, RegisterAllResolvesThePromises) {
  DialectRegistry registry;
  registerAllOffloadDialects(registry);
  MLIRContext context(registry);
  Dialect *dialect = context.getOrLoadDialect<OffloadDialect>();
  for (bool promised : promises(dialect))
    EXPECT_FALSE(promised);
}

TEST(OffloadDialect, FuturesAreTensorsAndBuffersToBufferization) {
  DialectRegistry registry;
  registerAllOffloadDialects(registry);
  MLIRContext context(registry);
  context.getOrLoadDialect<OffloadDialect>();
  auto tensor = RankedTensorType::get({8, 16}, Float32Type::get(&context));
  auto future = FutureType::get(tensor);
  ASSERT_TRUE(isa<bufferization::TensorLikeType>(future));
  EXPECT_FALSE(isa<bufferization::BufferLikeType>(future));

  bufferization::BufferizationOptions options;
  FailureOr<bufferization::BufferLikeType> buffer =
      cast<bufferization::TensorLikeType>(future).getBufferType(
          options, [&] { return emitError(UnknownLoc::get(&context)); });
  ASSERT_TRUE(succeeded(buffer));
  auto bufferFuture = dyn_cast<BufferFutureType>(*buffer);
  ASSERT_TRUE(bufferFuture);
  EXPECT_EQ(cast<MemRefType>(bufferFuture.getValueType()).getShape(),
            tensor.getShape());
  EXPECT_TRUE(isa<bufferization::BufferLikeType>(bufferFuture));
  EXPECT_FALSE(isa<bufferization::TensorLikeType>(bufferFuture));
}

/// Parses `ir` in `context` and returns the diagnostics' text.
std::string parseErrors(MLIRContext &context, const char *ir) {
  std::string errors;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    errors += diag.str() + "\n";
    return success();
  });
  (void)parseSourceString<ModuleOp>(ir, &context);
  return errors;
}

// A forward whose saved result does not match backward's argument.
const char *kMismatchedStep = R"mlir(
  func.func @forward(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
      attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
    return %x, %x : tensor<4xf32>, tensor<4xf32>
  }
  func.func @backward(%s: tensor<8xf32>) {
    return
  }
)mlir";
// What the verifier says of it, whichever path checks the contract.
const char *kMismatchError =
    "saved result #1 has type 'tensor<4xf32>' but backward argument #0 of "
    "@backward has type 'tensor<8xf32>'";

TEST(TrainingStep, ContractIsCheckedAsASymbolUse) {
  DialectRegistry registry;
  registerAllOffloadDialects(registry);
  registry.insert<func::FuncDialect, LLVM::LLVMDialect>();
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // The function ops check the backward function they name with the
  // module's symbol uses, not from the attribute verifier.
  EXPECT_TRUE(OperationName(func::FuncOp::getOperationName(), &context)
                  .hasInterface<SymbolUserOpInterface>());
  EXPECT_TRUE(OperationName(LLVM::LLVMFuncOp::getOperationName(), &context)
                  .hasInterface<SymbolUserOpInterface>());
  EXPECT_NE(parseErrors(context, kMismatchedStep).find(kMismatchError),
            std::string::npos);
}

TEST(TrainingStep, ContractIsCheckedWithoutTheModels) {
  // A context without the models (a tool that loads only the dialect)
  // still checks the whole contract, from the attribute verifier.
  MLIRContext context;
  context.loadDialect<OffloadDialect, func::FuncDialect>();
  EXPECT_NE(parseErrors(context, kMismatchedStep).find(kMismatchError),
            std::string::npos);
}

TEST(StorageViews, PassesRegisterTheTensorModels) {
  MLIRContext context;
  context.loadDialect<func::FuncDialect, tensor::TensorDialect>();
  // %1 views forward output #0, so offloading it would free nothing.
  const char *ir = R"mlir(
    func.func @forward() -> (tensor<256xf32>, tensor<16x16xf32>)
        attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
      %0 = tensor.empty() : tensor<256xf32>
      %1 = tensor.expand_shape %0 [[0, 1]] output_shape [16, 16]
          : tensor<256xf32> into tensor<16x16xf32>
      return %0, %1 : tensor<256xf32>, tensor<16x16xf32>
    }
    func.func @backward(%a: tensor<16x16xf32>) {
      return
    }
  )mlir";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(ir, &context);
  ASSERT_TRUE(module);
  PassManager pm(&context);
  pm.addPass(createFindSavedActivations());
  ASSERT_TRUE(succeeded(pm.run(*module)));

  auto forward = module->lookupSymbol<func::FuncOp>("forward");
  auto kept = forward.getResultAttrOfType<StringAttr>(1, "offload.kept");
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept.getValue(), "shares storage with forward output #0");
  std::optional<RegisteredOperationName> expand =
      RegisteredOperationName::lookup(TypeID::get<tensor::ExpandShapeOp>(),
                                      &context);
  ASSERT_TRUE(expand);
  EXPECT_TRUE(expand->hasInterface<StorageViewOpInterface>());
}

} // namespace
