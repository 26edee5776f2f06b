//===- PassOptionValues.h - Enums and defaults of the pass options -*- C++ -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// What the options of the passes (Passes.td) and of the offload-activations
// pipeline (OffloadPipelineOptions in Passes.h) share, defined once: the
// enums of the enum-valued options with their spellings (cl::values), and
// every default that more than one of them has. Passes.td names these
// constants as its defaults; the C API and the Python bridge pass option
// strings through and repeat none of them.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_TRANSFORMS_PASSOPTIONVALUES_H
#define OFFLOAD_TRANSFORMS_PASSOPTIONVALUES_H

#include "offload/Analysis/StepSimulation.h"

#include "llvm/Support/CommandLine.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mlir {
namespace offload {

/// `plan=` of offload-plan and of the pipeline: what stays selected.
enum class PlanMode {
  /// Every value offload-find-saved-activations selected.
  All,
  /// What the cost model predicts the link hides under compute.
  Hidden,
  /// What fits `budget=` with the least predicted step time.
  Budget,
};

/// `format=` of offload-report, `report=` of the pipeline.
enum class ReportFormat {
  /// No report (the pipeline only).
  None,
  Text,
  Json,
};

/// The value of a byte-size option (min-bytes, max-inflight-bytes,
/// coalesce-below): bytes >= 0, written as offload_support::parseByteSize
/// reads them (64MiB, 1.5GB, 4096). Its llvm::cl::parser parses the text
/// when the option is parsed, so a bad value is an error that names the
/// option; it converts to the bytes.
struct ByteSize {
  int64_t bytes = 0;

  constexpr ByteSize(int64_t bytes = 0) : bytes(bytes) {}
  constexpr operator int64_t() const { return bytes; }
  bool operator==(const ByteSize &other) const { return bytes == other.bytes; }
  bool operator!=(const ByteSize &other) const { return bytes != other.bytes; }

  static constexpr const char *kValueName = "byte size";
  /// The bytes `text` spells, or std::nullopt with why in `error`.
  static std::optional<ByteSize> parse(StringRef text, std::string &error);
  void print(llvm::raw_ostream &os) const;
};

/// `prefetch-bytes`: a byte size, or auto (`bytes` < 0: planned).
struct PrefetchBytes {
  int64_t bytes = -1;

  constexpr PrefetchBytes(int64_t bytes = -1) : bytes(bytes) {}
  bool isAuto() const { return bytes < 0; }
  bool operator==(const PrefetchBytes &other) const {
    return bytes == other.bytes;
  }
  bool operator!=(const PrefetchBytes &other) const {
    return bytes != other.bytes;
  }

  static constexpr const char *kValueName = "byte size or auto";
  static std::optional<PrefetchBytes> parse(StringRef text,
                                            std::string &error);
  void print(llvm::raw_ostream &os) const;
};

/// `budget=`: a byte size, or a fraction in (0, 1] of the predicted peak
/// without offload; empty (the default) is no budget.
struct Budget {
  std::optional<int64_t> bytes;
  /// Without `bytes`: the fraction, 0 for no budget.
  double fraction = 0;

  bool empty() const { return !bytes && fraction == 0; }
  /// The budget in bytes for a step whose peak without offload is
  /// `peakWithout`.
  int64_t resolve(int64_t peakWithout) const {
    return bytes ? *bytes
                 : static_cast<int64_t>(fraction * double(peakWithout));
  }
  bool operator==(const Budget &other) const {
    return bytes == other.bytes && fraction == other.fraction;
  }
  bool operator!=(const Budget &other) const { return !(*this == other); }

  static constexpr const char *kValueName = "byte size or fraction";
  static std::optional<Budget> parse(StringRef text, std::string &error);
  void print(llvm::raw_ostream &os) const;
};

/// Prints an option value so that its parse() reads it back unchanged.
template <typename T, typename = decltype(&T::kValueName)>
llvm::raw_ostream &operator<<(llvm::raw_ostream &os, const T &value) {
  value.print(os);
  return os;
}

/// The llvm::cl parser of the option value types above: T::parse reads the
/// text when the option is parsed and its error is the option's ("for the
/// --budget option: unknown unit 'XB' in '12XB' ..."). llvm::cl::parser<T>
/// is specialized to it for each type, below.
template <typename T>
class ValueOptionParser : public llvm::cl::basic_parser<T> {
public:
  using llvm::cl::basic_parser<T>::basic_parser;

  /// Returns true on error, as llvm::cl parsers do.
  bool parse(llvm::cl::Option &option, StringRef, StringRef arg, T &value) {
    std::string error;
    std::optional<T> parsed = T::parse(arg, error);
    if (!parsed)
      return option.error(error);
    value = *parsed;
    return false;
  }

