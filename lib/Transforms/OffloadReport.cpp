//===- OffloadReport.cpp - Print the offload plan of each training step ---===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// Reads the IR only: which saved results are returned through an
// `offload.offload_to_cpu` (or an `offload.offload_start` and its wait), after
// which forward op, how many bytes, which backward op their load precedes
// and, for split loads, where the load starts; why the others stay
// (`offload.kept`); for a copy that carries several saved views of one
// storage, the views backward rebuilds from its load. The cost model
// (StepModel) adds each load's predicted exposed time and, per step, the
// predicted peak device memory and step time without offload and with the
// copies in the IR.
//
//===----------------------------------------------------------------------===//

#include "PassDeviceProfile.h"
#include "offload/Analysis/SavedActivations.h"
#include "offload/Analysis/StepSimulation.h"
#include "offload/Analysis/Views.h"
#include "offload/Dialect/Tensor/StorageViewOpInterfaceImpl.h"
#include "offload/Dialect/Trace/IR/TraceDialect.h"
#include "offload/Transforms/Passes.h"
#include "offload_support/ByteSize.h"

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
  /// Where a split load starts (the op it is issued before).
  Position loadStart;
  double exposedSeconds = 0;
  /// Saved views that share this copy's storage and that backward rebuilds
  /// from its load (ops marked `offload.rebuilt_view`), in backward order.
  std::vector<Position> rebuiltViews;
};

/// Where the predicted peak is reached: the op running then, in which of
/// the step's two functions, and when.
struct PeakPoint {
  std::string function;
  Position position;
  double seconds = 0;
};

/// The cost model's predictions for one step.
struct Prediction {
  std::string device;
  int64_t peakBefore = 0, peakAfter = 0;
  PeakPoint peakAtBefore, peakAtAfter;
  double stepBefore = 0, stepAfter = 0, exposedAfter = 0;
  double interferenceAfter = 0;
  /// The forward's compute alone (no stalls): what a profile of the step
  /// shows as the time to its first backward kernel.
  double forwardSeconds = 0;
  /// The backward's compute alone (no stalls).
  double backwardSeconds = 0;
  int64_t d2hBytes = 0, h2dBytes = 0;
  /// A step compiled as one of several graphs (prefetch-lead): the lead and
  /// the bytes it may hold, as resolved, and the loads of the plan the
  /// backward graph before starts.
  double prefetchLead = 0;
  int64_t prefetchBytes = 0;
  unsigned prefetchedLoads = 0;
  int64_t prefetchedBytes = 0;
  /// saved-instances: how many, and what the other instances' saved values
  /// hold in the peaks before and after (included in them).
  unsigned savedInstances = 1;
  int64_t heldBefore = 0, heldAfter = 0;
  /// What offload-plan predicted for its plan (`offload.planned`), if it ran.
  std::optional<int64_t> plannedPeak;
  std::optional<double> plannedStep;
  /// Where the plan recomputes: the step as it came, before the plan.
  std::optional<int64_t> unplannedPeak;
  std::optional<double> unplannedStep;
};

/// A backward op that computes again what forward computed, and its
/// predicted time on the compute stream: a `trace.op` marked `recomputed`
/// (the framework's partitioner decided), or an `offload.recompute` (the
/// planner decided; `node` is the value's name, `forwardNodes` the traced
/// forward ops it repeats, `bytes` the value's size).
struct RecomputedOp {
  Position position;
  std::string node;
  double seconds = 0;
  bool planned = false;
  std::vector<std::string> forwardNodes;
  std::optional<int64_t> bytes;
};

struct StepReport {
  std::string forward, backward;
  std::vector<SavedEntry> saved;
  std::vector<RecomputedOp> recomputed;
  Prediction prediction;
};
} // namespace

/// Bytes for people (the project's one spelling); "?" for an unknown size.
static std::string formatBytes(std::optional<int64_t> bytes) {
  return bytes ? offload_support::formatByteSize(*bytes) : "?";
}

