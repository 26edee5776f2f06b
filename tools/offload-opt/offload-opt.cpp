//===- offload-opt.cpp - The offload-mlir optimizer driver ----------------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// mlir-opt with the offload and trace dialects and every offload pass, next to
// the upstream dialects and passes a pipeline from traced IR to the LLVM
// dialect needs (canonicalize, cse, one-shot-bufferize, conversions to LLVM).
//
//===----------------------------------------------------------------------===//

#include "offload/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::offload::registerAllOffloadPasses();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::offload::registerAllOffloadDialects(registry);

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "offload-mlir optimizer driver\n", registry));
}
