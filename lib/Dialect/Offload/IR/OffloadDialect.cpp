//===- OffloadDialect.cpp - offload dialect -------------------------------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "offload/Dialect/Offload/IR/OffloadDialect.h"
#include "offload/Dialect/Offload/IR/TrainingStep.h"

#include "mlir/Conversion/ConvertToLLVM/ToLLVMInterface.h"
#include "mlir/Dialect/Bufferization/IR/BufferDeallocationOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Transforms/InliningUtils.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::offload;

#include "offload/Dialect/Offload/IR/OffloadOpsDialect.cpp.inc"

#include "offload/Dialect/Offload/IR/OffloadEnums.cpp.inc"

MLIR_DEFINE_EXPLICIT_TYPE_ID(::mlir::offload::CopyResource)
MLIR_DEFINE_EXPLICIT_TYPE_ID(::mlir::offload::PlacementResource)

#define GET_ATTRDEF_CLASSES
#include "offload/Dialect/Offload/IR/OffloadAttrs.cpp.inc"

namespace {
/// Inlining a function keeps its placements (`offload.placement`): they
/// record a plan and do nothing, so they never stop the inliner.
/// offload-schedule-copies drops the copies that land outside a training
/// step, with a remark. The copy ops are not inlined.
struct OffloadInlinerInterface : public DialectInlinerInterface {
  using DialectInlinerInterface::DialectInlinerInterface;

  bool isLegalToInline(Operation *op, Region *, bool,
                       IRMapping &) const final {
    return isa<PlacementOp>(op);
  }
};
} // namespace

void OffloadDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "offload/Dialect/Offload/IR/OffloadOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "offload/Dialect/Offload/IR/OffloadBufferOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "offload/Dialect/Offload/IR/OffloadAttrs.cpp.inc"
      >();
  registerTypes();
  addInterfaces<OffloadInlinerInterface>();

  // The models of upstream interfaces live with the code that needs them
  // (OffloadDialectTransforms: bufferization of the ops and of the future
  // types, and buffer deallocation;
  // OffloadToLLVM: convert-to-llvm), so that the dialect does not link
  // them. Promising them makes a tool that loads the dialect without
  // registering them fail with a message naming the interface, instead of
  // bufferizing, deallocating or lowering the ops as unknown ones (MLIR
  // checks promises in builds with assertions).
  declarePromisedInterfaces<bufferization::BufferizableOpInterface,
                            OffloadToCpuOp, LoadToGpuOp, OffloadStartOp,
                            LoadStartOp, OffloadGroupStartOp, LoadGroupStartOp,
                            WaitOp>();
  declarePromisedInterfaces<bufferization::BufferDeallocationOpInterface,
                            OffloadBufferOp, OffloadStartOp,
                            OffloadGroupStartOp>();
  declarePromisedInterface<bufferization::TensorLikeType, FutureType>();
  declarePromisedInterface<bufferization::BufferLikeType, BufferFutureType>();
  declarePromisedInterface<ConvertToLLVMPatternInterface, OffloadDialect>();
}

//===----------------------------------------------------------------------===//
// Host tensor types
//===----------------------------------------------------------------------===//

bool mlir::offload::isHostTensorType(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa_and_nonnull<HostMemoryAttr>(tensor.getEncoding());
}

RankedTensorType mlir::offload::getHostTensorType(RankedTensorType type) {
  return RankedTensorType::get(type.getShape(), type.getElementType(),
                               HostMemoryAttr::get(type.getContext()));
}

RankedTensorType mlir::offload::getDeviceTensorType(RankedTensorType type) {
  return RankedTensorType::get(type.getShape(), type.getElementType());
}

bool mlir::offload::isHostMemRefType(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  return memref && isa_and_nonnull<HostMemoryAttr>(memref.getMemorySpace());
}

bool mlir::offload::isContiguousMemRef(MemRefType type) {
  return type.getLayout().isIdentity() ||
         type.areTrailingDimsContiguous(type.getRank());
}

//===----------------------------------------------------------------------===//
// Sizes
//===----------------------------------------------------------------------===//

std::optional<int64_t> mlir::offload::getElementStorageBytes(Type element,
                                                             unsigned indexBits) {
  if (auto complex = dyn_cast<ComplexType>(element)) {
    std::optional<int64_t> part =
        getElementStorageBytes(complex.getElementType(), indexBits);
    return part ? std::optional<int64_t>(2 * *part) : std::nullopt;
  }
  unsigned bits;
  if (element.isIndex())
    bits = indexBits;
  else if (element.isIntOrFloat())
    bits = element.getIntOrFloatBitWidth();
  else
    return std::nullopt;
  int64_t bytes = llvm::divideCeil(bits, 8);
  if (!llvm::isPowerOf2_64(bytes) || bytes > 16)
    return std::nullopt;
  return bytes;
}

