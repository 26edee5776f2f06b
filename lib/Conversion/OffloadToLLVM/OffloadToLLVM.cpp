//===- OffloadToLLVM.cpp - Lowering the copies to offload_rt --------------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// Guarantees: after the pass no offload op and no `#offload.host` memory space
// is left; every copy is a call of the offload_rt MLIR wrappers with the
// compute stream as argument, and a load's device buffer is used only after
// the call that makes the compute stream wait for it. An offload with
// `release_source` hands its source's allocation to the runtime right after
// starting the copy, which frees it once the copy is done; no other code
// frees it.
//
//===----------------------------------------------------------------------===//

#include "offload/Conversion/OffloadToLLVM/OffloadToLLVM.h"
#include "offload/Conversion/Passes.h"
#include "offload/Dialect/Offload/IR/OffloadDialect.h"

#include "mlir/Conversion/ConvertToLLVM/ToLLVMInterface.h"
#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/MemRefBuilder.h"
#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/LLVMIR/FunctionCallUtils.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir {
namespace offload {
#define GEN_PASS_DEF_CONVERTOFFLOADTOLLVM
#include "offload/Conversion/Passes.h.inc"
} // namespace offload
} // namespace mlir

using namespace mlir;
using namespace mlir::offload;

namespace {
/// The offload_rt entry points the lowered code calls; declared once per
/// module on first use (like GPUToLLVM's FunctionCallBuilder).
struct RuntimeFunction {
  StringRef name;
  enum Kind { Ptr, I64, Void } result;
  SmallVector<Kind, 4> args;
};

const RuntimeFunction kComputeStream = {"offload_rt_mlir_compute_stream",
                                        RuntimeFunction::Ptr,
                                        {}};
const RuntimeFunction kOffloadStart = {
    "offload_rt_mlir_offload_start",
    RuntimeFunction::Ptr,
    {RuntimeFunction::Ptr, RuntimeFunction::I64, RuntimeFunction::Ptr}};
const RuntimeFunction kHostData = {"offload_rt_mlir_host_data",
                                   RuntimeFunction::Ptr,
                                   {RuntimeFunction::Ptr}};
const RuntimeFunction kLoadStart = {
    "offload_rt_mlir_load_start",
    RuntimeFunction::Ptr,
    {RuntimeFunction::Ptr, RuntimeFunction::I64, RuntimeFunction::Ptr}};
const RuntimeFunction kWait = {"offload_rt_mlir_wait",
                               RuntimeFunction::Ptr,
                               {RuntimeFunction::Ptr, RuntimeFunction::Ptr}};
const RuntimeFunction kReleaseSource = {
    "offload_rt_mlir_release_source",
    RuntimeFunction::Void,
    {RuntimeFunction::Ptr, RuntimeFunction::Ptr, RuntimeFunction::Ptr}};
const RuntimeFunction kFreeHost = {"offload_rt_mlir_free_host",
                                   RuntimeFunction::Void,
                                   {RuntimeFunction::Ptr}};
const RuntimeFunction kOffloadGroupStart = {
    "offload_rt_mlir_offload_group_start",
    RuntimeFunction::Void,
    {RuntimeFunction::I64, RuntimeFunction::Ptr, RuntimeFunction::Ptr,
     RuntimeFunction::Ptr, RuntimeFunction::Ptr}};
const RuntimeFunction kLoadGroupStart = {
    "offload_rt_mlir_load_group_start",
    RuntimeFunction::Void,
    {RuntimeFunction::I64, RuntimeFunction::Ptr, RuntimeFunction::Ptr,
     RuntimeFunction::Ptr, RuntimeFunction::Ptr}};

/// The LLVM type of a runtime function's argument or result.
Type getRuntimeType(MLIRContext *ctx, RuntimeFunction::Kind kind) {
  switch (kind) {
  case RuntimeFunction::Ptr:
    return LLVM::LLVMPointerType::get(ctx);
  case RuntimeFunction::I64:
    return IntegerType::get(ctx, 64);
  case RuntimeFunction::Void:
    return LLVM::LLVMVoidType::get(ctx);
  }
  llvm_unreachable("unknown runtime type");
}

LLVM::LLVMFunctionType getRuntimeFunctionType(MLIRContext *ctx,
                                              const RuntimeFunction &fn) {
  SmallVector<Type> argTypes = llvm::map_to_vector(
      fn.args, [&](RuntimeFunction::Kind kind) {
        return getRuntimeType(ctx, kind);
      });
  return LLVM::LLVMFunctionType::get(getRuntimeType(ctx, fn.result),
                                     argTypes);
}

const RuntimeFunction *const kRuntimeFunctions[] = {
    &kComputeStream, &kOffloadStart,      &kHostData,
    &kLoadStart,     &kWait,              &kReleaseSource,
    &kFreeHost,      &kOffloadGroupStart, &kLoadGroupStart};

/// Checks, before a pattern rewrites `op`, that the runtime functions it
/// may call can be declared in the enclosing module: the module exists, and
/// each name is free or already an `llvm.func` of the runtime's type. Emits
/// the error at `op` otherwise (with a note at the clashing symbol).
LogicalResult checkRuntimeDeclarations(Operation *op) {
  auto module = op->getParentOfType<ModuleOp>();
  if (!module)
    return op->emitError() << "cannot lower '" << op->getName()
                           << "' outside a module: the runtime functions it "
                              "calls are declared in the module";
  for (const RuntimeFunction *fn : kRuntimeFunctions) {
    Operation *existing = SymbolTable::lookupSymbolIn(module, fn->name);
    if (!existing)
      continue;
    LLVM::LLVMFunctionType expected =
        getRuntimeFunctionType(op->getContext(), *fn);
    auto func = dyn_cast<LLVM::LLVMFuncOp>(existing);
    if (func && func.getFunctionType() == expected)
      continue;
    InFlightDiagnostic diag =
        op->emitError() << "cannot lower '" << op->getName()
                        << "': the runtime function '" << fn->name
                        << "' is already declared as something else; the "
                           "lowering calls it as an 'llvm.func' of type "
                        << expected;
    diag.attachNote(existing->getLoc()) << "declared here";
    return diag;
  }
  return success();
}

/// Calls `fn`; checkRuntimeDeclarations made sure it can be declared.
Value callRuntime(ConversionPatternRewriter &rewriter, Operation *op,
                  const RuntimeFunction &fn, ValueRange args) {
  LLVM::LLVMFunctionType type = getRuntimeFunctionType(op->getContext(), fn);
  auto module = op->getParentOfType<ModuleOp>();
  FailureOr<LLVM::LLVMFuncOp> func =
      LLVM::lookupOrCreateFn(rewriter, module, fn.name, type.getParams(),
                             type.getReturnType());
  if (failed(func))
    llvm::report_fatal_error("offload_rt function declared with another "
                             "type after checkRuntimeDeclarations");
  auto call = LLVM::CallOp::create(rewriter, op->getLoc(), *func, args);
  return fn.result == RuntimeFunction::Void ? Value() : call.getResult();
}

/// The buffer type an operand or result of a copy stands for: a memref, or
/// the memref of a future; null on tensors.
MemRefType getBufferType(Type type) {
  if (auto future = dyn_cast<FutureLikeType>(type))
    type = future.getValueType();
  return dyn_cast<MemRefType>(type);
}

/// True for the memory spaces the lowering handles: none, `0`, or
/// `#offload.host` (which becomes 0). offload_rt takes and returns generic
/// pointers, so a buffer in another address space would need casts the
/// lowering does not make.
bool hasLowerableMemorySpace(MemRefType type) {
  Attribute space = type.getMemorySpace();
  if (auto integer = dyn_cast_or_null<IntegerAttr>(space))
    return integer.getValue().isZero();
  return !space || isa<HostMemoryAttr>(space);
}

/// Checks that `op`, an offload op, can be lowered; emits the error at the op
/// otherwise.
LogicalResult checkLowerable(Operation *op) {
  bool onTensors = llvm::any_of(op->getResultTypes(), [](Type type) {
    if (auto future = dyn_cast<FutureLikeType>(type))
      type = future.getValueType();
    return isa<TensorType>(type);
  });
  if (onTensors)
    return op->emitError() << "cannot lower '" << op->getName()
                           << "' on tensors; run one-shot-bufferize first";
  // The runtime copies `bytes` from the source's start: only a contiguous
  // source is copied right (the verifier checks it too; this also guards
  // other users of the patterns, as isConvertibleAndHasIdentityMaps does
  // upstream).
  if (isa<OffloadBufferOp, OffloadStartOp, OffloadGroupStartOp>(op))
    for (Type type : op->getOperandTypes())
      if (auto source = dyn_cast<MemRefType>(type);
          source && !isContiguousMemRef(source))
        return op->emitError() << "cannot lower '" << op->getName()
                               << "': source " << source
                               << " is not contiguous";
  for (Type type : llvm::concat<const Type>(op->getOperandTypes(),
                                            op->getResultTypes())) {
    MemRefType buffer = getBufferType(type);
    if (buffer && failed(verifyHostBufferLayout(op, buffer)))
      return failure();
    if (buffer && !getElementStorageBytes(buffer.getElementType()))
      return op->emitError()
             << "cannot lower '" << op->getName() << "': the storage size of "
             << buffer.getElementType() << " elements is not known";
    if (buffer && !hasLowerableMemorySpace(buffer))
      return op->emitError()
             << "cannot lower '" << op->getName() << "': memory space "
             << buffer.getMemorySpace() << " of " << buffer
             << " is not address space 0 (offload_rt takes and returns "
                "generic pointers); map it to 0 first";
  }
  return success();
}

/// The buffer a copy produces: its result, or the value of its future.
Type getCopyResultType(Operation *op) {
  Type type = op->getResult(0).getType();
  if (auto future = dyn_cast<FutureLikeType>(type))
    return future.getValueType();
  return type;
}

/// What lowering one copy into new memory needs of its source: the new
/// descriptor's sizes and strides (those of the source, identity strides)
/// and the bytes to copy.
struct CopyGeometry {
  SmallVector<Value> sizes, strides;
  Value bytes;
};

/// The patterns of the copies into new memory (single and grouped).
template <typename OpTy>
class CopyPattern : public ConvertOpToLLVMPattern<OpTy> {
public:
  using ConvertOpToLLVMPattern<OpTy>::ConvertOpToLLVMPattern;

protected:
  /// The geometry of a copy from `source` (of `sourceType`) into a new
  /// buffer of `resultType`; fails (as a match failure on `op`) where the
  /// types do not convert or the element size is unknown.
  FailureOr<CopyGeometry> getCopyGeometry(Operation *op, MemRefType sourceType,
                                          MemRefType resultType,
                                          MemRefDescriptor source,
                                          ConversionPatternRewriter &rewriter) const {
    if (!this->getTypeConverter()->convertType(sourceType) ||
        !this->getTypeConverter()->convertType(resultType))
      return rewriter.notifyMatchFailure(op, "memref type not convertible");
    Location loc = op->getLoc();
    SmallVector<Value> dynamicSizes;
    for (auto [i, size] : llvm::enumerate(sourceType.getShape()))
      if (ShapedType::isDynamic(size))
        dynamicSizes.push_back(source.size(rewriter, loc, i));
    // The copy's size comes from the one definition of element sizes, which
    // the analyses and the report use too (checkLowerable refused the element
    // types it does not know).
    std::optional<int64_t> elementBytes = getElementStorageBytes(
        sourceType.getElementType(),
        this->getTypeConverter()->getIndexTypeBitwidth());
    if (!elementBytes)
      return rewriter.notifyMatchFailure(op, "element size unknown");
    CopyGeometry geometry;
    Value numElements;
    this->getMemRefDescriptorSizes(loc, sourceType, dynamicSizes, rewriter,
                                   geometry.sizes, geometry.strides,
                                   numElements, /*sizeInBytes=*/false);
    Type indexType = this->getIndexType();
    geometry.bytes = LLVM::MulOp::create(
        rewriter, loc, indexType, numElements,
        this->createIndexAttrConstant(rewriter, loc, indexType, *elementBytes));
    return geometry;
  }
};

/// A copy into new memory: reads the source descriptor's geometry, lets the
/// subclass emit the runtime calls, and builds the new descriptor (same
/// sizes, identity strides) from the pointers they return.
template <typename OpTy>
class CopyLowering : public CopyPattern<OpTy> {
public:
  using CopyPattern<OpTy>::CopyPattern;
  using OpAdaptor = typename OpTy::Adaptor;

