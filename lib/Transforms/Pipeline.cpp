//===- Pipeline.cpp - The offload-activations pipeline --------------------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "offload/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::offload;

/// The options of a cost-model pass (CostModelOptions in Passes.td) that the
/// pipeline sets: the device and what runs the step, the same for each pass.
template <typename CostModelPassOptions>
static void setStepModelOptions(CostModelPassOptions &pass,
                                const OffloadPipelineOptions &options) {
  pass.deviceProfile = options.deviceProfile;
  pass.release = options.release;
  pass.fuseMemoryBound = options.fuseMemoryBound;
  pass.reuseFreedBuffers = options.reuseFreedBuffers;
  pass.prefetchLead = options.prefetchLead;
  pass.prefetchBytes = options.prefetchBytes;
  pass.savedInstances = options.savedInstances;
}

static void buildPipeline(OpPassManager &pm,
                          const OffloadPipelineOptions &options,
                          llvm::raw_ostream *reportStream) {
  FindSavedActivationsOptions find;
  find.minBytes = options.minBytes;
  find.denyOps.assign(options.denyOps.begin(), options.denyOps.end());
  pm.addPass(createFindSavedActivations(find));
  // Recomputation a framework or the user already decided on comes first:
  // the plan is made on the step that will run.
  pm.addPass(createInsertRecomputes());
  // `budget=` without `plan=` plans to the budget (offload-plan refuses it
  // beside plan=hidden).
  PlanMode mode = options.plan;
  if (!options.budget.empty() && !options.plan.hasValue())
    mode = PlanMode::Budget;
  if (mode != PlanMode::All || !options.budget.empty()) {
    PlanOffloadsOptions plan;
    plan.plan = mode;
    plan.budget = options.budget;
    plan.maxSlowdown = options.maxSlowdown;
    plan.copyMargin = options.copyMargin;
    plan.loadLead = options.loadLead;
    plan.maxInterference = options.maxInterference;
    plan.hiddenPatience = options.hiddenPatience;
    plan.dropPeakNeutral = options.dropPeakNeutral;
    plan.schedule = options.schedule;
    plan.maxInflightBytes = options.maxInflightBytes;
    plan.coalesceBelow = options.coalesceBelow;
    plan.recompute = options.recompute;
    plan.maxRecompute = options.maxRecompute;
    plan.recomputeMaxOps = options.recomputeMaxOps;
    setStepModelOptions(plan, options);
    pm.addPass(createPlanOffloads(plan));
  }
  pm.addPass(createInsertOffloads());
  pm.addPass(createReorderBackward());
  pm.addPass(createInsertLoads());
  if (options.schedule) {
    ScheduleCopiesOptions schedule;
    schedule.maxInflightBytes = options.maxInflightBytes;
    schedule.coalesceBelow = options.coalesceBelow;
    schedule.copyMargin = options.copyMargin;
    schedule.loadLead = options.loadLead;
    setStepModelOptions(schedule, options);
    pm.addPass(createScheduleCopies(schedule));
  }
  if (options.report != ReportFormat::None) {
    OffloadReportOptions report;
    report.format = options.report;
    report.output = options.reportFile;
    setStepModelOptions(report, options);
    pm.addPass(reportStream ? createOffloadReport(report, *reportStream)
                            : createOffloadReport(report));
  }
}

void mlir::offload::buildOffloadPipeline(
    OpPassManager &pm, const OffloadPipelineOptions &options) {
  buildPipeline(pm, options, /*reportStream=*/nullptr);
}

void mlir::offload::buildOffloadPipelineWithReportStream(
    OpPassManager &pm, const OffloadPipelineOptions &options,
    llvm::raw_ostream &reportStream) {
  buildPipeline(pm, options, &reportStream);
}

void mlir::offload::registerOffloadPipeline() {
  PassPipelineRegistration<OffloadPipelineOptions>(
      "offload-activations",
      "Offload saved forward activations to host memory and load them back "
      "before their first real use in backward",
      [](OpPassManager &pm, const OffloadPipelineOptions &options) {
        buildOffloadPipeline(pm, options);
      });
}