static std::string formatSeconds(double seconds) {
  if (seconds < 1e-3)
    return llvm::formatv("{0:f1} us", seconds * 1e6).str();
  return llvm::formatv("{0:f3} ms", seconds * 1e3).str();
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

static std::string describeOp(Operation *op) {
  return op->getNumResults() ? describeProducer(op->getResult(0))
                             : op->getName().getStringRef().str();
}

/// Where `op` is: its index among the function's top-level ops and what it
/// is. An op nested in a region is at its top-level ancestor's index and
/// named by the path down to it ("scf.for > arith.mulf").
static Position positionOf(Operation *op, const OpIndex &index) {
  Position position;
  std::string path;
  for (; op; op = op->getParentOp()) {
    path = path.empty() ? describeOp(op) : describeOp(op) + " > " + path;
    if (auto it = index.find(op); it != index.end()) {
      position.index = it->second;
      position.op = std::move(path);
      return position;
    }
  }
  return position;
}

/// A copy, a wait, or offload-plan's record of where copies go.
static bool isCopyOp(Operation *op) {
  return isa_and_nonnull<OffloadToCpuOp, LoadToGpuOp, WaitOp, PlacementOp>(
             op) ||
         isCopyStart(op);
}

/// The first op after `op` that is not a copy, a wait or a placement.
static Operation *nextComputeOp(Operation *op) {
  Operation *next = op->getNextNode();
  while (isCopyOp(next))
    next = next->getNextNode();
  return next;
}

/// The device value an offloaded saved value was copied from, and the op
/// that started the copy; null if `value` is not an offload's result.
static std::pair<Value, Operation *> getOffloadSource(Value value) {
  if (auto wait = value.getDefiningOp<WaitOp>())
    if (Operation *start = wait.getFuture().getDefiningOp();
        isOffloadStart(start))
      return {getStartedCopySource(wait.getFuture()), start};
  if (auto offload = value.getDefiningOp<OffloadToCpuOp>())
    return {offload.getSource(), offload};
  return {nullptr, nullptr};
}

/// The views backward rebuilds from the loads of host argument `arg` (one
/// storage, one copy), by position.
static std::vector<Position> findRebuiltViews(BlockArgument arg,
                                              const OpIndex &index) {
  SmallVector<Value> loaded;
  for (OpOperand &use : arg.getUses()) {
    Operation *user = use.getOwner();
    if (isa<LoadToGpuOp>(user))
      loaded.push_back(user->getResult(0));
    else if (isLoadStart(user))
      for (Operation *wait :
           user->getResult(use.getOperandNumber()).getUsers())
        loaded.push_back(wait->getResult(0));
  }
  SmallVector<Operation *> views;
  for (Value value : loaded)
    for (Value alias : collectViewClosure(value))
      if (Operation *def = alias.getDefiningOp();
          def && def->hasAttr(OffloadDialect::kRebuiltViewAttrName))
        views.push_back(def);
  llvm::sort(views, [&](Operation *a, Operation *b) {
    return index.lookup(a) < index.lookup(b);
  });
  std::vector<Position> positions;
  for (Operation *view : views)
    positions.push_back(positionOf(view, index));
  return positions;
}

static StepReport buildReport(const TrainingStep &step,
                              const StepModel *model,
                              const SimulationResult *simulated) {
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
    if (auto [source, offload] = getOffloadSource(value); offload) {
      entry.offloaded = true;
      entry.type = typeToString(source.getType());
      entry.producer = describeProducer(source);
      entry.bytes = getTensorSizeInBytes(source.getType());
      // Offloads placed after the same op, and loads before the same op,
      // stand in a row; report the compute op they follow or precede.
      Operation *after = offload->getPrevNode();
      while (isCopyOp(after))
        after = after->getPrevNode();
      entry.offloadAfter = positionOf(after, index);
      for (OpOperand &use : step.getBackwardArgument(i).getUses()) {
        Operation *user = use.getOwner();
        if (isa<LoadToGpuOp>(user)) {
          entry.loadBefore = positionOf(nextComputeOp(user), index);
        } else if (isLoadStart(user)) {
          entry.loadStart = positionOf(nextComputeOp(user), index);
          // A group's futures pair up with its sources.
          for (Operation *wait :
               user->getResult(use.getOperandNumber()).getUsers())
            entry.loadBefore = positionOf(nextComputeOp(wait), index);
        }
      }
      entry.rebuiltViews = findRebuiltViews(step.getBackwardArgument(i), index);
      if (model && simulated) {
        int load = model->getPlanInIR().loadOf[i];
        if (load >= 0)
          entry.exposedSeconds = simulated->exposedPerCopy[load];
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

/// The backward ops marked `recomputed`, with their predicted time (as the
/// step model runs them: a fused memory-bound op may cost nothing of its
/// own). A forward op so marked is an error: forward computes a value for
/// the first time.
static LogicalResult findRecomputed(const TrainingStep &step,
                                    const StepModel &model,
                                    std::vector<RecomputedOp> &recomputed) {
  for (Operation &op : step.getForward().getFunctionBody().front())
    if (auto traced = dyn_cast<trace::OpOp>(op); traced && traced.getRecomputed())
      return traced.emitError()
             << "'recomputed' marks a backward op that computes a forward "
                "value again; this op is in forward @"
             << step.getForward().getName();
  OpIndex index;
  indexOps(step.getBackward().getFunctionBody().front(), index);
  for (Operation &op : step.getBackward().getFunctionBody().front()) {
    auto traced = dyn_cast<trace::OpOp>(op);
    auto recompute = dyn_cast<RecomputeOp>(op);
    if (!recompute && (!traced || !traced.getRecomputed()))
      continue;
    RecomputedOp entry;
    entry.position = positionOf(&op, index);
    if (recompute) {
      entry.planned = true;
      entry.node = recompute.getName().str();
      entry.bytes = getTensorSizeInBytes(recompute.getType());
      recompute.getBody().walk([&](TracedOpInterface inner) {
        if (std::optional<StringRef> node = inner.getNode())
          entry.forwardNodes.push_back(node->str());
      });
    } else {
      entry.node = traced.getNode().value_or("").str();
    }
    if (std::optional<unsigned> pos = model.getPosition(&op))
      entry.seconds =
          model.getComputeStart(*pos + 1) - model.getComputeStart(*pos);
    recomputed.push_back(std::move(entry));
  }
  return success();
}

static PeakPoint peakPointOf(const TrainingStep &step, const StepModel &model,
                             const SimulationResult &simulated) {
  PeakPoint point;
  point.seconds = simulated.peakTime;
  if (simulated.peakPos >= model.getNumOps())
    return point;
  Operation *op = model.getOp(simulated.peakPos);
  FunctionOpInterface function = simulated.peakPos < model.getNumForwardOps()
                                     ? step.getForward()
                                     : step.getBackward();
  OpIndex index;
  indexOps(function.getFunctionBody().front(), index);
  point.function = function.getName().str();
  point.position = positionOf(op, index);
  return point;
}

static Prediction predict(const TrainingStep &step, const StepModel &model,
                          const SimulationResult &before,
                          const SimulationResult &after, StringRef device) {
  Prediction prediction;
  prediction.device = device.str();
  prediction.peakBefore = before.peakBytes;
  prediction.peakAtBefore = peakPointOf(step, model, before);
  prediction.peakAtAfter = peakPointOf(step, model, after);
  prediction.stepBefore = before.stepSeconds;
  prediction.peakAfter = after.peakBytes;
  prediction.stepAfter = after.stepSeconds;
  prediction.exposedAfter = after.exposedSeconds;
  prediction.interferenceAfter = after.interferenceSeconds;
  prediction.d2hBytes = after.d2hBytes;
  prediction.h2dBytes = after.h2dBytes;
  prediction.forwardSeconds = model.getComputeStart(model.getNumForwardOps());
  prediction.backwardSeconds =
      model.getComputeStart(model.getNumOps()) - prediction.forwardSeconds;
  prediction.savedInstances = model.getExecutionModel().savedInstances;
  prediction.heldBefore = before.heldByOtherInstances;
  prediction.heldAfter = after.heldByOtherInstances;
  prediction.prefetchLead = model.getExecutionModel().prefetchLead;
  prediction.prefetchBytes =
      std::max<int64_t>(0, model.getExecutionModel().prefetchBytes);
  const CopyPlan &plan = model.getPlanInIR();
  for (unsigned copy : model.getPrefetchedLoads(plan)) {
    ++prediction.prefetchedLoads;
    prediction.prefetchedBytes += plan.copies[copy].bytes;
  }
  if (auto planned = step.getForward()->getAttrOfType<DictionaryAttr>(
          OffloadDialect::kPlannedAttrName)) {
    prediction.plannedPeak = planned.getAs<IntegerAttr>("peak_bytes").getInt();
    prediction.plannedStep =
        planned.getAs<FloatAttr>("step_seconds").getValueAsDouble();
    if (auto peak = planned.getAs<IntegerAttr>("unplanned_peak_bytes"))
      prediction.unplannedPeak = peak.getInt();
    if (auto step = planned.getAs<FloatAttr>("unplanned_step_seconds"))
      prediction.unplannedStep = step.getValueAsDouble();
  }
  return prediction;
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
    os << llvm::formatv("{0,6}  {1,-40}  {2,-28}  {3,10}  {4,-40}  {5,-40}  "
                        "{6,-40}  {7}\n",
                        "result", "producer", "type", "bytes",
                        "offloaded after (forward op #)",
                        "loaded before (backward op #)",
                        "load starts before (backward op #)",
                        "predicted exposed");
    for (const SavedEntry &e : report.saved) {
      std::string where, load, start, exposed;
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
        start = e.loadStart.index < 0
                    ? load
                    : llvm::formatv("#{0} {1}", e.loadStart.index,
                                    e.loadStart.op)
                          .str();
        exposed = formatSeconds(e.exposedSeconds);
      } else {
        where = "kept: " + e.keptReason;
      }
      os << llvm::formatv("{0,6}  {1,-40}  {2,-28}  {3,10}  {4,-40}  {5,-40}  "
                          "{6,-40}  {7}\n",
                          e.result, e.producer, e.type, formatBytes(e.bytes),
                          where, load, start, exposed);
      if (!e.rebuiltViews.empty()) {
        os << "        one copy for saved views rebuilt in backward:";
        for (const Position &view : e.rebuiltViews)
          os << llvm::formatv(" #{0} {1}", view.index, view.op);
        os << "\n";
      }
    }
    os << llvm::formatv("total: offloaded {0} values, {1}; kept {2} values, "
                        "{3}\n",
                        offloaded, formatBytes(offloadedBytes),
                        report.saved.size() - offloaded,
                        formatBytes(keptBytes));
    if (!report.recomputed.empty()) {
      double seconds = 0;
      for (const RecomputedOp &r : report.recomputed)
        seconds += r.seconds;
      os << llvm::formatv("recomputed in backward: {0} ops, predicted {1}:",
                          report.recomputed.size(), formatSeconds(seconds));
      for (const RecomputedOp &r : report.recomputed)
        os << llvm::formatv(" #{0} {1}", r.position.index, r.position.op);
      os << "\n";
      for (const RecomputedOp &r : report.recomputed)
        if (r.planned)
          os << llvm::formatv("  recomputed by the plan: \"{0}\" ({1}, {2} "
                              "forward ops) before backward #{3}, predicted "
                              "{4}\n",
                              r.node, formatBytes(r.bytes),
                              r.forwardNodes.size(), r.position.index,
                              formatSeconds(r.seconds));
    }
    const Prediction &p = report.prediction;
    os << llvm::formatv("predicted ({0}): moved {1} to host and {2} back; "
                        "peak device memory {3} -> {4}; step {5} -> {6} "
                        "(exposed copies {7}{8})\n",
                        p.device, formatBytes(p.d2hBytes),
                        formatBytes(p.h2dBytes), formatBytes(p.peakBefore),
                        formatBytes(p.peakAfter), formatSeconds(p.stepBefore),
                        formatSeconds(p.stepAfter),
                        formatSeconds(p.exposedAfter),
                        p.interferenceAfter > 0
                            ? ", kernels slowed by copies " +
                                  formatSeconds(p.interferenceAfter)
                            : std::string());
    if (p.savedInstances > 1)
      os << llvm::formatv("saved-instances={0}: the peaks include the saved "
                          "values the {1} other instances keep on the "
                          "device, {2} -> {3}\n",
                          p.savedInstances, p.savedInstances - 1,
                          formatBytes(p.heldBefore), formatBytes(p.heldAfter));
    if (p.prefetchLead > 0)
      os << llvm::formatv("prefetch: lead {0} holding at most {1}; {2} loads "
                          "({3}) start during the backward graph before\n",
                          formatSeconds(p.prefetchLead),
                          formatBytes(p.prefetchBytes), p.prefetchedLoads,
                          formatBytes(p.prefetchedBytes));
    if (p.plannedPeak)
      os << llvm::formatv("offload-plan predicted for its plan: peak device "
                          "memory {0}; step {1}\n",
                          formatBytes(*p.plannedPeak),
                          formatSeconds(*p.plannedStep));
    if (p.unplannedPeak && p.unplannedStep)
      os << llvm::formatv("before the plan's recomputation (the step as it "
                          "came): peak device memory {0}; step {1}\n",
                          formatBytes(*p.unplannedPeak),
                          formatSeconds(*p.unplannedStep));
    for (auto [label, point] :
         {std::pair{"without offload", &p.peakAtBefore},
          std::pair{"with offload", &p.peakAtAfter}})
      if (point->position.index >= 0)
        os << llvm::formatv("peak {0}: at {1} into the step, @{2} #{3} {4}\n",
                            label, formatSeconds(point->seconds),
                            point->function, point->position.index,
                            point->position.op);
  }
}

static llvm::json::Value toJson(const Position &position) {
  if (position.index < 0)
    return nullptr;
  return llvm::json::Object{{"index", position.index}, {"op", position.op}};
}

static llvm::json::Value toJson(const PeakPoint &point) {
  if (point.position.index < 0)
    return nullptr;
  return llvm::json::Object{{"function", point.function},
                            {"index", point.position.index},
                            {"op", point.position.op},
                            {"seconds", point.seconds}};
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
        entry["load_start"] = toJson(e.loadStart.index < 0 ? e.loadBefore
                                                           : e.loadStart);
        entry["exposed_seconds"] = e.exposedSeconds;
        // Only for a copy that carries several saved views, as kept_reason
        // only for a value that stays.
        if (!e.rebuiltViews.empty()) {
          llvm::json::Array views;
          for (const Position &view : e.rebuiltViews)
            views.push_back(toJson(view));
          entry["rebuilt_views"] = std::move(views);
        }
        offloadedBytes += e.bytes.value_or(0);
        ++offloaded;
      } else {
        entry["kept_reason"] = e.keptReason;
      }
      saved.push_back(std::move(entry));
    }
    llvm::json::Array recomputedOps;
    double recomputeSeconds = 0;
    for (const RecomputedOp &r : report.recomputed) {
      llvm::json::Object entry{{"index", r.position.index},
                               {"op", r.position.op},
                               {"node", r.node},
                               {"seconds", r.seconds},
                               {"planned", r.planned}};
      if (r.planned) {
        entry["forward_nodes"] = llvm::json::Array(r.forwardNodes);
        if (r.bytes)
          entry["bytes"] = *r.bytes;
      }
      recomputedOps.push_back(std::move(entry));
      recomputeSeconds += r.seconds;
    }
    steps.push_back(llvm::json::Object{
        {"forward", report.forward},
        {"backward", report.backward},
        {"saved", std::move(saved)},
        {"recomputed", std::move(recomputedOps)},
        {"recompute_seconds", recomputeSeconds},
        {"offloaded_values", offloaded},
        {"offloaded_bytes", offloadedBytes},
        {"predicted",
         llvm::json::Object{
             {"device", report.prediction.device},
             {"d2h_bytes", report.prediction.d2hBytes},
             {"h2d_bytes", report.prediction.h2dBytes},
             {"peak_bytes_before", report.prediction.peakBefore},
             {"peak_bytes_after", report.prediction.peakAfter},
             {"step_seconds_before", report.prediction.stepBefore},
             {"step_seconds_after", report.prediction.stepAfter},
             {"exposed_seconds_after", report.prediction.exposedAfter},
             {"interference_seconds_after",
              report.prediction.interferenceAfter},
             {"peak_at_before", toJson(report.prediction.peakAtBefore)},
             {"peak_at_after", toJson(report.prediction.peakAtAfter)},
             {"forward_seconds", report.prediction.forwardSeconds},
             {"backward_seconds", report.prediction.backwardSeconds}}}});
    llvm::json::Object &step = *steps.back().getAsObject();
    if (report.prediction.savedInstances > 1)
      step.try_emplace(
          "saved_instances",
          llvm::json::Object{
              {"instances", report.prediction.savedInstances},
              {"held_bytes_before", report.prediction.heldBefore},
              {"held_bytes_after", report.prediction.heldAfter}});
    if (report.prediction.prefetchLead > 0)
      step.try_emplace(
          "prefetch",
          llvm::json::Object{
              {"lead_seconds", report.prediction.prefetchLead},
              {"bytes", report.prediction.prefetchBytes},
              {"loads", report.prediction.prefetchedLoads},
              {"load_bytes", report.prediction.prefetchedBytes}});
    // Only where offload-plan ran.
    if (report.prediction.plannedPeak)
      step.try_emplace(
          "planned", llvm::json::Object{
                         {"peak_bytes", *report.prediction.plannedPeak},
                         {"step_seconds", *report.prediction.plannedStep}});
    if (report.prediction.unplannedPeak && report.prediction.unplannedStep) {
      llvm::json::Object *planned = step.getObject("planned");
      (*planned)["unplanned_peak_bytes"] = *report.prediction.unplannedPeak;
      (*planned)["unplanned_step_seconds"] = *report.prediction.unplannedStep;
    }
  }
  os << llvm::formatv("{0:2}",
                      llvm::json::Value(llvm::json::Object{
                          {"steps", std::move(steps)}}))
     << "\n";
}