  LogicalResult
  matchAndRewrite(OpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const final {
    if (failed(checkLowerable(op)) || failed(checkRuntimeDeclarations(op)))
      return failure();
    auto sourceType = cast<MemRefType>(op.getSource().getType());
    auto resultType = cast<MemRefType>(getCopyResultType(op));
    MemRefDescriptor source(adaptor.getSource());
    FailureOr<CopyGeometry> geometry =
        this->getCopyGeometry(op, sourceType, resultType, source, rewriter);
    if (failed(geometry))
      return failure();
    auto [allocated, aligned] =
        emitCopy(op, source, sourceType, geometry->bytes, rewriter);
    Value result = this->createMemRefDescriptor(
        op.getLoc(), resultType, allocated, aligned, geometry->sizes,
        geometry->strides, rewriter);
    rewriter.replaceOp(op, result);
    return success();
  }

protected:
  /// Emits the copy's runtime calls; returns the allocated and aligned
  /// pointers of the new descriptor.
  virtual std::pair<Value, Value>
  emitCopy(OpTy op, MemRefDescriptor source, MemRefType sourceType,
           Value bytes, ConversionPatternRewriter &rewriter) const = 0;
};

/// offload_buffer, and offload_start on a buffer: the D2H copy starts behind
/// the compute stream's work; the host buffer (or its future, which is the
/// same descriptor) holds the handle and the pinned data.
template <typename OpTy>
class OffloadLowering : public CopyLowering<OpTy> {
public:
  using CopyLowering<OpTy>::CopyLowering;

protected:
  std::pair<Value, Value>
  emitCopy(OpTy op, MemRefDescriptor source, MemRefType sourceType,
           Value bytes, ConversionPatternRewriter &rewriter) const override {
    Value pointer = source.bufferPtr(rewriter, op.getLoc(),
                                     *this->getTypeConverter(), sourceType);
    Value stream = callRuntime(rewriter, op, kComputeStream, {});
    Value handle =
        callRuntime(rewriter, op, kOffloadStart, {pointer, bytes, stream});
    // A consumed source the op owns goes to the runtime, which frees its
    // allocation behind the copy.
    if (op.getReleaseSource())
      callRuntime(rewriter, op, kReleaseSource,
                  {handle, source.allocatedPtr(rewriter, op.getLoc()),
                   pointer});
    Value data = callRuntime(rewriter, op, kHostData, {handle});
    return {handle, data};
  }
};

/// load_buffer, and load_start on a buffer: the H2D copy starts on the copy
/// stream. load_buffer waits at once; a load future is a descriptor whose
/// pointers hold the runtime's token until its wait.
template <typename OpTy>
class LoadLowering : public CopyLowering<OpTy> {
public:
  using CopyLowering<OpTy>::CopyLowering;

protected:
  std::pair<Value, Value>
  emitCopy(OpTy op, MemRefDescriptor source, MemRefType sourceType,
           Value bytes, ConversionPatternRewriter &rewriter) const override {
    Value handle = source.allocatedPtr(rewriter, op.getLoc());
    Value stream = callRuntime(rewriter, op, kComputeStream, {});
    Value token =
        callRuntime(rewriter, op, kLoadStart, {handle, bytes, stream});
    if (!isa<LoadBufferOp>(op))
      return {token, token};
    Value buffer = callRuntime(rewriter, op, kWait, {token, stream});
    return {buffer, buffer};
  }
};

/// offload_group_start and load_group_start on buffers: one runtime call
/// for the group, given arrays (on the stack) of the members' pointers and
/// byte counts, which fills an array of their handles (offloads) or tokens
/// (loads); each member then becomes what a single start of it becomes.
template <typename GroupOp>
class GroupLowering : public CopyPattern<GroupOp> {
public:
  using CopyPattern<GroupOp>::CopyPattern;
  using OpAdaptor = typename GroupOp::Adaptor;
  static constexpr bool kOffload = std::is_same_v<GroupOp, OffloadGroupStartOp>;

