//===- TrainingStepSymbolUses.h - The step contract's symbol uses -*- C++ -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// The training-step contract names the backward function by symbol
// (`offload.backward = @bwd`). Checking what needs that function (it exists,
// its argument types, the host values its body reads) is a symbol use, so it
// runs as SymbolUserOpInterface::verifySymbolUses of the function ops, with
// the module's cached symbol tables, after every op of the module verified;
// the attribute verifier keeps what the forward function states alone.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_DIALECT_OFFLOAD_TRANSFORMS_TRAININGSTEPSYMBOLUSES_H
#define OFFLOAD_DIALECT_OFFLOAD_TRANSFORMS_TRAININGSTEPSYMBOLUSES_H

namespace mlir {
class DialectRegistry;

namespace offload {

/// Attaches SymbolUserOpInterface to `func.func` and `llvm.func`, verifying
/// the contract of a forward function that carries `offload.backward`
/// (verifyTrainingStepSymbolUses). Other function ops get the same checks
/// from the attribute verifier.
void registerTrainingStepSymbolUseModels(DialectRegistry &registry);

} // namespace offload
} // namespace mlir

#endif // OFFLOAD_DIALECT_OFFLOAD_TRANSFORMS_TRAININGSTEPSYMBOLUSES_H
