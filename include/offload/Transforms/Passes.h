//===- Passes.h - offload-mlir passes ---------------------------*- C++ -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_TRANSFORMS_PASSES_H
#define OFFLOAD_TRANSFORMS_PASSES_H

#include "offload/Dialect/Offload/IR/OffloadDialect.h"
#include "offload/Dialect/Offload/IR/TrainingStep.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir {
namespace offload {

#define GEN_PASS_DECL
#include "offload/Transforms/Passes.h.inc"

/// Options of the `offload-activations` pipeline.
struct OffloadPipelineOptions
    : public PassPipelineOptions<OffloadPipelineOptions> {
  PassOptions::Option<int64_t> minBytes{
      *this, "min-bytes",
      llvm::cl::desc("Values smaller than this stay on the device"),
      llvm::cl::init(1024)};
  PassOptions::ListOption<std::string> denyOps{
      *this, "deny-ops",
      llvm::cl::desc("Producers (op names or trace targets) whose results "
                     "stay on the device")};
  PassOptions::Option<std::string> report{
      *this, "report",
      llvm::cl::desc("Print a report at the end: none, text or json"),
      llvm::cl::init("none")};
  PassOptions::Option<std::string> reportFile{
      *this, "report-file",
      llvm::cl::desc("Where the report goes; '-' is standard output"),
      llvm::cl::init("-")};
};

/// Adds find, insert-offloads, reorder-backward and insert-loads (and the
/// report, if asked for) to `pm`.
void buildOffloadPipeline(OpPassManager &pm,
                          const OffloadPipelineOptions &options);

/// Registers `offload-activations`.
void registerOffloadPipeline();

#define GEN_PASS_REGISTRATION
#include "offload/Transforms/Passes.h.inc"

} // namespace offload
} // namespace mlir

#endif // OFFLOAD_TRANSFORMS_PASSES_H
