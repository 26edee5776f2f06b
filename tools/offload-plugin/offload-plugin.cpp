//===- offload-plugin.cpp - offload-mlir as an mlir-opt plugin ------------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
//   mlir-opt-22 --load-dialect-plugin=OffloadPlugin.so \
//               --load-pass-plugin=OffloadPlugin.so \
//               --pass-pipeline="builtin.module(offload-activations{min-bytes=4096 report=text})"
//
// The dialects, their interface models and every pass and pipeline of the
// project, registered as mlir-opt's plugin interfaces expect. mlir-opt builds
// its per-pass flags before any plugin is loaded, so plugin passes are named
// in --pass-pipeline, as upstream's standalone example does. The plugin adds
// no flags of its own: an earlier version turned `--offload-activations` into
// an occurrence of --pass-pipeline, which made mlir-opt refuse every
// individual pass flag next to it and let a later --pass-pipeline silently
// replace the offload pipeline.
//
//===----------------------------------------------------------------------===//

#include "offload/InitAll.h"

#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/Compiler.h"

using namespace mlir;

extern "C" LLVM_ATTRIBUTE_WEAK DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "OffloadDialects", LLVM_VERSION_STRING,
          [](DialectRegistry *registry) {
            offload::registerAllOffloadDialects(*registry);
          }};
}

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "OffloadPasses", LLVM_VERSION_STRING,
          []() { offload::registerAllOffloadPasses(); }};
}
