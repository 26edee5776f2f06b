//===- OffloadDialect.td - Activation offloading dialect ---*- tablegen -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_DIALECT_OFFLOAD_OFFLOADDIALECT_TD
#define OFFLOAD_DIALECT_OFFLOAD_OFFLOADDIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Offload_Dialect : Dialect {
  let name = "offload";
  let cppNamespace = "::mlir::offload";
  let summary = "Moving training activations between device and host memory";
  let description = [{
    The `offload` dialect expresses the movement of forward activations to
    pinned host memory and back. A value that lives in host memory is a ranked
    tensor whose encoding is `#offload.host`; only the ops of this dialect,
    terminators and calls may read such a value, so a compute op that would
    read host memory is rejected by the verifier.

    The dialect also owns the training-step contract: a forward function
    carries `offload.backward = @bwd` and `offload.num_outputs = N : i64`;
    its results past the first `N` are saved for backward and arrive, in the
    same order and with the same types, as the leading arguments of `@bwd`.
    The verifier checks this contract wherever the attributes appear.
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Names of the discardable attributes that make up the training-step
    /// contract and the pipeline's annotations.
    static constexpr ::llvm::StringLiteral kBackwardAttrName = "offload.backward";
    static constexpr ::llvm::StringLiteral kNumOutputsAttrName = "offload.num_outputs";
    static constexpr ::llvm::StringLiteral kKeepAttrName = "offload.keep";
    /// On a tensor argument of forward (a memref once bufferized): the
    /// caller keeps no reference to it
    /// once the step starts (an activation of the graph before, when a model
    /// is compiled in several graphs). The step's own uses then decide how
    /// long its memory lives, so it may be offloaded like an intermediate.
    /// Where the caller does keep it, an offload of it only costs the copy.
    static constexpr ::llvm::StringLiteral kDonatedAttrName = "offload.donated";
    static constexpr ::llvm::StringLiteral kSelectedAttrName = "offload.selected";
    static constexpr ::llvm::StringLiteral kKeptAttrName = "offload.kept";
    /// On a saved result of forward: backward computes it again
    /// (offload.recompute) instead of receiving it; offload-insert-recomputes
    /// carries the decision out.
    static constexpr ::llvm::StringLiteral kRecomputeAttrName = "offload.recompute";
    /// On a forward function: what offload-plan predicted for the plan it
    /// chose, `{peak_bytes = N : i64, step_seconds = X : f64}`, with the
    /// profile as it is; the report prints it next to its own prediction
    /// for the IR.
    static constexpr ::llvm::StringLiteral kPlannedAttrName = "offload.planned";
    /// On a view op in backward that the pipeline cloned from forward to
    /// rebuild a saved view from its loaded storage (one storage, one copy).
    static constexpr ::llvm::StringLiteral kRebuiltViewAttrName = "offload.rebuilt_view";
    /// A step compiled as one of several graphs (prefetch-lead): on a load
    /// start (or load group start) in backward, `prefetch`: the backward
    /// graph before this one starts the load, before this backward begins;
    /// on a backward op, `prefetch_issue`: before it this graph starts the
    /// next graph's prefetched loads. Unit attributes, set by
    /// offload-schedule-copies for the framework's copy ops; the lowering
    /// to offload_rt, which runs one step alone, ignores them.
    static constexpr ::llvm::StringLiteral kPrefetchAttrName = "offload.prefetch";
    static constexpr ::llvm::StringLiteral kPrefetchIssueAttrName = "offload.prefetch_issue";
    /// On an offload's wait at the end of forward: the copy completes while
    /// the next graph's forward runs; the compute stream does not wait for
    /// it, and the source goes back once it ends.
    static constexpr ::llvm::StringLiteral kDeferredAttrName = "offload.deferred";

  private:
    /// Registers the types of OffloadOps.td (in OffloadTypes.cpp).
    void registerTypes();

  public:
  }];
}

def Offload_DeviceMemRef : Type<
    And<[AnyRankedOrUnrankedMemRef.predicate,
         CPred<"::llvm::isa<::mlir::MemRefType>($_self)">,
         CPred<"!::mlir::offload::isHostMemRefType($_self)">]>,
    "device-resident ranked memref", "::mlir::MemRefType">;

def Offload_HostMemRef : Type<
    CPred<"::mlir::offload::isHostMemRefType($_self)">,
    "host-resident ranked memref (memory space #offload.host)",
    "::mlir::MemRefType">;

class Offload_Op<string mnemonic, list<Trait> traits = []>
    : Op<Offload_Dialect, mnemonic, traits>;

class Offload_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Offload_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

#endif // OFFLOAD_DIALECT_OFFLOAD_OFFLOADDIALECT_TD