namespace {
struct OffloadReport : public offload::impl::OffloadReportBase<OffloadReport> {
  using Base::Base;

  // The views of tensor ops this pass must see as views (see Views.h).
  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    registerTensorStorageViewExternalModels(registry);
  }

  /// Where a report for a standard stream (`output` is "" or "-") goes
  /// instead, when set (createOffloadReport with a stream: in-process
  /// callers, the C API).
  llvm::raw_ostream *streamReplacement = nullptr;

  void runOnOperation() override {
    if (json && text) {
      emitError(getOperation().getLoc())
          << "choose one of 'text' and 'json'";
      return signalPassFailure();
    }
    ReportFormat reportFormat = json   ? ReportFormat::Json
                                : text ? ReportFormat::Text
                                       : ReportFormat(format);
    SmallVector<TrainingStep> steps;
    if (failed(TrainingStep::collect(getOperation(), steps)))
      return signalPassFailure();
    FailureOr<DeviceProfile> profile = getPassDeviceProfile(OFFLOAD_PASS_PROFILE_OVERRIDES(), getOperation());
    if (failed(profile))
      return signalPassFailure();
    FailureOr<ExecutionModel> parsedExecution = OFFLOAD_PASS_EXECUTION_MODEL();
    if (failed(parsedExecution))
      return signalPassFailure();
    ExecutionModel execution = *parsedExecution;
    CostModel costModel(*profile);
    std::vector<StepReport> reports;
    for (const TrainingStep &step : steps)
      for (Type type : step.getForward().getResultTypes())
        if (isa<BaseMemRefType>(type)) {
          step.getForward()->emitError()
              << "offload-report reads the tensor form of a step; this one "
                 "is bufferized (it returns "
              << type << "): report before one-shot-bufferize";
          return signalPassFailure();
        }
    for (const TrainingStep &step : steps) {
      FailureOr<StepModel> model =
          StepModel::build(step, costModel, execution);
      if (failed(model))
        return signalPassFailure();
      SimulationResult before = model->simulate(model->getEmptyPlan());
      SimulationResult after = model->simulate(model->getPlanInIR());
      reports.push_back(buildReport(step, &*model, &after));
      if (failed(findRecomputed(step, *model, reports.back().recomputed)))
        return signalPassFailure();
      reports.back().prediction = predict(step, *model, before, after, profile->name);
    }

    auto print = [&](llvm::raw_ostream &os) {
      if (reportFormat == ReportFormat::Json)
        printJson(reports, os);
      else
        printText(reports, os);
    };
    // Standard error by default, so the report never mixes with the IR that
    // offload-opt prints on standard output.
    if (streamReplacement && (output.empty() || output == "-")) {
      print(*streamReplacement);
    } else if (output.empty()) {
      print(llvm::errs());
    } else {
      std::string error;
      std::unique_ptr<llvm::ToolOutputFile> file =
          openOutputFile(output, &error);
      if (!file) {
        emitError(getOperation().getLoc()) << error;
        return signalPassFailure();
      }
      print(file->os());
      // A failed write (a full disk) is an error here, not a fatal one when
      // the stream closes.
      file->os().flush();
      if (std::error_code writeError = file->os().error()) {
        file->os().clear_error();
        emitError(getOperation().getLoc())
            << "cannot write the report to '" << output
            << "': " << writeError.message();
        return signalPassFailure();
      }
      file->keep();
    }
    markAllAnalysesPreserved();
  }
};
} // namespace

std::unique_ptr<Pass>
mlir::offload::createOffloadReport(const OffloadReportOptions &options,
                                   llvm::raw_ostream &reportStream) {
  auto pass = std::make_unique<OffloadReport>(options);
  pass->streamReplacement = &reportStream;
  return pass;
}
