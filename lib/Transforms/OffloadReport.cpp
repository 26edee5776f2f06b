//===- OffloadReport.cpp - Print the offload plan of each training step ---===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// Reads the IR only: which saved results are returned through an
// `offload.offload_to_cpu`, after which forward op, how many bytes, and which
// backward op their load precedes; why the others stay (`offload.kept`).
//
//===----------------------------------------------------------------------===//

#include "offload/Analysis/SavedActivations.h"
#include "offload/Transforms/Passes.h"

#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/ToolOutputFile.h"

namespace mlir {
namespace offload {
#define GEN_PASS_DEF_OFFLOADREPORT
#include "offload/Transforms/Passes.h.inc"
} // namespace offload
} // namespace mlir

using namespace mlir;
using namespace mlir::offload;

namespace {
/// One op position: its index among the top-level ops of its function.
struct Position {
  int64_t index = -1;
  std::string op;
};

struct SavedEntry {
  unsigned result;
  std::string type;
  std::string producer;
  std::optional<int64_t> bytes;
  bool offloaded = false;
  std::string keptReason;
  Position offloadAfter;
  Position loadBefore;
};

struct StepReport {
  std::string forward, backward;
  std::vector<SavedEntry> saved;
};
} // namespace

static std::string formatBytes(std::optional<int64_t> bytes) {
  if (!bytes)
    return "?";
  double value = *bytes;
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  if (unit == 0)
    return llvm::formatv("{0} B", *bytes).str();
  return llvm::formatv("{0:f1} {1}", value, units[unit]).str();
}

