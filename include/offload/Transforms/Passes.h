//===- Passes.h - offload-mlir passes ---------------------------*- C++ -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_TRANSFORMS_PASSES_H
#define OFFLOAD_TRANSFORMS_PASSES_H

#include "offload/Dialect/Offload/IR/OffloadDialect.h"
#include "offload/Dialect/Offload/IR/TrainingStep.h"
#include "offload/Transforms/PassOptionValues.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir {
namespace offload {

#define GEN_PASS_DECL
#include "offload/Transforms/Passes.h.inc"

/// Options of the `offload-activations` pipeline. Defaults shared with the
/// passes' options come from PassOptionValues.h.
struct OffloadPipelineOptions
    : public PassPipelineOptions<OffloadPipelineOptions> {
  PassOptions::Option<ByteSize> minBytes{
      *this, "min-bytes",
      llvm::cl::desc("Values smaller than this stay on the device (default: "
                     "1 MiB)"),
      llvm::cl::init(defaults::kPipelineMinBytes)};
  PassOptions::ListOption<std::string> denyOps{
      *this, "deny-ops",
      llvm::cl::desc("Producers (op names or trace targets) whose results "
                     "stay on the device")};
  PassOptions::Option<ReportFormat> report{
      *this, "report",
      llvm::cl::desc("Print a report at the end: none, text or json"),
      llvm::cl::init(defaults::kReport), pipelineReportValues()};
  PassOptions::Option<std::string> reportFile{
      *this, "report-file",
      llvm::cl::desc("Where the report goes: standard error by default, '-' "
                     "for standard output, or a file"),
      llvm::cl::init(defaults::kReportFile)};
  PassOptions::Option<PlanMode> plan{
      *this, "plan",
      llvm::cl::desc("What to offload: all, hidden (the default) or budget "
                     "(what budget= alone means)"),
      llvm::cl::init(defaults::kPipelinePlan), planModeValues()};
  PassOptions::Option<Budget> budget{
      *this, "budget",
      llvm::cl::desc("Device memory budget (20GiB, 16GB, ...) or a fraction "
                     "of the predicted peak without offload (0.6); implies "
                     "plan=budget")};
  PassOptions::Option<double> maxSlowdown{
      *this, "max-slowdown",
      llvm::cl::desc("plan=hidden: largest predicted step time increase"),
      llvm::cl::init(defaults::kMaxSlowdown)};
  PassOptions::Option<double> maxInterference{
      *this, "max-interference",
      llvm::cl::desc("plan=hidden: largest predicted step time increase from "
                     "kernels slowed by copies beside them"),
      llvm::cl::init(defaults::kMaxInterference)};
  PassOptions::Option<unsigned> hiddenPatience{
      *this, "hidden-patience",
      llvm::cl::desc("plan=hidden: stop after this many candidates in a row "
                     "are simulated and dropped (0: exact first fit)"),
      llvm::cl::init(defaults::kHiddenPatience)};
  PassOptions::Option<bool> dropPeakNeutral{
      *this, "drop-peak-neutral",
      llvm::cl::desc("plan=hidden: then keep on the device each offload the "
                     "predicted peak does not need (a step that is the "
                     "whole training step)"),
      llvm::cl::init(false)};
  PassOptions::Option<double> copyMargin{
      *this, "copy-margin",
      llvm::cl::desc("plan=hidden: plan as if every copy took this fraction "
                     "longer; the report's prediction is unchanged"),
      llvm::cl::init(defaults::kCopyMargin)};
  PassOptions::Option<double> loadLead{
      *this, "load-lead",
      llvm::cl::desc("Start every load this fraction of its copy time earlier "
                     "than the model needs, where memory allows (negative: "
                     "copy-margin's value)"),
      llvm::cl::init(-1)};
  PassOptions::Option<bool> schedule{
      *this, "schedule",
      llvm::cl::desc("Split copies into start/wait and hoist load starts "
                     "(offload-schedule-copies); false: one synchronous copy "
                     "each way per value"),
      llvm::cl::init(defaults::kSchedule)};
  PassOptions::Option<ByteSize> maxInflightBytes{
      *this, "max-inflight-bytes",
      llvm::cl::desc("Most bytes of loads started and not yet waited"),
      llvm::cl::init(defaults::kMaxInflightBytes)};
  PassOptions::Option<ByteSize> coalesceBelow{
      *this, "coalesce-below",
      llvm::cl::desc("With schedule=true: copies smaller than this (a byte "
                     "size; 0: none) issued at one point move as one "
                     "transfer (offload.offload_group_start, "
                     "offload.load_group_start)"),
      llvm::cl::init(defaults::kCoalesceBelow)};
  PassOptions::Option<bool> recompute{
      *this, "recompute",
      llvm::cl::desc("With plan=hidden|budget: plan recomputation of cheap "
                     "saved values with the copies (offload.recompute)"),
      llvm::cl::init(defaults::kRecompute)};
  PassOptions::Option<double> maxRecompute{
      *this, "max-recompute",
      llvm::cl::desc("plan=hidden with recompute: largest predicted step "
                     "time increase recomputation and unhidden copies may "
                     "add together, on top of max-slowdown"),
      llvm::cl::init(defaults::kMaxRecompute)};
  PassOptions::Option<unsigned> recomputeMaxOps{
      *this, "recompute-max-ops",
      llvm::cl::desc("Most forward ops one recomputation may repeat"),
      llvm::cl::init(defaults::kRecomputeMaxOps)};
  PassOptions::Option<std::string> deviceProfile{
      *this, "device-profile",
      llvm::cl::desc("JSON device profile for the cost model"),
      llvm::cl::init("")};
  PassOptions::Option<ExecutionModel::Release> release{
      *this, "release",
      llvm::cl::desc("Where offloaded device memory comes back"),
      llvm::cl::init(defaults::kRelease), releaseValues()};
  PassOptions::Option<bool> fuseMemoryBound{
      *this, "fuse-memory-bound",
      llvm::cl::desc("The code generator fuses memory-bound ops (Inductor)"),
      llvm::cl::init(defaults::kFuseMemoryBound)};
  PassOptions::Option<bool> reuseFreedBuffers{
      *this, "reuse-freed-buffers",
      llvm::cl::desc("The code generator keeps freed buffers for its next "
                     "allocation of their dtype and size (Inductor)"),
      llvm::cl::init(defaults::kReuseFreedBuffers)};
  PassOptions::Option<std::string> prefetchLead{
      *this, "prefetch-lead",
      llvm::cl::desc("Seconds before backward, at the end of the backward "
                     "graph before, during which the first loads may run "
                     "(0: none; auto: planned)"),
      llvm::cl::init(defaults::kPrefetchLead)};
  PassOptions::Option<PrefetchBytes> prefetchBytes{
      *this, "prefetch-bytes",
      llvm::cl::desc("Device memory the loads started early may hold (a "
                     "byte size, or auto: planned)"),
      llvm::cl::init(defaults::kPrefetchBytes)};
  PassOptions::Option<unsigned> savedInstances{
      *this, "saved-instances",
      llvm::cl::desc("Graphs of this step whose saved values are on the "
                     "device at once (per-layer compilation: the layers)"),
      llvm::cl::init(defaults::kSavedInstances)};
};

/// Adds find, insert-recomputes, plan (for plan=hidden|budget), insert-offloads,
/// reorder-backward, insert-loads, schedule-copies (with schedule=true) and
/// the report (if asked for) to `pm`.
void buildOffloadPipeline(OpPassManager &pm,
                          const OffloadPipelineOptions &options);

/// Like buildOffloadPipeline, but a report that would go to a standard
/// stream (standard error by default, or standard output with report-file=-)
/// is written to `reportStream` instead, which must outlive the pass
/// manager's run. For in-process callers (the C API).
void buildOffloadPipelineWithReportStream(OpPassManager &pm,
                                          const OffloadPipelineOptions &options,
                                          llvm::raw_ostream &reportStream);

/// The `offload-report` pass, writing a report meant for a standard stream
/// (no `output`, or output=-) to `reportStream` instead.
std::unique_ptr<Pass> createOffloadReport(const OffloadReportOptions &options,
                                          llvm::raw_ostream &reportStream);

/// Registers `offload-activations`.
void registerOffloadPipeline();

#define GEN_PASS_REGISTRATION
#include "offload/Transforms/Passes.h.inc"

} // namespace offload
} // namespace mlir

#endif // OFFLOAD_TRANSFORMS_PASSES_H
