//===- Passes.h - offload-mlir conversion passes ----------------*- C++ -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_CONVERSION_PASSES_H
#define OFFLOAD_CONVERSION_PASSES_H

#include "offload/Conversion/OffloadToLLVM/OffloadToLLVM.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
namespace offload {

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "offload/Conversion/Passes.h.inc"

} // namespace offload
} // namespace mlir

#endif // OFFLOAD_CONVERSION_PASSES_H
