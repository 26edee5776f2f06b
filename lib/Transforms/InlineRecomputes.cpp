//===- InlineRecomputes.cpp - Replace offload.recompute by its body -------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "offload/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace offload {
#define GEN_PASS_DEF_INLINERECOMPUTES
#include "offload/Transforms/Passes.h.inc"
} // namespace offload
} // namespace mlir

using namespace mlir;
using namespace mlir::offload;

namespace {
struct InlineRecomputes
    : public offload::impl::InlineRecomputesBase<InlineRecomputes> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<RecomputeOp> recomputes;
    getOperation()->walk([&](RecomputeOp op) { recomputes.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (RecomputeOp op : recomputes) {
      Block &body = op.getBody().front();
      Value yielded = cast<YieldOp>(body.getTerminator()).getValue();
      rewriter.eraseOp(body.getTerminator());
      rewriter.inlineBlockBefore(&body, op, op.getInputs());
      rewriter.replaceOp(op, yielded);
    }
  }
};
} // namespace
