//===- Pipeline.cpp - C API: run the offload-activations pipeline ---------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// offload_mlir_run_pipeline does what
//   offload-opt in.mlir --offload-activations="<options>"
// does (same parser configuration, same pipeline, same printer), in a fresh
// MLIRContext per call, with every diagnostic and the report captured into
// strings instead of stderr and stdout.
//
//===----------------------------------------------------------------------===//

#include "offload-c/Pipeline.h"

#include "offload/Dialect/Offload/IR/OffloadDialect.h"
#include "offload/Dialect/Tensor/StorageViewOpInterfaceImpl.h"
#include "offload/Dialect/Trace/IR/TraceDialect.h"
#include "offload/Transforms/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace mlir;

#ifndef OFFLOAD_MLIR_VERSION
#define OFFLOAD_MLIR_VERSION "0.1.0"
#endif

/// Buffer names the diagnostics are located in.
static constexpr const char *kInputName = "<input>";
static constexpr const char *kOptionsName = "<options>";

//===----------------------------------------------------------------------===//
// Dialects
//===----------------------------------------------------------------------===//

/// What the pipeline needs: the project's dialects and the view models of the
/// tensor ops its analyses rely on, the dialects traced training steps are
/// written in (func, plus the upstream ops the cost model and the tests use),
/// and linalg, whose structured ops the cost model counts (and which the
/// library links for that anyway).
static void registerPipelineDialects(DialectRegistry &registry) {
  registry.insert<offload::OffloadDialect, trace::TraceDialect,
                  func::FuncDialect, arith::ArithDialect, math::MathDialect,
                  scf::SCFDialect, cf::ControlFlowDialect,
                  tensor::TensorDialect, linalg::LinalgDialect,
                  memref::MemRefDialect, affine::AffineDialect,
                  bufferization::BufferizationDialect>();
  offload::registerTensorStorageViewExternalModels(registry);
}

//===----------------------------------------------------------------------===//
// Pipeline options
//===----------------------------------------------------------------------===//
//
// PassOptions::parseFromString reports an unknown option on the stream it is
// given, but a value that does not parse (min-bytes=abc) through llvm::cl, on
// stderr only. So the typed values are checked here first, with the parsers
// llvm::cl uses, and every problem is reported with its column.

namespace {
/// The pipeline's options, with their llvm::cl options looked up by name.
struct CheckedPipelineOptions : offload::OffloadPipelineOptions {
  llvm::cl::Option *lookup(StringRef key) const {
    auto it = OptionsMap.find(key);
    return it == OptionsMap.end() ? nullptr : it->second;
  }
  std::vector<std::string> names() const {
    std::vector<std::string> result;
    for (const auto &entry : OptionsMap)
      result.push_back(entry.first.str());
    llvm::sort(result);
    return result;
  }
};

/// One `key[=value]` of an option string.
struct OptionToken {
  StringRef key;
  StringRef value;
  size_t column;
};
} // namespace

/// Strips what MLIR's option parser strips around a value: surrounding
/// quotes, or one pair of enclosing braces.
static StringRef unwrapValue(StringRef value) {
  value = value.trim();
  if (value.size() <= 1)
    return value;
  for (char quote : {'\'', '"'})
    if (value.front() == quote && value.back() == quote)
      return value.drop_front().drop_back().trim();
  if (value.front() == '{' && value.back() == '}')
    return value.drop_front().drop_back().trim();
  return value;
}

/// Splits `text` like PassOptions::parseFromString: space-separated
/// `key[=value]`, where a value may hold quoted strings and `{...}` groups.
static std::vector<OptionToken> splitOptions(StringRef text) {
  std::vector<OptionToken> tokens;
  size_t i = 0, n = text.size();
  auto skipQuoted = [&](size_t &pos) {
    char c = text[pos];
    if (c != '\'' && c != '"')
      return false;
    size_t close = text.find(c, pos + 1);
    if (close != StringRef::npos)
      pos = close;
    return true;
  };
  while (i < n) {
    while (i < n && text[i] == ' ')
      ++i;
    if (i == n)
      break;
    OptionToken token;
    token.column = i + 1;
    size_t keyStart = i;
    while (i < n && text[i] != '=' && text[i] != ' ')
      ++i;
    token.key = text.slice(keyStart, i).trim();
    if (i < n && text[i] == '=') {
      size_t valueStart = ++i;
      for (; i < n && text[i] != ' '; ++i) {
        if (skipQuoted(i))
          continue;
        if (text[i] != '{')
          continue;
        for (size_t depth = 1; ++i < n;) {
          if (skipQuoted(i))
            continue;
          if (text[i] == '{')
            ++depth;
          else if (text[i] == '}' && --depth == 0)
            break;
        }
        if (i == n)
          break;
      }
      token.value = unwrapValue(text.slice(valueStart, i));
    }
    if (!token.key.empty())
      tokens.push_back(token);
  }
  return tokens;
}

