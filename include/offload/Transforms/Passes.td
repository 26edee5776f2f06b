//===- Passes.td - offload-mlir passes ---------------------*- tablegen -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_TRANSFORMS_PASSES_TD
#define OFFLOAD_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

// Enum-valued options are C++ enums with `cl::values`, and every default
// that several options share is a constant: both live in
// offload/Transforms/PassOptionValues.h, which the pipeline's options
// (Passes.h) use too, so each default is defined once.

// The options every cost-model pass takes: the device profile (a negative
// value keeps the profile's number: the H100 defaults, or `device-profile`)
// and what the model assumes about the code that runs the step.
defvar CostModelOptions = [
  Option<"deviceProfile", "device-profile", "std::string", /*default=*/"\"\"",
         "JSON device profile to start from (default: the H100 profile)">,
  Option<"d2hGBps", "d2h-gbps", "double", /*default=*/"-1",
         "Device-to-host bandwidth, GB/s (H100: 55)">,
  Option<"h2dGBps", "h2d-gbps", "double", /*default=*/"-1",
         "Host-to-device bandwidth, GB/s (H100: 55)">,
  Option<"bothWaysGBps", "both-ways-gbps", "double", /*default=*/"-1",
         "Both directions at once, GB/s in total (H100: 89.7)">,
  Option<"hbmGBps", "hbm-gbps", "double", /*default=*/"-1",
         "Device memory bandwidth, read plus write, GB/s (H100: 3000)">,
  Option<"bf16TFlops", "bf16-tflops", "double", /*default=*/"-1",
         "Dense bf16/f16 peak, TFLOP/s (H100: 790)">,
  Option<"f32TFlops", "f32-tflops", "double", /*default=*/"-1",
         "Dense f32 peak, TFLOP/s (H100: 60)">,
  Option<"attentionTFlops", "attention-tflops", "double", /*default=*/"-1",
         "Scaled-dot-product attention in 16-bit types, TFLOP/s as the model "
         "counts them (H100: 300)">,
  Option<"copyLatencyUs", "copy-latency-us", "double", /*default=*/"-1",
         "Fixed cost per copy, microseconds (H100: 10)">,
  Option<"opOverheadUs", "op-overhead-us", "double", /*default=*/"-1",
         "Fixed cost per op, microseconds (default 2)">,
  Option<"copyInterference", "copy-interference", "double", /*default=*/"-1",
         "Kernel seconds added per second a copy stream transfers beside the "
         "kernel (default 0; measured by offload_mlir.calibrate)">,
  Option<"release", "release", "::mlir::offload::ExecutionModel::Release",
         /*default=*/"::mlir::offload::defaults::kRelease",
         "Where an offloaded value's device memory comes back: after-copy "
         "(once its copy ends, compute never waits: offload_rt) or at-wait "
         "(at its offload's wait, which waits for the copy: a stream-ordered "
         "allocator such as PyTorch's)",
         "::mlir::offload::releaseValues()">,
  Option<"fuseMemoryBound", "fuse-memory-bound", "bool",
         /*default=*/"::mlir::offload::defaults::kFuseMemoryBound",
         "The code generator fuses memory-bound ops between compute-bound ones "
         "(Inductor): values only they read never reach device memory">,
  Option<"reuseFreedBuffers", "reuse-freed-buffers", "bool",
         /*default=*/"::mlir::offload::defaults::kReuseFreedBuffers",
         "The code generator keeps a buffer it frees for its next allocation "
         "of the same dtype and size where that keeps its estimated peak "
         "(Inductor): the storage stays live until then">,
  Option<"prefetchLead", "prefetch-lead", "std::string",
         /*default=*/"::mlir::offload::defaults::kPrefetchLead",
         "A step compiled as one of several graphs: seconds before its "
         "backward, at the end of the backward graph that runs before it, "
         "during which its first loads may run; it starts the next graph's "
         "the same time before its own backward ends (0: none; auto: the "
         "lead that moves the most bytes within prefetch-bytes)">,
  Option<"prefetchBytes", "prefetch-bytes", "::mlir::offload::PrefetchBytes",
         /*default=*/"::mlir::offload::defaults::kPrefetchBytes",
         "Device memory the loads started early may hold during the lead (a "
         "byte size, or auto: what the last prefetch-lead seconds of this "
         "step's backward leave free below its peak without offload)">,
  Option<"savedInstances", "saved-instances", "unsigned",
         /*default=*/"::mlir::offload::defaults::kSavedInstances",
         "A step compiled once and run as this many graphs before their "
         "backward graphs, as the layers of a model compiled per layer: the "
         "saved values of the other instances stay on the device while one "
         "runs, and the peak counts what they hold (1: the step alone)">,
];

