//===- Passes.td - offload-mlir passes ---------------------*- tablegen -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_TRANSFORMS_PASSES_TD
#define OFFLOAD_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

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
    (a forward output or another saved result) shares its storage.
  }];
  let options = [
    Option<"minBytes", "min-bytes", "int64_t", /*default=*/"1024",
           "Values smaller than this stay on the device; values of unknown "
           "(dynamic) size stay unless this is 0">,
    ListOption<"denyOps", "deny-ops", "std::string",
               "Producers (op names or trace targets) whose results stay on "
               "the device">,
  ];
  let dependentDialects = ["::mlir::offload::OffloadDialect"];
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
  }];
  let dependentDialects = ["::mlir::offload::OffloadDialect"];
}

def ReorderBackward : Pass<"offload-reorder-backward", "ModuleOp"> {
  let summary = "Move views of saved values next to their first real consumer";
  let description = [{
    In each backward function, sinks the views of saved values (ops
    implementing `ViewLikeOpInterface`, which covers `trace.view` and tensor
    reshapes, slices and casts) down to just before their first real
    consumer, so the load of the saved value can sit there too. The result
    is a stable topological order: every other op keeps its relative order,
    dominance holds, and nothing moves across an op that writes or frees
    memory or has unknown effects.
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

def OffloadReport : Pass<"offload-report", "ModuleOp"> {
  let summary = "Print what was offloaded, how many bytes, and where";
  let description = [{
    Prints, for every training step, each saved result with its producer,
    type, bytes, the forward op it is offloaded after and the backward op it
    is loaded before, or the reason it stays on the device; then totals.
    Does not change the IR.
  }];
  let options = [
    Option<"format", "format", "std::string", /*default=*/"\"text\"",
           "Report format: text or json">,
    Option<"output", "output", "std::string", /*default=*/"\"-\"",
           "File to write the report to; '-' is standard output">,
  ];
}

#endif // OFFLOAD_TRANSFORMS_PASSES_TD
