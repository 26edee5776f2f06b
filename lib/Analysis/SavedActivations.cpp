//===- SavedActivations.cpp - Which saved values to offload ---------------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "offload/Analysis/SavedActivations.h"
#include "offload/Analysis/Views.h"
#include "offload/Dialect/Offload/IR/OffloadDialect.h"
#include "offload/Dialect/Offload/IR/TrainingStep.h"
#include "offload/Interfaces/TracedOpInterface.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::offload;

std::optional<int64_t> mlir::offload::getTensorSizeInBytes(Type type) {
  if (!isa<RankedTensorType>(type))
    return std::nullopt;
  return getStorageBytes(type);
}

/// The framework op a traced op stands for, or the MLIR op name.
static StringRef getOpKind(Operation *op) {
  if (auto traced = dyn_cast<TracedOpInterface>(op))
    return traced.getTarget();
  return op->getName().getStringRef();
}

std::string mlir::offload::describeProducer(Value value) {
  if (auto arg = dyn_cast<BlockArgument>(value))
    return llvm::formatv("argument #{0}", arg.getArgNumber()).str();
  Operation *op = value.getDefiningOp();
  std::string text = getOpKind(op).str();
  if (auto traced = dyn_cast<TracedOpInterface>(op))
    if (std::optional<StringRef> node = traced.getNode())
      text += " \"" + node->str() + "\"";
  return text;
}

static bool isKeptByProducer(Value value) {
  Operation *op = value.getDefiningOp();
  return op && op->hasAttr(OffloadDialect::kKeepAttrName);
}

static bool isDenied(Value value, ArrayRef<std::string> denyOps) {
  Operation *op = value.getDefiningOp();
  if (!op)
    return false;
  StringRef kind = getOpKind(op);
  StringRef name = op->getName().getStringRef();
  return llvm::any_of(denyOps, [&](const std::string &denied) {
    return denied == kind || denied == name;
  });
}

/// Why `value` must stay on the device on its own account, or "".
static std::string getIndividualKeptReason(Value value, Value root,
                                           std::optional<int64_t> bytes,
                                           const SavedActivationOptions &options) {
  if (!isa<RankedTensorType>(value.getType()))
    return "not a ranked tensor";
  if (isHostTensorType(value.getType()))
    return "already in host memory";
  for (Value storage : {value, root})
    if (auto type = dyn_cast<RankedTensorType>(storage.getType());
        type && type.getEncoding()) {
      // The host copy's encoding is #offload.host: a sparse or other
      // layout would be dropped on the way.
      std::string text;
      llvm::raw_string_ostream(text) << type.getEncoding();
      return "encoding " + text + " has no host form";
    }
  if (isa<BlockArgument>(value) && !isDonatedArgument(value))
    return "function argument";
  if (isa<BlockArgument>(root) && !isDonatedArgument(root))
    return "view of a function argument";
  if (isKeptByProducer(value) || isKeptByProducer(root))
    return "opted out (offload.keep)";
  if (isDenied(value, options.denyOps) || isDenied(root, options.denyOps))
    return "producer in deny-ops";
  auto tensor = cast<RankedTensorType>(value.getType());
  if (!bytes && tensor.hasStaticShape() &&
      getElementStorageBytes(tensor.getElementType()))
    return "size does not fit in 64 bits";
  if (!bytes)
    return options.minBytes > 0 ? "size unknown (dynamic shape)" : "";
  if (*bytes < options.minBytes)
    return llvm::formatv("below min-bytes ({0} < {1})", *bytes,
                         options.minBytes);
  return "";
}

SmallVector<SavedActivation>
mlir::offload::findSavedActivations(const TrainingStep &step,
                                    const SavedActivationOptions &options) {
  Operation *ret = step.getForwardReturn();
  unsigned numOutputs = step.getNumOutputs();

  SmallVector<SavedActivation> result;
  SmallVector<Value> roots;
  SmallVector<std::string> retypeBlockers = step.getRetypeBlockers();
  for (unsigned i = 0, e = step.getNumSaved(); i < e; ++i) {
    Value value = step.getSavedValue(i);
    roots.push_back(getStorageRoot(value));
    SavedActivation saved{i, value, getTensorSizeInBytes(value.getType())};
    saved.keptReason =
        getIndividualKeptReason(value, roots.back(), saved.bytes, options);
    if (saved.keptReason.empty())
      saved.keptReason = std::move(retypeBlockers[i]);
    result.push_back(std::move(saved));
  }

  // Returned values sharing a storage root free it only together: a forward
  // output holding the root keeps it alive, and so does any saved value
  // sharing it that stays for its own reason.
  llvm::DenseMap<Value, unsigned> outputHolding;
  for (unsigned i = 0; i < numOutputs; ++i)
    outputHolding.try_emplace(getStorageRoot(ret->getOperand(i)), i);
  llvm::DenseMap<Value, unsigned> keptHolding;
  for (SavedActivation &saved : result)
    if (!saved.keptReason.empty())
      keptHolding.try_emplace(roots[saved.savedIndex],
                              step.getSavedResultIndex(saved.savedIndex));

  for (SavedActivation &saved : result) {
    if (saved.keptReason.empty()) {
      Value root = roots[saved.savedIndex];
      if (auto it = outputHolding.find(root); it != outputHolding.end())
        saved.keptReason = llvm::formatv(
            "shares storage with forward output #{0}", it->second);
      else if (auto it = keptHolding.find(root); it != keptHolding.end())
        saved.keptReason = llvm::formatv(
            "shares storage with kept saved result #{0}", it->second);
    }
    saved.selected = saved.keptReason.empty();
  }
  return result;
}