def FindSavedActivations : Pass<"offload-find-saved-activations", "ModuleOp"> {
  let summary = "Mark the saved results of each training step to offload";
  let description = [{
    For every forward function (one carrying `offload.backward`), decides
    which saved results (results past `offload.num_outputs`) to move to host
    memory, and records the decision on the result: `offload.selected` for
    values to offload, `offload.kept = "<reason>"` for values that stay.

    A value is selected when offloading it frees device memory: it is an
    intermediate (not a function argument nor a view of one), device
    resident, at least `min-bytes` large, its producer carries no
    `offload.keep` and is not in `deny-ops`, and no other returned value
    that stays on the device (a forward output, or a saved result kept for
    its own reason) shares its storage. Saved results sharing one storage
    are selected together, which frees it; `offload-insert-offloads` then
    moves them as one copy where it can.
  }];
  let options = [
    Option<"minBytes", "min-bytes", "::mlir::offload::ByteSize",
           /*default=*/"::mlir::offload::defaults::kMinBytes",
           "Values smaller than this (a byte size: 1MiB, 4096) stay on the "
           "device; values of unknown (dynamic) size stay unless this is 0">,
    ListOption<"denyOps", "deny-ops", "std::string",
               "Producers (op names or trace targets) whose results stay on "
               "the device">,
  ];
  let dependentDialects = ["::mlir::offload::OffloadDialect"];
}

def InsertRecomputes : Pass<"offload-insert-recomputes", "ModuleOp"> {
  let summary = "Compute saved results marked offload.recompute again in backward";
  let description = [{
    For every saved result of a training step marked `offload.recompute`
    (by hand, or by a framework that made the decision), drops the result
    from the step's interface and computes the value again in backward: an
    `offload.recompute` holding a copy of the forward ops that computed it
    from other saved values, placed right before its first real consumer
    (views of the value above that consumer move below it). The forward ops
    that only computed the dropped value are erased.

    A marked value must be computed from saved values that stay saved, by
    views, constants and memory-bound ops of known cost without side effects
    or random state (see `offload/Analysis/Recompute.h`); otherwise the pass
    fails with an error at the value. `offload-plan` makes the same
    rewrite for the values it decides to recompute.

    ```mlir
    // Before: %n (a norm's output) is saved next to its inputs %x and %r.
    %n = arith.mulf %x, %r : tensor<4x8xf32>
    return %y, %x, %r, %n : ...  // {offload.recompute} on the result of %n
    func.func @backward(%x: ..., %r: ..., %n: ..., %g: ...) {
      %d = arith.mulf %g, %n : tensor<4x8xf32>
    // After: backward computes %n again right before its consumer.
    return %y, %x, %r : ...
    func.func @backward(%x: ..., %r: ..., %g: ...) {
      %n = offload.recompute(%x, %r) {name = "n"} : (...) -> tensor<4x8xf32> {
      ^bb0(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>):
        %m = arith.mulf %a, %b : tensor<4x8xf32>
        offload.yield %m : tensor<4x8xf32>
      }
      %d = arith.mulf %g, %n : tensor<4x8xf32>
    ```
  }];
  let dependentDialects = ["::mlir::offload::OffloadDialect"];
}

def InlineRecomputes : Pass<"offload-inline-recomputes", "ModuleOp"> {
  let summary = "Replace each offload.recompute by the ops of its body";
  let description = [{
    Moves the body of every `offload.recompute` in front of it, its block
    arguments replaced by the op's inputs, and the op's result by the
    yielded value: the form the lowering (bufferization, then the LLVM
    dialect) and code generators that know nothing of the offload dialect
    take. Run it after the scheduling passes, which place copies around the
    recomputations.
  }];
}