std::optional<int64_t> mlir::offload::getStorageBytes(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped || !shaped.hasStaticShape())
    return std::nullopt;
  std::optional<int64_t> element =
      getElementStorageBytes(shaped.getElementType());
  if (!element)
    return std::nullopt;
  int64_t bytes = *element;
  for (int64_t size : shaped.getShape())
    if (llvm::MulOverflow(bytes, size, bytes))
      return std::nullopt;
  return bytes;
}

//===----------------------------------------------------------------------===//
// Placements
//===----------------------------------------------------------------------===//

void mlir::offload::erasePlacements(Operation *root) {
  root->walk([](PlacementOp placement) { placement->erase(); });
}

//===----------------------------------------------------------------------===//
// Discardable attributes
//===----------------------------------------------------------------------===//

LogicalResult OffloadDialect::verifyOperationAttribute(Operation *op,
                                                       NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == kPrefetchAttrName &&
      !isa<LoadStartOp, LoadGroupStartOp>(op))
    return op->emitOpError()
           << "'" << name << "' is only valid on a load start";
  if (name == kDeferredAttrName && !isa<WaitOp>(op))
    return op->emitOpError()
           << "'" << name << "' is only valid on an offload's wait";
  if (name == kKeepAttrName || name == kRebuiltViewAttrName ||
      name == kPrefetchAttrName || name == kPrefetchIssueAttrName ||
      name == kDeferredAttrName) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitOpError() << "expects '" << name << "' to be a unit attribute";
    return success();
  }
  if (name == kPlannedAttrName) {
    auto dict = dyn_cast<DictionaryAttr>(attr.getValue());
    // The step as it came, where the plan recomputes: both or neither.
    bool unplanned = dict && dict.size() == 4 &&
                     dict.getAs<IntegerAttr>("unplanned_peak_bytes") &&
                     dict.getAs<FloatAttr>("unplanned_step_seconds");
    if (!dict || (dict.size() != 2 && !unplanned) ||
        !dict.getAs<IntegerAttr>("peak_bytes") ||
        !dict.getAs<FloatAttr>("step_seconds"))
      return op->emitOpError()
             << "expects '" << name
             << "' to be {peak_bytes = <integer>, step_seconds = <float>}, "
                "with unplanned_peak_bytes = <integer> and "
                "unplanned_step_seconds = <float> where the plan recomputes";
    if (!op->hasAttr(kBackwardAttrName))
      return op->emitOpError()
             << "has '" << name << "' but no '" << kBackwardAttrName << "'";
    return success();
  }
  if (name == kNumOutputsAttrName) {
    // Its value is checked with the rest of the contract, under
    // `offload.backward`.
    if (!op->hasAttr(kBackwardAttrName))
      return op->emitOpError()
             << "has '" << name << "' but no '" << kBackwardAttrName << "'";
    return success();
  }
  if (name == kBackwardAttrName) {
    auto forward = dyn_cast<FunctionOpInterface>(op);
    if (!forward)
      return op->emitOpError() << "'" << name << "' is only valid on functions";
    // A declaration has no body to check against the contract yet.
    if (failed(TrainingStep::verifyAttributes(forward)) ||
        (!forward.isExternal() &&
         failed(verifyHostValueUses(forward.getFunctionBody()))))
      return failure();
    // What needs backward is checked with the module's symbol uses
    // (verifySymbolUses, registerTrainingStepSymbolUseModels) where the
    // function op has them; here for any other function op.
    if (isa<SymbolUserOpInterface>(op))
      return success();
    SymbolTableCollection tables;
    return verifyTrainingStepSymbolUses(forward, tables);
  }
  return op->emitOpError() << "unknown offload attribute '" << name << "'";
}

LogicalResult OffloadDialect::verifyRegionArgAttribute(Operation *op,
                                                       unsigned regionIndex,
                                                       unsigned argIndex,
                                                       NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name != kDonatedAttrName)
    return op->emitOpError() << "unknown offload argument attribute '" << name
                             << "'";
  if (!isa<UnitAttr>(attr.getValue()))
    return op->emitOpError() << "expects '" << name << "' to be a unit attribute";
  auto function = dyn_cast<FunctionOpInterface>(op);
  if (!function || regionIndex != 0 ||
      argIndex >= function.getArgumentTypes().size() ||
      !isa<RankedTensorType, MemRefType>(function.getArgumentTypes()[argIndex]))
    return op->emitOpError() << "expects '" << name
                             << "' on a ranked tensor or memref argument of a "
                                "function";
  return success();
}

LogicalResult OffloadDialect::verifyRegionResultAttribute(Operation *op,
                                                          unsigned regionIndex,
                                                          unsigned resultIndex,
                                                          NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == kSelectedAttrName || name == kRecomputeAttrName) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitOpError() << "expects '" << name << "' to be a unit attribute";
    return success();
  }
  if (name == kKeptAttrName) {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitOpError() << "expects '" << name << "' to be a string";
    return success();
  }
  return op->emitOpError() << "unknown offload result attribute '" << name
                           << "'";
}