/// Whether `option` is a pass option holding a `T`.
template <typename T>
static bool holds(const llvm::cl::Option *option) {
  return dynamic_cast<const mlir::detail::PassOptions::Option<T> *>(option);
}

/// For an enum-valued option holding an `E`: why `value` is not one of its
/// spellings ("" if it is); std::nullopt if the option holds no `E`.
template <typename E>
static std::optional<std::string> checkEnumValue(llvm::cl::Option *option,
                                                 StringRef value) {
  auto *typed = dynamic_cast<mlir::detail::PassOptions::Option<E> *>(option);
  if (!typed)
    return std::nullopt;
  auto &parser = typed->getParser();
  std::vector<std::string> names;
  for (unsigned i = 0, e = parser.getNumOptions(); i < e; ++i) {
    if (parser.getOption(i) == value)
      return std::string();
    names.push_back(parser.getOption(i).str());
  }
  return ("'" + value + "' is not one of " + llvm::join(names, ", ")).str();
}

/// For an option holding one of the value types of PassOptionValues.h (a
/// byte size, a budget, ...): why `value` does not parse ("" if it does);
/// std::nullopt if the option holds no `T`.
template <typename T>
static std::optional<std::string> checkParsedValue(llvm::cl::Option *option,
                                                   StringRef value) {
  if (!holds<T>(option))
    return std::nullopt;
  std::string error;
  return T::parse(value, error) ? std::string() : error;
}

/// Why `value` is not valid for `option`, or "" if it is. Also "" for the
/// other option types: strings and string lists, whose values always parse
/// (anything else MLIR's parser still rejects, with a generic message here).
static std::string checkOptionValue(llvm::cl::Option *option,
                                    StringRef value) {
  for (auto check : {checkEnumValue<offload::PlanMode>,
                     checkEnumValue<offload::ReportFormat>,
                     checkEnumValue<offload::ExecutionModel::Release>,
                     checkParsedValue<offload::ByteSize>,
                     checkParsedValue<offload::PrefetchBytes>,
                     checkParsedValue<offload::Budget>})
    if (std::optional<std::string> problem = check(option, value))
      return *problem;
  auto fits = [&](auto integer) { return !value.getAsInteger(0, integer); };
  if (holds<int>(option) || holds<long>(option) || holds<long long>(option) ||
      holds<unsigned>(option) || holds<unsigned long>(option) ||
      holds<unsigned long long>(option)) {
    bool ok = (holds<int>(option) && fits(int())) ||
              (holds<long>(option) && fits(long())) ||
              (holds<long long>(option) && fits((long long)0)) ||
              (holds<unsigned>(option) && fits(unsigned())) ||
              (holds<unsigned long>(option) && fits((unsigned long)0)) ||
              (holds<unsigned long long>(option) &&
               fits((unsigned long long)0));
    return ok ? "" : ("'" + value + "' is not a valid integer").str();
  }
  if (holds<double>(option) || holds<float>(option)) {
    double number;
    return llvm::to_float(value, number)
               ? ""
               : ("'" + value + "' is not a number").str();
  }
  if (holds<bool>(option)) {
    static const StringRef spellings[] = {"",      "true",  "TRUE",
                                            "True",  "1",     "false",
                                            "FALSE", "False", "0"};
    return llvm::is_contained(spellings, value)
               ? ""
               : ("'" + value + "' is not a boolean (true, false, 1 or 0)")
                     .str();
  }
  return "";
}