def InsertOffloads : Pass<"offload-insert-offloads", "ModuleOp"> {
  let summary = "Offload selected saved results right after their last forward use";
  let description = [{
    For every saved result marked `offload.selected`, inserts
    `offload.offload_to_cpu` right after the last forward use of the value
    or of any view sharing its storage (a use nested in a region counts at
    its top-level ancestor; the return does not count), and returns the host
    value instead. The matching backward argument becomes host resident and
    is loaded once at the entry of backward, so the module stays valid;
    `offload-insert-loads` then moves that load to the first real consumer.

    One storage, one copy: saved results that share one storage (views of
    one intermediate, or one value saved twice) move as a single copy of
    the value owning it, when that moves no more bytes than a copy per
    saved result (see `offload/Analysis/SharedStorage.h`). The copy is
    returned in one saved slot, the others leave the interface (forward's
    results, backward's arguments, and the calls of both), and backward
    re-applies each saved view to the one load, marking the cloned views
    `offload.rebuilt_view`; `offload-reorder-backward` then sinks each to
    its first real consumer.

    ```mlir
    // Before: q and k are views of %qkv, both saved.
    return %o, %q, %k : ...
    func.func @backward(%q: tensor<4x8xf32>, %k: tensor<4x8xf32>, ...)
    // After: one copy of %qkv; backward rebuilds q and k from its load.
    %h = offload.offload_to_cpu %qkv : tensor<4x16xf32> -> tensor<4x16xf32, #offload.host>
    return %o, %h : ...
    func.func @backward(%s: tensor<4x16xf32, #offload.host>, ...) {
      %l = offload.load_to_gpu %s : tensor<4x16xf32, #offload.host> -> tensor<4x16xf32>
      %q = trace.view "aten.slice.Tensor"(%l) {node = "q", offload.rebuilt_view} : ...
      %k = trace.view "aten.slice.Tensor"(%l) {node = "k", offload.rebuilt_view} : ...
    ```
  }];
  let dependentDialects = ["::mlir::offload::OffloadDialect"];
}

def ReorderBackward : Pass<"offload-reorder-backward", "ModuleOp"> {
  let summary = "Move views of saved values next to their first real consumer";
  let description = [{
    In each backward function, sinks the views of saved values (ops
    implementing the project's `StorageViewOpInterface`, which covers
    `trace.view` and tensor reshapes, slices and casts, or, for buffers,
    `ViewLikeOpInterface`) down to just before their first real
    consumer, so the load of the saved value can sit there too. The result
    is a stable topological order: every other op keeps its relative order,
    dominance holds, and no view moves across an op whose effects do not
    commute with its own (`MemoryEffectOpInterface`): a view without
    effects (every tensor view and `trace.view`) sinks past anything, an
    unrelated `memref.store` or an op of unknown effects included.
  }];
  let options = [
    Option<"allViews", "all-views", "bool", /*default=*/"false",
           "Sink every view in backward, not only views of saved values">,
  ];
}

def InsertLoads : Pass<"offload-insert-loads", "ModuleOp"> {
  let summary = "Load each offloaded value right before its first real consumer";
  let description = [{
    For each host-resident saved argument of a backward function, places
    exactly one `offload.load_to_gpu` right before the first op that uses
    the loaded value (a use nested in a region counts at its top-level
    ancestor), makes every use read that load, and removes the others.
  }];
  let dependentDialects = ["::mlir::offload::OffloadDialect"];
}

def ScheduleCopies : Pass<"offload-schedule-copies", "ModuleOp"> {
  let summary = "Split copies into start and wait and overlap them with compute";
  let description = [{
    Rewrites every `offload.offload_to_cpu` of a training step into an
    `offload.offload_start` at the same place and an `offload.wait` at the
    copy's release point, and every
    `offload.load_to_gpu` into an `offload.load_start` and an `offload.wait`
    right before the loaded value's first use.

    The load starts are then hoisted: with the cost model predicting each
    op's time, loads are placed latest-first on the serial H2D stream so
    each copy ends before its wait (started `load-lead` of its own copy
    time earlier still), and no load starts after one that waits later,
    which the stream would run first; a start never moves above the start of
    backward, nor so early that the bytes of loads started and not yet
    waited exceed `max-inflight-bytes`, nor so early that the memory it
    holds meanwhile raises the predicted peak: the predicted peak device
    memory is at most that of the same copies with every load started
    right before its wait (so at most the peak without offload wherever
    that is), nor above an op whose effects do not commute with the
    start's (an op of unknown effects; a start on a tensor writes only its
    own future on the `offload.copies` resource, so it crosses compute,
    other copies and writes of unrelated memory). Load waits stay right
    before first use; an offload's wait rises to its release point by the
    same rule. With `release=at-wait`, where the wait releases the source,
    it then goes down again as far as the bytes it holds leave the
    predicted peak unchanged, up to the end of forward: slack for a copy
    that ends later than predicted.

    ```mlir
    // Before: the load's 4000 B copy must start before %r to be hidden,
    // but %a (16000 B) is live there at the step's peak.
    %a = trace.op "aten.repeat.default"(%g) : (tensor<1000xf32>) -> tensor<4000xf32>
    %r = trace.op "aten.sum.dim_IntList"(%a) : (tensor<4000xf32>) -> tensor<1000xf32>
    %l = offload.load_to_gpu %s : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
    %o = arith.mulf %r, %l : tensor<1000xf32>
    // After: the start is held back to its wait (its copy is exposed).
    %r = trace.op "aten.sum.dim_IntList"(%a) : (tensor<4000xf32>) -> tensor<1000xf32>
    %f = offload.load_start %s : tensor<1000xf32, #offload.host> -> !offload.future<tensor<1000xf32>>
    %l = offload.wait %f : !offload.future<tensor<1000xf32>>
    %o = arith.mulf %r, %l : tensor<1000xf32>
    ```

    An offload's wait marks where its copy is done and its source may be
    released: before the first forward op the cost model predicts to start
    after the copy ends (forward never stalls there by that prediction), or
    before the return if no op does. Runtimes that free device memory only
    in stream order (a framework's caching allocator, whose buffers the
    compiled graph may reuse right after their last use) keep the source
    alive until this wait and release it there. With `release=at-wait`
    each wait then goes further down, latest first, up to the end of
    forward, as far as the bytes it keeps live leave the predicted peak
    unchanged: slack for a forward that runs faster than predicted, paid for
    with memory only where the peak is not.

    Where `offload-plan` recorded its placements (with `schedule=true` it
    puts an `offload.placement load_starts [...]` in backward where loads
    start and an `offload.placement offload_waits [...]` in forward where
    offloads are waited for, naming saved values), this pass places the
    copies there instead of deriving the placements again, and erases the
    placements: the prediction the planner recorded is then of these
    placements. The loads one placement names start where it stands, in its
    order. A copy stays where it is if its placement is not between its
    start and its wait, and moves only as far as the effects rule above
    allows. This pass's own options then play no part; the planner used the
    same ones. The planner records a placement for every copy (one at the
    end of its function before the terminator); a copy without one (another
    pass erased it) is placed as without a plan, with a remark at the copy.
    The pass never fails on a placement and leaves none in the module: one
    that places nothing (not at the top level of a step's forward or
    backward, as after inlining the step into a caller; of the other kind
    there; naming a saved value the step does not have) is dropped with a
    remark, and its copies are placed as without a plan.

    ```mlir
    // offload-plan placed this load's start before %b:
    %a = math.exp %g : tensor<1000xf32>
    offload.placement load_starts [0]
    %b = math.exp %a : tensor<1000xf32>
    %l = offload.load_to_gpu %s : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
    %o = arith.mulf %b, %l : tensor<1000xf32>
    // After:
    %a = math.exp %g : tensor<1000xf32>
    %f = offload.load_start %s : tensor<1000xf32, #offload.host> -> !offload.future<tensor<1000xf32>>
    %b = math.exp %a : tensor<1000xf32>
    %l = offload.wait %f : !offload.future<tensor<1000xf32>>
    %o = arith.mulf %b, %l : tensor<1000xf32>
    ```
  }];
  let options = !listconcat(CostModelOptions, [
    Option<"maxInflightBytes", "max-inflight-bytes", "::mlir::offload::ByteSize",
           /*default=*/"::mlir::offload::defaults::kMaxInflightBytes",
           "Most bytes of loads started and not yet waited (a byte size: "
           "2GiB, 512MiB, 1.5GB, 4096; 0: no limit)">,
    Option<"copyMargin", "copy-margin", "double",
           /*default=*/"::mlir::offload::defaults::kCopyMargin",
           "The pipeline's copy margin; here only the default of "
           "load-lead">,
    Option<"loadLead", "load-lead", "double", /*default=*/"-1",
           "Hoist each load start this fraction of its copy time earlier "
           "than the model needs, where memory allows (negative: "
           "copy-margin's value)">,
    Option<"coalesceBelow", "coalesce-below", "::mlir::offload::ByteSize",
           /*default=*/"::mlir::offload::defaults::kCoalesceBelow",
           "Copies smaller than this (a byte size; 0: none) issued at one "
           "point become one offload_group_start or load_group_start">,
    Option<"useRecorded", "use-recorded", "bool", /*default=*/"true",
           "Place copies where offload-plan recorded them, if it did; "
           "false: derive the placements with this pass's options (the "
           "offload.placement ops are erased either way)">,
  ]);
  let dependentDialects = ["::mlir::offload::OffloadDialect"];
}