  StringRef getValueName() const override { return T::kValueName; }

  void printOptionDiff(const llvm::cl::Option &option, const T &value,
                       const llvm::cl::OptionValue<T> &defaultValue,
                       size_t globalWidth) const {
    this->printOptionName(option, globalWidth);
    llvm::outs() << "= " << value;
    if (defaultValue.hasValue())
      llvm::outs() << " (default: " << defaultValue.getValue() << ")";
    llvm::outs() << "\n";
  }
};

/// Defaults shared by several options.
namespace defaults {
/// `min-bytes` of offload-find-saved-activations: smaller values stay on the
/// device.
inline constexpr int64_t kMinBytes = 1024;
/// `plan` of offload-plan.
inline constexpr PlanMode kPlan = PlanMode::All;
/// The offload-activations pipeline's `min-bytes` and `plan`, which the
/// Python bridge's defaults repeat (OffloadOptions): only values of 1 MiB
/// and more, and only what the cost model predicts the link hides.
inline constexpr int64_t kPipelineMinBytes = 1 << 20;
inline constexpr PlanMode kPipelinePlan = PlanMode::Hidden;
/// `max-slowdown` of plan=hidden: none, so "hidden" means what the model
/// hides entirely; a predicted stall is a real one
/// (docs/benchmarks/peers/README.md).
inline constexpr double kMaxSlowdown = 0.0;
/// `max-interference` of plan=hidden: kernels slowed by copies beside them
/// may cost at most 1% of the step (docs/calibrate.md gives the measured
/// copy_interference).
inline constexpr double kMaxInterference = 0.01;
/// `hidden-patience` of plan=hidden: the search stops after this many
/// candidates in a row were simulated and dropped (0: never, exact first
/// fit). Candidates come in decreasing size: the plans of the shipped and
/// synthetic steps are exact first fit's, at a fraction of its compile time
/// (docs/scaling.md#planhidden-with-the-scheduled-default-2026-11-24).
inline constexpr unsigned kHiddenPatience = 64;
/// `copy-margin` of plan=hidden: plan as if every copy took 5% longer, twice
/// the error of the model's forward time (docs/benchmarks/peers/README.md).
inline constexpr double kCopyMargin = 0.05;
/// `schedule`: split the copies into start/wait and hoist the load starts.
/// At the same plan it is what keeps the copies hidden under compute; a load
/// left at its wait stalls the step (evidence: docs/benchmarks/peers/README.md).
inline constexpr bool kSchedule = true;
/// offload-plan plans recomputation with the copies.
inline constexpr bool kRecompute = true;
/// plan=hidden: recomputation may add 1% to the predicted step.
inline constexpr double kMaxRecompute = 0.01;
/// A recomputation repeats at most this many forward ops.
inline constexpr unsigned kRecomputeMaxOps = 32;
/// `max-inflight-bytes`: 2 GiB.
inline constexpr int64_t kMaxInflightBytes = int64_t(2) << 30;
/// `coalesce-below`: scheduled copies smaller than this issued at one point
/// move as one transfer; 0 never. Off: grouping is not yet measured through
/// the compiled path.
inline constexpr int64_t kCoalesceBelow = 0;
/// prefetch-lead: no loads start during another graph's backward.
inline constexpr const char kPrefetchLead[] = "0";
inline constexpr unsigned kSavedInstances = 1;
/// prefetch-bytes: auto, planned from the step's own backward.
inline constexpr int64_t kPrefetchBytes = -1;
inline constexpr ExecutionModel::Release kRelease =
    ExecutionModel::Release::AfterCopy;
inline constexpr bool kFuseMemoryBound = false;
inline constexpr bool kReuseFreedBuffers = false;
/// `report` of the pipeline.
inline constexpr ReportFormat kReport = ReportFormat::None;
/// `format` of offload-report.
inline constexpr ReportFormat kReportFormat = ReportFormat::Text;
/// Where a report goes (`report-file` of the pipeline, `output` of
/// offload-report): "" is standard error, so the report never mixes with
/// the IR on standard output; "-" is standard output; anything else a file.
inline constexpr const char kReportFile[] = "";
} // namespace defaults

/// The spellings of each enum option, for `llvm::cl::values`.
inline llvm::cl::ValuesClass planModeValues() {
  return llvm::cl::values(
      clEnumValN(PlanMode::All, "all", "every eligible value"),
      clEnumValN(PlanMode::Hidden, "hidden",
                 "what the link hides under compute"),
      clEnumValN(PlanMode::Budget, "budget", "what fits budget="));
}

inline llvm::cl::ValuesClass releaseValues() {
  return llvm::cl::values(
      clEnumValN(ExecutionModel::Release::AfterCopy, "after-copy",
                 "once its copy ends (offload_rt)"),
      clEnumValN(ExecutionModel::Release::AtWait, "at-wait",
                 "at its offload's wait (a stream-ordered allocator)"));
}

/// offload-report's formats: a report pass always prints one.
inline llvm::cl::ValuesClass reportFormatValues() {
  return llvm::cl::values(clEnumValN(ReportFormat::Text, "text", "a table"),
                          clEnumValN(ReportFormat::Json, "json", "JSON"));
}

/// The pipeline's `report=`: a format, or none.
inline llvm::cl::ValuesClass pipelineReportValues() {
  return llvm::cl::values(
      clEnumValN(ReportFormat::None, "none", "no report"),
      clEnumValN(ReportFormat::Text, "text", "a table"),
      clEnumValN(ReportFormat::Json, "json", "JSON"));
}

/// llvm::cl's parser for enum values (llvm::cl::parser<E>, the same
/// interface), except that a value it does not know is diagnosed with the
/// values it knows: "'some' is not one of all, hidden, budget", not
/// "Cannot find option named 'some'!". llvm::cl::parser<E> is specialized
/// to it for each enum above, below.
template <typename E>
class EnumOptionParser : public llvm::cl::generic_parser_base {
protected:
  class OptionInfo : public generic_parser_base::GenericOptionInfo {
  public:
    OptionInfo(StringRef name, E value, StringRef help)
        : GenericOptionInfo(name, help), V(value) {}
    llvm::cl::OptionValue<E> V;
  };
  SmallVector<OptionInfo, 4> Values;

public:
  using parser_data_type = E;

