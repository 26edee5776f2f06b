//===- offload-plugin.cpp - offload-mlir as an mlir-opt plugin ------------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
//   mlir-opt-22 --load-dialect-plugin=OffloadPlugin.so \
//               --load-pass-plugin=OffloadPlugin.so \
//               --offload-activations[="min-bytes=4096 report=text"]
//
// mlir-opt builds its per-pass flags before any plugin is loaded, so a
// plugin's passes are otherwise reachable only through --pass-pipeline. The
// plugin therefore also registers an `--offload-activations` flag while mlir-opt
// is still parsing its command line (LLVM's parser sees options registered
// mid-parse), and the flag fills in mlir-opt's own --pass-pipeline.
//
//===----------------------------------------------------------------------===//

#include "offload/InitAll.h"

#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Compiler.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

static void setHostPassPipeline(const std::string &options) {
  auto &registered = llvm::cl::getRegisteredOptions();
  auto it = registered.find("pass-pipeline");
  if (it == registered.end()) {
    llvm::errs() << "offload plugin: this tool has no --pass-pipeline; use its "
                    "own way of naming the 'offload-activations' pipeline\n";
    return;
  }
  std::string pipeline = "builtin.module(offload-activations";
  if (!options.empty())
    pipeline += "{" + options + "}";
  pipeline += ")";
  it->second->addOccurrence(/*pos=*/0, "pass-pipeline", pipeline);
}

static void registerPipelineFlag() {
  if (llvm::cl::getRegisteredOptions().count("offload-activations"))
    return;
  static llvm::cl::opt<std::string> flag(
      "offload-activations", llvm::cl::ValueOptional,
      llvm::cl::desc("Run the offload-activations pipeline (options as in "
                     "--pass-pipeline, e.g. =\"min-bytes=4096 report=text\")"),
      llvm::cl::value_desc("options"), llvm::cl::callback([](const std::string &options) {
        setHostPassPipeline(options);
      }));
}

extern "C" LLVM_ATTRIBUTE_WEAK DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "OffloadDialects", LLVM_VERSION_STRING,
          [](DialectRegistry *registry) {
            offload::registerAllOffloadDialects(*registry);
          }};
}

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "OffloadPasses", LLVM_VERSION_STRING, []() {
            offload::registerAllOffloadPasses();
            registerPipelineFlag();
          }};
}