def PlanOffloads : Pass<"offload-plan", "ModuleOp"> {
  let summary = "Choose which selected values to offload or recompute from predicted cost";
  let description = [{
    Runs after `offload-find-saved-activations` and before
    `offload-insert-offloads`. With `plan=all` it changes nothing. With
    `plan=hidden` it keeps offloading only values whose copies the cost
    model predicts the link can hide under compute (the step gets at most
    `max-slowdown` slower from exposed copies, and at most `max-interference`
    slower from kernels slowed by the copies beside them, the profile's
    `copy_interference`) even if every copy took `copy-margin` longer than
    the device profile says. With `plan=budget` (implied by `budget=`) it
    picks the values to offload so the predicted peak device memory fits
    `budget` with the least predicted step time: greedily by bytes freed at
    the peak per second of added step time, then dropping offloads that are
    no longer needed. With `drop-peak-neutral`, plan=hidden then drops the
    offloads its predicted peak does not need in the same way: for a step
    that is all of a training step (the forward computes the loss), a copy
    that lowers no peak costs link time and risk for nothing, though in a
    model compiled as several graphs it may lower the peak of another.
    Values it leaves on the device get `offload.kept = "plan: ..."`. If no
    plan fits the budget, it fails with an error stating the smallest
    predicted peak reachable.

    With `recompute=true` (the default) it plans recomputation with the
    copies: a selected value that views, constants and memory-bound ops
    (norms, pointwise chains; never matmuls or attention) compute from other
    saved values may be computed again in backward instead of saved
    (`offload/Analysis/Recompute.h`). Such values are ranked by bytes freed
    per second of recomputation; for a number of the best-ranked (a sweep
    over how many, each with the copies planned on top as above), the cost
    model predicts step time and peak, and the pass keeps the combination
    that fits `budget` fastest, or, for plan=hidden, the lowest peak within
    `max-slowdown` plus `max-recompute` of the step without either (that
    allowance is the joint plan's, for recomputation and for copies the
    link does not hide alike; with `recompute=false` copies must stay
    hidden within `max-slowdown`). It
    carries its recompute decisions out itself (as
    `offload-insert-recomputes` does: `offload.recompute` in backward, the
    values gone from the interface), so the copies are planned on the step
    that will run.

    It records its prediction for the chosen plan on the forward function
    (`offload.planned`) and, with `schedule=true`, where that plan places
    the copies: an `offload.placement load_starts [...]` in backward right
    before the op the loads of the named saved values start before, an
    `offload.placement offload_waits [...]` in forward right before the op
    the named offloads are waited before. They are ops, not attributes of
    the ops beside them, so other passes between this one and the
    scheduling (canonicalization, CSE, the inliner,
    `offload-reorder-backward`) neither lose them nor are stopped by them.
    It erases the placements of any earlier plan first.
    `offload-insert-offloads` renumbers them when saved values leave the
    interface, and `offload-schedule-copies` places the copies there and
    erases them.
  }];
  let options = !listconcat(CostModelOptions, [
    Option<"plan", "plan", "::mlir::offload::PlanMode",
           /*default=*/"::mlir::offload::defaults::kPlan",
           "What to keep offloading: all, hidden or budget",
           "::mlir::offload::planModeValues()">,
    Option<"budget", "budget", "::mlir::offload::Budget",
           /*default=*/"::mlir::offload::Budget()",
           "Device memory budget: a byte size (20GiB, 16GB, 512MiB) or a "
           "fraction (0 < f <= 1) of the predicted peak without offload">,
    Option<"maxSlowdown", "max-slowdown", "double",
           /*default=*/"::mlir::offload::defaults::kMaxSlowdown",
           "plan=hidden: largest predicted step time increase, as a fraction">,
    Option<"maxInterference", "max-interference", "double",
           /*default=*/"::mlir::offload::defaults::kMaxInterference",
           "plan=hidden: largest predicted step time increase from kernels "
           "slowed by copies beside them (copy_interference), as a fraction">,
    Option<"copyMargin", "copy-margin", "double",
           /*default=*/"::mlir::offload::defaults::kCopyMargin",
           "plan=hidden: choose values as if every copy took this fraction "
           "longer (slack for compute that runs faster than predicted)">,
    Option<"loadLead", "load-lead", "double", /*default=*/"-1",
           "With schedule=true: predict every load started this fraction of "
           "its copy time earlier than the model needs, where memory allows, "
           "as offload-schedule-copies places it (negative: copy-margin's "
           "value)">,
    Option<"hiddenPatience", "hidden-patience", "unsigned",
           /*default=*/"::mlir::offload::defaults::kHiddenPatience",
           "plan=hidden: stop after this many candidates in a row are "
           "simulated and dropped (0: try every candidate, exact first fit)">,
    Option<"dropPeakNeutral", "drop-peak-neutral", "bool",
           /*default=*/"false",
           "plan=hidden: then keep on the device each offload the predicted "
           "peak does not need (for a step that is the whole training step, "
           "whose memory no other graph adds to)">,
    Option<"schedule", "schedule", "bool",
           /*default=*/"::mlir::offload::defaults::kSchedule",
           "Predict with load starts hoisted as far as time, in-flight bytes "
           "and the peak allow (as offload-schedule-copies does); false: "
           "loads start at their wait">,
    Option<"maxInflightBytes", "max-inflight-bytes", "::mlir::offload::ByteSize",
           /*default=*/"::mlir::offload::defaults::kMaxInflightBytes",
           "In-flight load bytes limit the prediction assumes">,
    Option<"coalesceBelow", "coalesce-below", "::mlir::offload::ByteSize",
           /*default=*/"::mlir::offload::defaults::kCoalesceBelow",
           "Predict copies smaller than this (a byte size; 0: none) issued "
           "at one point as one transfer, as offload-schedule-copies groups "
           "them">,
    Option<"recompute", "recompute", "bool",
           /*default=*/"::mlir::offload::defaults::kRecompute",
           "Plan recomputation with the copies: selected values that cheap "
           "forward ops compute from other saved values may be computed "
           "again in backward instead (offload.recompute)">,
    Option<"maxRecompute", "max-recompute", "double",
           /*default=*/"::mlir::offload::defaults::kMaxRecompute",
           "plan=hidden with recompute: largest predicted step time increase, "
           "as a fraction on top of max-slowdown, that recomputation and copies "
           "the link does not hide may add together">,
    Option<"recomputeMaxOps", "recompute-max-ops", "unsigned",
           /*default=*/"::mlir::offload::defaults::kRecomputeMaxOps",
           "Most forward ops one recomputation may repeat">,
  ]);
  let statistics = [
    Statistic<"numSimulations", "simulations",
              "Plans the searches simulated (whole-step simulations)">,
  ];
}