/// Parses `text` into `options`; on failure, writes located errors to `os`.
static LogicalResult parsePipelineOptions(CheckedPipelineOptions &options,
                                          StringRef text,
                                          llvm::raw_ostream &os) {
  bool ok = true;
  for (const OptionToken &token : splitOptions(text)) {
    llvm::cl::Option *option = options.lookup(token.key);
    std::string problem;
    if (!option)
      problem = ("no such option '" + token.key +
                 "' of offload-activations (known: " +
                 llvm::join(options.names(), ", ") + ")")
                    .str();
    else if (std::string valueProblem =
                 checkOptionValue(option, token.value);
             !valueProblem.empty())
      problem = ("option '" + token.key + "': " + valueProblem).str();
    if (problem.empty())
      continue;
    os << kOptionsName << ":1:" << token.column << ": error: " << problem
       << "\n";
    ok = false; // keep going: report every bad option

  }
  if (!ok)
    return failure();

  std::string parserErrors;
  llvm::raw_string_ostream parserStream(parserErrors);
  if (succeeded(options.parseFromString(text, parserStream)))
    return success();
  StringRef message = StringRef(parserErrors).trim();
  os << kOptionsName << ":1:1: error: "
     << (message.empty() ? StringRef("cannot parse the offload-activations "
                                     "options")
                         : message)
     << " (in \"" << text << "\")\n";
  return failure();
}

//===----------------------------------------------------------------------===//
// The pipeline
//===----------------------------------------------------------------------===//

/// A copy of `text` allocated with malloc (freed by offload_mlir_free).
static char *copyString(StringRef text) {
  char *copy = static_cast<char *>(std::malloc(text.size() + 1));
  if (!copy)
    return nullptr;
  std::memcpy(copy, text.data(), text.size());
  copy[text.size()] = '\0';
  return copy;
}

static void setOut(char **out, StringRef text) {
  if (out)
    *out = copyString(text);
}

namespace {
struct PipelineOutput {
  std::string ir, report, diagnostics;
};
} // namespace

static LogicalResult runPipeline(StringRef input, StringRef optionText,
                                 PipelineOutput &out) {
  llvm::raw_string_ostream diagnostics(out.diagnostics);

  CheckedPipelineOptions options;
  if (failed(parsePipelineOptions(options, optionText, diagnostics)))
    return failure();

  DialectRegistry registry;
  registerPipelineDialects(registry);
  MLIRContext context(registry, MLIRContext::Threading::DISABLED);
  // offload-opt attaches the generic form of the op an error is emitted on
  // (the whole module for a module-level error); keep the messages short.
  context.printOpOnDiagnostic(false);

  auto sourceMgr = std::make_shared<llvm::SourceMgr>();
  sourceMgr->AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(input, kInputName), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagHandler(*sourceMgr, &context, diagnostics);

  // As MlirOptMain: verify after parsing, keep unknown external resources,
  // and wrap top-level ops other than a single module in a module.
  FallbackAsmResourceMap fallbackResourceMap;
  ParserConfig parseConfig(&context, /*verifyAfterParse=*/true,
                           &fallbackResourceMap);
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(*sourceMgr, parseConfig);
  if (!module)
    return failure();

  llvm::raw_string_ostream reportStream(out.report);
  PassManager pm(&context, ModuleOp::getOperationName(),
                 OpPassManager::Nesting::Implicit);
  pm.enableVerifier(true);
  offload::buildOffloadPipelineWithReportStream(pm, options, reportStream);
  if (failed(pm.run(*module))) {
    if (out.diagnostics.empty())
      diagnostics << kInputName
                  << ": error: the offload-activations pipeline failed\n";
    return failure();
  }

  llvm::raw_string_ostream irStream(out.ir);
  AsmState asmState(module->getOperation(), OpPrintingFlags(),
                    /*locationMap=*/nullptr, &fallbackResourceMap);
  module->getOperation()->print(irStream, asmState);
  irStream << '\n';
  return success();
}

extern "C" {

int offload_mlir_run_pipeline(const char *input_ir,
                              const char *pipeline_options, char **out_ir,
                              char **out_report, char **out_error) {
  for (char **out : {out_ir, out_report, out_error})
    if (out)
      *out = nullptr;
  if (!input_ir) {
    setOut(out_error, "error: offload_mlir_run_pipeline: input_ir is NULL\n");
    return 2;
  }
  PipelineOutput output;
  if (failed(runPipeline(input_ir, pipeline_options ? pipeline_options : "",
                         output))) {
    setOut(out_error, output.diagnostics);
    return 1;
  }
  setOut(out_ir, output.ir);
  setOut(out_report, output.report);
  setOut(out_error, output.diagnostics);
  return 0;
}

void offload_mlir_free(char *str) { std::free(str); }

const char *offload_mlir_version(void) {
  return "offload-mlir " OFFLOAD_MLIR_VERSION " (MLIR " LLVM_VERSION_STRING
         ")";
}

} // extern "C"
