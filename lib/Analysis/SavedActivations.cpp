//===- SavedActivations.cpp - Which saved values to offload ---------------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "offload/Analysis/SavedActivations.h"
#include "offload/Analysis/Views.h"
#include "offload/Dialect/Offload/IR/OffloadDialect.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::offload;

std::optional<int64_t> mlir::offload::getTensorSizeInBytes(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return std::nullopt;
  Type element = tensor.getElementType();
  int64_t bits;
  if (element.isIntOrFloat())
    bits = element.getIntOrFloatBitWidth();
  else if (auto complex = dyn_cast<ComplexType>(element);
           complex && complex.getElementType().isIntOrFloat())
    bits = 2 * complex.getElementType().getIntOrFloatBitWidth();
  else if (element.isIndex())
    bits = 64;
  else
    return std::nullopt;
  return (tensor.getNumElements() * bits + 7) / 8;
}

/// The framework op a traced op stands for (its `target` attribute, as the
/// trace dialect spells it), or the MLIR op name.
static StringRef getOpKind(Operation *op) {
  if (auto target = op->getAttrOfType<StringAttr>("target"))
    return target.getValue();
  return op->getName().getStringRef();
}

std::string mlir::offload::describeProducer(Value value) {
  if (auto arg = dyn_cast<BlockArgument>(value))
    return llvm::formatv("argument #{0}", arg.getArgNumber()).str();
  Operation *op = value.getDefiningOp();
  std::string text = getOpKind(op).str();
  if (auto node = op->getAttrOfType<StringAttr>("node"))
    text += " \"" + node.getValue().str() + "\"";
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

SmallVector<SavedActivation>
mlir::offload::findSavedActivations(const TrainingStep &step,
                                    const SavedActivationOptions &options) {
  Operation *ret = step.getForwardReturn();
  unsigned numOutputs = step.getNumOutputs();

  // Every returned value keeps its storage alive. Count, per storage root,
  // which returned operands hold it, to see whether offloading one frees it.
  llvm::DenseMap<Value, SmallVector<unsigned, 2>> holders;
  for (OpOperand &operand : ret->getOpOperands())
    holders[getStorageRoot(operand.get())].push_back(
        operand.getOperandNumber());

  SmallVector<SavedActivation> result;
  for (unsigned i = 0, e = step.getNumSaved(); i < e; ++i) {
    SavedActivation saved{i, step.getSavedValue(i),
                          getTensorSizeInBytes(step.getSavedValue(i).getType())};
    Value value = saved.value;
    Value root = getStorageRoot(value);
    auto keep = [&](const Twine &reason) { saved.keptReason = reason.str(); };

    if (!isa<RankedTensorType>(value.getType()))
      keep("not a ranked tensor");
    else if (isHostTensorType(value.getType()))
      keep("already in host memory");
    else if (isa<BlockArgument>(value))
      keep("function argument");
    else if (isa<BlockArgument>(root))
      keep("view of a function argument");
    else if (isKeptByProducer(value) || isKeptByProducer(root))
      keep("opted out (offload.keep)");
    else if (isDenied(value, options.denyOps) ||
             isDenied(root, options.denyOps))
      keep("producer in deny-ops");
    else if (ArrayRef<unsigned> owners = holders[root]; owners.size() > 1) {
      unsigned other = owners.front() == step.getSavedResultIndex(i)
                           ? owners[1]
                           : owners.front();
      if (other < numOutputs)
        keep(llvm::formatv("shares storage with forward output #{0}", other));
      else
        keep(llvm::formatv("shares storage with saved result #{0}", other));
    } else if (!saved.bytes) {
      if (options.minBytes > 0)
        keep("size unknown (dynamic shape)");
    } else if (*saved.bytes < options.minBytes) {
      keep(llvm::formatv("below min-bytes ({0} < {1})", *saved.bytes,
                         options.minBytes));
    }
    saved.selected = saved.keptReason.empty();
    result.push_back(std::move(saved));
  }
  return result;
}