def OffloadReport : Pass<"offload-report", "ModuleOp"> {
  let summary = "Print what was offloaded, how many bytes, and where";
  let description = [{
    Prints (to standard error unless `output=` names a file, or `-` for
    standard output), for every training step, each saved result with its producer,
    type, bytes, the forward op it is offloaded after and the backward op it
    is loaded before (and where its load starts, if split), its predicted
    exposed copy time, or the reason it stays on the device; then totals:
    bytes moved each way, and the cost model's predicted peak device memory
    and step time without offload and with the plan in the IR. Does not
    change the IR.
  }];
  let options = !listconcat(CostModelOptions, [
    Option<"format", "format", "::mlir::offload::ReportFormat",
           /*default=*/"::mlir::offload::defaults::kReportFormat",
           "Report format: text or json",
           "::mlir::offload::reportFormatValues()">,
    Option<"output", "output", "std::string",
           /*default=*/"::mlir::offload::defaults::kReportFile",
           "Where the report goes: standard error by default (never mixed "
           "with the IR on standard output), '-' for standard output, or a "
           "file">,
    Option<"text", "text", "bool", /*default=*/"false",
           "Shorthand for format=text (so --offload-report=text parses)">,
    Option<"json", "json", "bool", /*default=*/"false",
           "Shorthand for format=json (so --offload-report=json parses)">,
  ]);
}

#endif // OFFLOAD_TRANSFORMS_PASSES_TD