static std::string typeToString(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

/// Index of every op in the bodies of a training step's two functions.
using OpIndex = llvm::DenseMap<Operation *, int64_t>;

static void indexOps(Block &block, OpIndex &index) {
  int64_t next = 0;
  for (Operation &op : block)
    index[&op] = next++;
}

static Position positionOf(Operation *op, const OpIndex &index) {
  Position position;
  if (!op)
    return position;
  position.index = index.lookup(op);
  position.op = op->getNumResults() ? describeProducer(op->getResult(0))
                                    : op->getName().getStringRef().str();
  return position;
}

static StepReport buildReport(const TrainingStep &step) {
  OpIndex index;
  indexOps(step.getForward().getFunctionBody().front(), index);
  indexOps(step.getBackward().getFunctionBody().front(), index);
  StepReport report;
  report.forward = step.getForward().getName().str();
  report.backward = step.getBackward().getName().str();
  auto keptName = StringAttr::get(step.getForward()->getContext(),
                                  OffloadDialect::kKeptAttrName);
  for (unsigned i = 0, e = step.getNumSaved(); i < e; ++i) {
    SavedEntry entry;
    entry.result = step.getSavedResultIndex(i);
    Value value = step.getSavedValue(i);
    if (auto offload = value.getDefiningOp<OffloadToCpuOp>()) {
      entry.offloaded = true;
      Value source = offload.getSource();
      entry.type = typeToString(source.getType());
      entry.producer = describeProducer(source);
      entry.bytes = getTensorSizeInBytes(source.getType());
      // Offloads placed after the same op, and loads before the same op,
      // stand in a row; report the compute op they follow or precede.
      Operation *after = offload->getPrevNode();
      while (isa_and_nonnull<OffloadToCpuOp>(after))
        after = after->getPrevNode();
      entry.offloadAfter = positionOf(after, index);
      for (Operation *user : step.getBackwardArgument(i).getUsers()) {
        if (!isa<LoadToGpuOp>(user))
          continue;
        Operation *before = user->getNextNode();
        while (isa_and_nonnull<LoadToGpuOp>(before))
          before = before->getNextNode();
        entry.loadBefore = positionOf(before, index);
      }
    } else {
      entry.type = typeToString(value.getType());
      entry.producer = describeProducer(value);
      entry.bytes = getTensorSizeInBytes(value.getType());
      auto kept = step.getForward().getResultAttrOfType<StringAttr>(
          entry.result, keptName);
      entry.keptReason = kept ? kept.getValue().str() : "not selected";
    }
    report.saved.push_back(std::move(entry));
  }
  return report;
}

static void printText(ArrayRef<StepReport> reports, raw_ostream &os) {
  for (const StepReport &report : reports) {
    int64_t offloadedBytes = 0, keptBytes = 0;
    unsigned offloaded = 0;
    for (const SavedEntry &e : report.saved) {
      (e.offloaded ? offloadedBytes : keptBytes) += e.bytes.value_or(0);
      offloaded += e.offloaded;
    }
    os << llvm::formatv("offload report: @{0} -> @{1}: {2} of {3} saved "
                        "results offloaded\n",
                        report.forward, report.backward, offloaded,
                        report.saved.size());
    os << llvm::formatv("{0,6}  {1,-40}  {2,-28}  {3,10}  {4,-40}  {5}\n",
                        "result", "producer", "type", "bytes",
                        "offloaded after (forward op #)",
                        "loaded before (backward op #)");
    for (const SavedEntry &e : report.saved) {
      std::string where, load;
      if (e.offloaded) {
        where = e.offloadAfter.index < 0
                    ? std::string("function entry")
                    : llvm::formatv("#{0} {1}", e.offloadAfter.index,
                                    e.offloadAfter.op)
                          .str();
        load = e.loadBefore.index < 0
                   ? std::string("(never loaded)")
                   : llvm::formatv("#{0} {1}", e.loadBefore.index,
                                   e.loadBefore.op)
                         .str();
      } else {
        where = "kept: " + e.keptReason;
      }
      os << llvm::formatv("{0,6}  {1,-40}  {2,-28}  {3,10}  {4,-40}  {5}\n",
                          e.result, e.producer, e.type, formatBytes(e.bytes),
                          where, load);
    }
    os << llvm::formatv("total: offloaded {0} values, {1}; kept {2} values, "
                        "{3}\n",
                        offloaded, formatBytes(offloadedBytes),
                        report.saved.size() - offloaded,
                        formatBytes(keptBytes));
  }
}

static llvm::json::Value toJson(const Position &position) {
  if (position.index < 0)
    return nullptr;
  return llvm::json::Object{{"index", position.index}, {"op", position.op}};
}

static void printJson(ArrayRef<StepReport> reports, raw_ostream &os) {
  llvm::json::Array steps;
  for (const StepReport &report : reports) {
    llvm::json::Array saved;
    int64_t offloadedBytes = 0;
    int64_t offloaded = 0;
    for (const SavedEntry &e : report.saved) {
      llvm::json::Object entry{{"result", e.result},
                               {"producer", e.producer},
                               {"type", e.type},
                               {"offloaded", e.offloaded}};
      entry["bytes"] = e.bytes ? llvm::json::Value(*e.bytes) : nullptr;
      if (e.offloaded) {
        entry["offload_after"] = toJson(e.offloadAfter);
        entry["load_before"] = toJson(e.loadBefore);
        offloadedBytes += e.bytes.value_or(0);
        ++offloaded;
      } else {
        entry["kept_reason"] = e.keptReason;
      }
      saved.push_back(std::move(entry));
    }
    steps.push_back(llvm::json::Object{
        {"forward", report.forward},
        {"backward", report.backward},
        {"saved", std::move(saved)},
        {"offloaded_values", offloaded},
        {"offloaded_bytes", offloadedBytes}});
  }
  os << llvm::formatv("{0:2}",
                      llvm::json::Value(llvm::json::Object{
                          {"steps", std::move(steps)}}))
     << "\n";
}

namespace {
struct OffloadReport : public offload::impl::OffloadReportBase<OffloadReport> {
  using Base::Base;

  void runOnOperation() override {
    if (format != "text" && format != "json") {
      getOperation().emitError()
          << "offload-report: unknown format '" << format
          << "' (expected 'text' or 'json')";
      return signalPassFailure();
    }
    SmallVector<TrainingStep> steps;
    if (failed(TrainingStep::collect(getOperation(), steps)))
      return signalPassFailure();
    std::vector<StepReport> reports;
    for (const TrainingStep &step : steps)
      reports.push_back(buildReport(step));

    std::string error;
    std::unique_ptr<llvm::ToolOutputFile> file =
        openOutputFile(output, &error);
    if (!file) {
      getOperation().emitError() << "offload-report: " << error;
      return signalPassFailure();
    }
    if (format == "json")
      printJson(reports, file->os());
    else
      printText(reports, file->os());
    file->keep();
    markAllAnalysesPreserved();
  }
};
} // namespace