  LogicalResult
  matchAndRewrite(GroupOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const final {
    if (failed(checkLowerable(op)) || failed(checkRuntimeDeclarations(op)))
      return failure();
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    auto ptrType = LLVM::LLVMPointerType::get(ctx);
    Type i64 = rewriter.getI64Type();
    Type indexType = this->getIndexType();
    struct Member {
      MemRefDescriptor source;
      MemRefType resultType;
      Value pointer;
      CopyGeometry geometry;
    };
    SmallVector<Member> members;
    for (auto [source, converted, future] : llvm::zip_equal(
             op.getSources(), adaptor.getSources(), op.getFutures())) {
      auto sourceType = cast<MemRefType>(source.getType());
      auto resultType = cast<MemRefType>(
          cast<FutureLikeType>(future.getType()).getValueType());
      MemRefDescriptor descriptor(converted);
      FailureOr<CopyGeometry> geometry = this->getCopyGeometry(
          op, sourceType, resultType, descriptor, rewriter);
      if (failed(geometry))
        return failure();
      // An offload copies from the source's data; a load from the host
      // buffer's handle (its allocated pointer).
      Value pointer =
          kOffload ? descriptor.bufferPtr(rewriter, loc,
                                          *this->getTypeConverter(),
                                          sourceType)
                   : descriptor.allocatedPtr(rewriter, loc);
      members.push_back(
          {descriptor, resultType, pointer, std::move(*geometry)});
    }

    int64_t n = members.size();
    Value count = LLVM::ConstantOp::create(rewriter, loc, i64,
                                           rewriter.getI64IntegerAttr(n));
    // The arrays live only until the call has filled the outputs: the stack
    // is restored after they are read, so a group in a loop body does not
    // grow the stack with every iteration.
    Value stackPointer = LLVM::StackSaveOp::create(rewriter, loc, ptrType);
    auto stackArray = [&](Type element) -> Value {
      return LLVM::AllocaOp::create(rewriter, loc, ptrType, element, count);
    };
    Value pointers = stackArray(ptrType);
    Value sizes = stackArray(i64);
    Value outputs = stackArray(ptrType);
    auto slot = [&](Value array, Type element, int64_t i) {
      return LLVM::GEPOp::create(rewriter, loc, ptrType, element, array,
                                 ArrayRef<LLVM::GEPArg>{int32_t(i)});
    };
    for (auto [i, member] : llvm::enumerate(members)) {
      LLVM::StoreOp::create(rewriter, loc, member.pointer,
                            slot(pointers, ptrType, i));
      Value bytes = member.geometry.bytes;
      if (indexType != i64)
        bytes = LLVM::ZExtOp::create(rewriter, loc, i64, bytes);
      LLVM::StoreOp::create(rewriter, loc, bytes, slot(sizes, i64, i));
    }
    Value stream = callRuntime(rewriter, op, kComputeStream, {});
    callRuntime(rewriter, op, kOffload ? kOffloadGroupStart : kLoadGroupStart,
                {count, pointers, sizes, stream, outputs});

    SmallVector<Value> outputValues;
    for (int64_t i = 0; i < n; ++i)
      outputValues.push_back(LLVM::LoadOp::create(rewriter, loc, ptrType,
                                                  slot(outputs, ptrType, i)));
    LLVM::StackRestoreOp::create(rewriter, loc, stackPointer);

    SmallVector<Value> results;
    for (auto [member, output] : llvm::zip_equal(members, outputValues)) {
      Value allocated = output, aligned = output;
      if constexpr (kOffload) {
        if (op.getReleaseSource())
          callRuntime(rewriter, op, kReleaseSource,
                      {output, member.source.allocatedPtr(rewriter, loc),
                       member.pointer});
        aligned = callRuntime(rewriter, op, kHostData, {output});
      }
      results.push_back(this->createMemRefDescriptor(
          loc, member.resultType, allocated, aligned, member.geometry.sizes,
          member.geometry.strides, rewriter));
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// wait on a future of a buffer. An offload's future already is the host
/// buffer: the compute stream never waits for an offload. A load's wait makes
/// the compute stream wait and puts the device buffer into the descriptor.
class WaitLowering : public ConvertOpToLLVMPattern<WaitOp> {
public:
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;

  LogicalResult
  matchAndRewrite(WaitOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (failed(checkLowerable(op)) || failed(checkRuntimeDeclarations(op)))
      return failure();
    auto bufferType = cast<MemRefType>(op.getResult().getType());
    if (!getTypeConverter()->convertType(bufferType))
      return rewriter.notifyMatchFailure(op, "memref type not convertible");
    if (isHostMemRefType(bufferType)) {
      rewriter.replaceOp(op, adaptor.getFuture());
      return success();
    }
    Location loc = op.getLoc();
    MemRefDescriptor future(adaptor.getFuture());
    Value token = future.allocatedPtr(rewriter, loc);
    Value stream = callRuntime(rewriter, op, kComputeStream, {});
    Value buffer = callRuntime(rewriter, op, kWait, {token, stream});
    MemRefDescriptor result(adaptor.getFuture());
    result.setAllocatedPtr(rewriter, loc, buffer);
    result.setAlignedPtr(rewriter, loc, buffer);
    rewriter.replaceOp(op, Value(result));
    return success();
  }
};

/// Returns a host block to the pinned pool.
class HostDeallocLowering : public ConvertOpToLLVMPattern<memref::DeallocOp> {
public:
  HostDeallocLowering(const LLVMTypeConverter &converter)
      : ConvertOpToLLVMPattern(converter, /*benefit=*/2) {}

  LogicalResult
  matchAndRewrite(memref::DeallocOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!isHostMemRefType(op.getMemref().getType()))
      return rewriter.notifyMatchFailure(op, "not a host buffer");
    if (failed(checkRuntimeDeclarations(op)))
      return failure();
    Value handle = MemRefDescriptor(adaptor.getMemref())
                       .allocatedPtr(rewriter, op.getLoc());
    callRuntime(rewriter, op, kFreeHost, {handle});
    rewriter.eraseOp(op);
    return success();
  }
};

/// offload-plan's placements are for offload-schedule-copies, which erases
/// every one; one that reaches the lowering (the pipeline ran without the
/// scheduling) places nothing, and is dropped with a remark.
class PlacementLowering : public ConvertOpToLLVMPattern<PlacementOp> {
public:
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;

  LogicalResult
  matchAndRewrite(PlacementOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const final {
    op.emitRemark() << "offload-schedule-copies did not consume this "
                       "placement; it places nothing and is dropped";
    rewriter.eraseOp(op);
    return success();
  }
};
} // namespace

void mlir::offload::populateOffloadMemorySpaceConversion(
    TypeConverter &typeConverter) {
  typeConverter.addTypeAttributeConversion(
      [](BaseMemRefType type, HostMemoryAttr) -> Attribute {
        return IntegerAttr::get(IntegerType::get(type.getContext(), 64), 0);
      });
}

void mlir::offload::populateOffloadToLLVMConversionPatterns(
    LLVMTypeConverter &typeConverter, RewritePatternSet &patterns) {
  populateOffloadMemorySpaceConversion(typeConverter);
  // A future of a buffer is that buffer's descriptor.
  typeConverter.addConversion(
      [&typeConverter](BufferFutureType type) -> std::optional<Type> {
        return typeConverter.convertType(type.getValueType());
      });
  patterns.add<OffloadLowering<OffloadBufferOp>,
               OffloadLowering<OffloadStartOp>, LoadLowering<LoadBufferOp>,
               LoadLowering<LoadStartOp>, GroupLowering<OffloadGroupStartOp>,
               GroupLowering<LoadGroupStartOp>, WaitLowering,
               HostDeallocLowering, PlacementLowering>(typeConverter);
}

namespace {
struct OffloadToLLVMDialectInterface : public ConvertToLLVMPatternInterface {
  using ConvertToLLVMPatternInterface::ConvertToLLVMPatternInterface;

  void populateConvertToLLVMConversionPatterns(
      ConversionTarget &target, LLVMTypeConverter &typeConverter,
      RewritePatternSet &patterns) const final {
    target.addIllegalDialect<OffloadDialect>();
    populateOffloadToLLVMConversionPatterns(typeConverter, patterns);
  }
};
} // namespace

void mlir::offload::registerConvertOffloadToLLVMInterface(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, OffloadDialect *dialect) {
    dialect->addInterfaces<OffloadToLLVMDialectInterface>();
  });
}

/// Drops `#offload.host` from every memref type left in `op`: once the copies
/// are calls, a host buffer is an ordinary descriptor.
static void eraseHostMemorySpace(Operation *op) {
  AttrTypeReplacer replacer;
  replacer.addReplacement([](MemRefType type) -> std::optional<Type> {
    if (!isa_and_nonnull<HostMemoryAttr>(type.getMemorySpace()))
      return std::nullopt;
    return MemRefType::get(type.getShape(), type.getElementType(),
                           type.getLayout());
  });
  replacer.recursivelyReplaceElementsIn(op, /*replaceAttrs=*/true,
                                        /*replaceLocs=*/false,
                                        /*replaceTypes=*/true);
}

namespace {
struct ConvertOffloadToLLVM
    : public offload::impl::ConvertOffloadToLLVMBase<ConvertOffloadToLLVM> {
  void runOnOperation() override {
    // Refuse what the patterns cannot lower, with an error at the op: copies
    // still on tensors, and memory spaces without an LLVM address space.
    WalkResult refused = getOperation().walk([](Operation *op) {
      if (!isa_and_nonnull<OffloadDialect>(op->getDialect()))
        return WalkResult::advance();
      return failed(checkLowerable(op)) ||
                     failed(checkRuntimeDeclarations(op))
                 ? WalkResult::interrupt()
                 : WalkResult::advance();
    });
    if (refused.wasInterrupted())
      return signalPassFailure();

    MLIRContext *ctx = &getContext();
    LLVMTypeConverter typeConverter(ctx);
    RewritePatternSet patterns(ctx);
    populateOffloadToLLVMConversionPatterns(typeConverter, patterns);

    ConversionTarget target(*ctx);
    target.addLegalDialect<LLVM::LLVMDialect>();
    target.addIllegalOp<OffloadBufferOp, LoadBufferOp, OffloadStartOp,
                        LoadStartOp, OffloadGroupStartOp, LoadGroupStartOp,
                        WaitOp, PlacementOp>();
    target.addDynamicallyLegalOp<memref::DeallocOp>([](memref::DeallocOp op) {
      return !isHostMemRefType(op.getMemref().getType());
    });
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      return signalPassFailure();

    eraseHostMemorySpace(getOperation());
  }
};
} // namespace