  EnumOptionParser(llvm::cl::Option &owner) : generic_parser_base(owner) {}

  unsigned getNumOptions() const override { return Values.size(); }
  StringRef getOption(unsigned n) const override { return Values[n].Name; }
  StringRef getDescription(unsigned n) const override {
    return Values[n].HelpStr;
  }
  const llvm::cl::GenericOptionValue &getOptionValue(unsigned n) const override {
    return Values[n].V;
  }

  /// Returns true on error, as llvm::cl parsers do.
  bool parse(llvm::cl::Option &option, StringRef argName, StringRef arg,
             E &value) {
    StringRef text = Owner.hasArgStr() ? arg : argName;
    std::string known;
    for (const OptionInfo &info : Values) {
      if (info.Name == text) {
        value = info.V.getValue();
        return false;
      }
      known += (known.empty() ? "" : ", ") + info.Name.str();
    }
    return option.error("'" + text + "' is not one of " + known);
  }

  template <typename T>
  void addLiteralOption(StringRef name, const T &value, StringRef help) {
    Values.push_back(OptionInfo(name, static_cast<E>(value), help));
    AddLiteralOption(Owner, name);
  }

  void removeLiteralOption(StringRef name) {
    unsigned n = findOption(name);
    assert(n != Values.size() && "option not found");
    Values.erase(Values.begin() + n);
  }
};

} // namespace offload
} // namespace mlir

namespace llvm {
namespace cl {
/// A class-typed option keeps its default as an OptionValueCopy, as
/// std::string's does.
#define OFFLOAD_OPTION_VALUE(T)                                                \
  template <> struct OptionValue<T> final : OptionValueCopy<T> {               \
    using WrapperType = T;                                                     \
    OptionValue() = default;                                                   \
    OptionValue(const T &value) { setValue(value); }                           \
    OptionValue &operator=(const T &value) {                                   \
      setValue(value);                                                         \
      return *this;                                                            \
    }                                                                          \
  };                                                                           \
  template <>                                                                  \
  class parser<T> : public mlir::offload::ValueOptionParser<T> {               \
  public:                                                                      \
    using ValueOptionParser::ValueOptionParser;                                \
  };
OFFLOAD_OPTION_VALUE(mlir::offload::ByteSize)
OFFLOAD_OPTION_VALUE(mlir::offload::PrefetchBytes)
OFFLOAD_OPTION_VALUE(mlir::offload::Budget)
#undef OFFLOAD_OPTION_VALUE

template <>
class parser<mlir::offload::PlanMode>
    : public mlir::offload::EnumOptionParser<mlir::offload::PlanMode> {
public:
  using EnumOptionParser::EnumOptionParser;
};
template <>
class parser<mlir::offload::ReportFormat>
    : public mlir::offload::EnumOptionParser<mlir::offload::ReportFormat> {
public:
  using EnumOptionParser::EnumOptionParser;
};
template <>
class parser<mlir::offload::ExecutionModel::Release>
    : public mlir::offload::EnumOptionParser<
          mlir::offload::ExecutionModel::Release> {
public:
  using EnumOptionParser::EnumOptionParser;
};
} // namespace cl
} // namespace llvm

#endif // OFFLOAD_TRANSFORMS_PASSOPTIONVALUES_H
