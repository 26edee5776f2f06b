//===- CostModel.cpp - Op and copy costs on a device ----------------------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "offload/Analysis/CostModel.h"
#include "offload/Analysis/SavedActivations.h"
#include "offload/Analysis/Views.h"
#include "offload/Dialect/Offload/IR/OffloadDialect.h"
#include "offload/Interfaces/TracedOpInterface.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>

using namespace mlir;
using namespace mlir::offload;

//===----------------------------------------------------------------------===//
// DeviceProfile
//===----------------------------------------------------------------------===//

double DeviceProfile::getFlopsPerSecond(Type type) const {
  if (type.isBF16())
    return bf16Flops;
  if (type.isF16())
    return f16Flops;
  if (type.isF32() || type.isTF32())
    return f32Flops;
  if (type.isF64())
    return f64Flops;
  if (auto f = dyn_cast<FloatType>(type); f && f.getWidth() == 8)
    return f8Flops;
  if (type.isInteger(8))
    return f8Flops;
  return f32Flops;
}

double DeviceProfile::getCopySeconds(int64_t bytes, bool toDevice) const {
  return copyLatency + double(bytes) / (toDevice ? h2dBandwidth : d2hBandwidth);
}

DeviceProfile DeviceProfile::withCopyMargin(double margin) const {
  DeviceProfile slower = *this;
  double factor = 1 + margin;
  slower.d2hBandwidth /= factor;
  slower.h2dBandwidth /= factor;
  slower.bothWaysBandwidth /= factor;
  slower.copyLatency *= factor;
  return slower;
}

FailureOr<DeviceProfile> DeviceProfile::loadJson(StringRef path,
                                                 std::string &error) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    error = "cannot read device profile '" + path.str() +
            "': " + buffer.getError().message();
    return failure();
  }
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse((*buffer)->getBuffer());
  if (!json) {
    error = "device profile '" + path.str() +
            "' is not valid JSON: " + llvm::toString(json.takeError());
    return failure();
  }
  const llvm::json::Object *object = json->getAsObject();
  if (!object) {
    error = "device profile '" + path.str() + "' must be a JSON object";
    return failure();
  }
  DeviceProfile profile;
  // Every key names its unit; unknown keys are errors so typos do not pass
  // silently.
  struct Field {
    const char *key;
    double *target;
    double scale;
  };
  Field fields[] = {
      {"d2h_GBps", &profile.d2hBandwidth, 1e9},
      {"h2d_GBps", &profile.h2dBandwidth, 1e9},
      {"both_ways_GBps", &profile.bothWaysBandwidth, 1e9},
      {"hbm_GBps", &profile.hbmBandwidth, 1e9},
      {"bf16_TFLOPs", &profile.bf16Flops, 1e12},
      {"f16_TFLOPs", &profile.f16Flops, 1e12},
      {"f8_TFLOPs", &profile.f8Flops, 1e12},
      {"f32_TFLOPs", &profile.f32Flops, 1e12},
      {"f64_TFLOPs", &profile.f64Flops, 1e12},
      {"attention_TFLOPs", &profile.attentionFlops, 1e12},
      {"copy_latency_us", &profile.copyLatency, 1e-6},
      {"op_overhead_us", &profile.opOverhead, 1e-6},
      {"copy_interference", &profile.copyInterference, 1},
  };
  for (const auto &[key, value] : *object) {
    if (key == "name") {
      if (auto name = value.getAsString())
        profile.name = name->str();
      continue;
    }
    Field *field = llvm::find_if(
        fields, [&](const Field &f) { return key == f.key; });
    if (field == std::end(fields)) {
      error = "device profile '" + path.str() + "': unknown key '" +
              key.str() + "'";
      return failure();
    }
    std::optional<double> number = value.getAsNumber();
    if (!number || !(*number >= 0) || !std::isfinite(*number)) {
      error = "device profile '" + path.str() + "': '" + key.str() +
              "' must be a finite non-negative number";
      return failure();
    }
    *field->target = *number * field->scale;
  }
  return profile;
}

FailureOr<DeviceProfile>
DeviceProfileOverrides::resolve(std::string &error) const {
  DeviceProfile profile;
  if (!profileFile.empty()) {
    FailureOr<DeviceProfile> loaded = DeviceProfile::loadJson(profileFile, error);
    if (failed(loaded))
      return failure();
    profile = *loaded;
  }
  // A negative value leaves the profile's; NaN and infinities are errors.
  for (auto [name, value] : {std::pair<StringRef, double>{"d2h-gbps", d2hGBps},
                             {"h2d-gbps", h2dGBps},
                             {"both-ways-gbps", bothWaysGBps},
                             {"hbm-gbps", hbmGBps},
                             {"bf16-tflops", bf16TFlops},
                             {"f32-tflops", f32TFlops},
                             {"attention-tflops", attentionTFlops},
                             {"copy-latency-us", copyLatencyUs},
                             {"op-overhead-us", opOverheadUs},
                             {"copy-interference", copyInterference}})
    if (!std::isfinite(value)) {
      error = "device profile option " + name.str() +
              " must be a finite number";
      return failure();
    }
  auto set = [](double value, double &target, double scale) {
    if (value >= 0)
      target = value * scale;
  };
  set(d2hGBps, profile.d2hBandwidth, 1e9);
  set(h2dGBps, profile.h2dBandwidth, 1e9);
  set(bothWaysGBps, profile.bothWaysBandwidth, 1e9);
  set(hbmGBps, profile.hbmBandwidth, 1e9);
  if (bf16TFlops >= 0)
    profile.bf16Flops = profile.f16Flops = bf16TFlops * 1e12;
  set(f32TFlops, profile.f32Flops, 1e12);
  set(attentionTFlops, profile.attentionFlops, 1e12);
  set(copyLatencyUs, profile.copyLatency, 1e-6);
  set(opOverheadUs, profile.opOverhead, 1e-6);
  set(copyInterference, profile.copyInterference, 1);
  if (profile.d2hBandwidth <= 0 || profile.h2dBandwidth <= 0 ||
      profile.bothWaysBandwidth <= 0 || profile.hbmBandwidth <= 0) {
    error = "device profile: bandwidths must be positive";
    return failure();
  }
  return profile;
}

//===----------------------------------------------------------------------===//
// Op costs
//===----------------------------------------------------------------------===//

static double numElements(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  return double(tensor.getNumElements());
}

static double tensorBytes(Type type) {
  return double(getTensorSizeInBytes(type).value_or(0));
}

/// Bytes an op reads and writes: its tensor operands and results.
static double operandAndResultBytes(Operation *op) {
  double bytes = 0;
  for (Type type : op->getOperandTypes())
    bytes += tensorBytes(type);
  for (Type type : op->getResultTypes())
    bytes += tensorBytes(type);
  return bytes;
}

static RankedTensorType rankedOperand(Operation *op, unsigned index) {
  if (index >= op->getNumOperands())
    return nullptr;
  auto type = dyn_cast<RankedTensorType>(op->getOperand(index).getType());
  return type && type.hasStaticShape() ? type : nullptr;
}

/// The element type the op computes in: its first tensor operand's.
static Type computeElementType(Operation *op) {
  for (Type type : op->getOperandTypes())
    if (auto tensor = dyn_cast<RankedTensorType>(type))
      return tensor.getElementType();
  for (Type type : op->getResultTypes())
    if (auto tensor = dyn_cast<RankedTensorType>(type))
      return tensor.getElementType();
  return nullptr;
}

/// The position of `is_causal` among the positional arguments of the ATen
/// attention ops (their schemas in native_functions.yaml).
static std::optional<unsigned> getCausalArgIndex(StringRef target) {
  return llvm::StringSwitch<std::optional<unsigned>>(target)
      .StartsWith("aten.scaled_dot_product_attention", 5)
      .StartsWith("aten._scaled_dot_product_flash_attention_backward", 11)
      .StartsWith("aten._scaled_dot_product_flash_attention", 4)
      .StartsWith("aten._scaled_dot_product_efficient_attention_backward", 11)
      .StartsWith("aten._scaled_dot_product_efficient_attention", 6)
      .StartsWith("aten._scaled_dot_product_cudnn_attention_backward", 14)
      .StartsWith("aten._scaled_dot_product_cudnn_attention", 6)
      .Default(std::nullopt);
}

/// ATen ops that write into a copy of their first operand at positions their
/// other operands give (OpCost::scatters).
static bool isScatterTarget(StringRef target) {
  StringRef base = target;
  if (base.starts_with("aten."))
    base = base.drop_front(5);
  base = base.split('.').first;
  return llvm::is_contained({"index_put", "index_put_", "_unsafe_index_put",
                             "_index_put_impl", "_index_put_impl_", "scatter",
                             "scatter_", "scatter_add", "scatter_add_",
                             "scatter_reduce", "scatter_reduce_", "index_add",
                             "index_add_", "index_copy", "index_copy_",
                             "index_reduce", "index_reduce_"},
                            base);
}

static bool isCausalAttention(TracedOpInterface op) {
  auto causal = dyn_cast_or_null<BoolAttr>(
      op.getArgument("is_causal", getCausalArgIndex(op.getTarget())));
  return causal && causal.getValue();
}

/// FLOPs of a traced ATen op from its shapes, or nullopt if it is not a
/// matmul, attention or convolution; `isAttention` says which.
static std::optional<double> getTracedFlops(TracedOpInterface traced,
                                            bool &isAttention) {
  Operation *op = traced;
  StringRef base = traced.getTarget();
  if (base.starts_with("aten."))
    base = base.drop_front(5);
  base = base.split('.').first;

  // Matmuls: 2 * (result elements) * K, K the inner dimension of the left
  // operand (operand 1 of addmm/baddbmm, whose operand 0 is the bias).
  if (llvm::is_contained({"mm", "bmm", "matmul", "linear", "addmm", "baddbmm",
                          "_scaled_mm", "addbmm"},
                         base)) {
    unsigned left = base.starts_with("add") || base == "baddbmm" ? 1 : 0;
    RankedTensorType lhs = rankedOperand(op, left);
    if (!lhs || lhs.getRank() == 0 || op->getNumResults() == 0)
      return std::nullopt;
    return 2.0 * numElements(op->getResult(0).getType()) *
           double(lhs.getShape().back());
  }

  // Attention: QK^T and PV, 4 * B * H * Sq * Sk * D; backward does 2.5x the
  // forward's work; causal masking halves both.
  if (base.contains("scaled_dot_product") && base.contains("attention")) {
    SmallVector<RankedTensorType> qk;
    for (unsigned i = 0; i < op->getNumOperands() && qk.size() < 2; ++i)
      if (RankedTensorType type = rankedOperand(op, i); type && type.getRank() >= 3)
        qk.push_back(type);
    if (qk.size() < 2)
      return std::nullopt;
    ArrayRef<int64_t> q = qk[0].getShape(), k = qk[1].getShape();
    double rows = 1;
    for (int64_t dim : q.drop_back())
      rows *= dim;
    double flops = 4.0 * rows * double(k[k.size() - 2]) * double(q.back());
    if (base.contains("backward"))
      flops *= 2.5;
    if (isCausalAttention(traced))
      flops *= 0.5;
    isAttention = true;
    return flops;
  }

  // Convolutions: 2 * (output elements) * (Cin/groups * kernel elements);
  // the backward computes both gradients, twice the forward.
  if (base.contains("conv")) {
    bool backward = base.contains("backward");
    RankedTensorType out = backward ? rankedOperand(op, 0) : nullptr;
    RankedTensorType weight = rankedOperand(op, backward ? 2 : 1);
    if (!backward && op->getNumResults())
      out = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!out || !weight || weight.getRank() < 2)
      return std::nullopt;
    double perOutput = 1;
    for (int64_t dim : weight.getShape().drop_front())
      perOutput *= dim;
    return (backward ? 4.0 : 2.0) * numElements(out) * perOutput;
  }
  return std::nullopt;
}

/// FLOPs of a linalg contraction or convolution: two per point of its
/// iteration space.
static std::optional<double> getLinalgFlops(linalg::LinalgOp op) {
  if (!linalg::isaContractionOpInterface(op) &&
      !linalg::isaConvolutionOpInterface(op))
    return std::nullopt;
  double points = 1;
  for (int64_t range : op.getStaticLoopRanges()) {
    if (ShapedType::isDynamic(range))
      return std::nullopt;
    points *= range;
  }
  return 2.0 * points;
}

OpCost CostModel::estimate(Operation *op) const {
  OpCost cost;
  // A recomputation costs its body's ops, each as its own kernel;
  // StepModel fuses it with its neighbours where the code generator would.
  if (auto recompute = dyn_cast<RecomputeOp>(op)) {
    bool works = false;
    cost.memoryBound = true;
    for (Operation &inner : recompute.getBody().front().without_terminator()) {
      OpCost part = estimate(&inner);
      if (part.isView || part.seconds == 0)
        continue;
      works = true;
      cost.flops += part.flops;
      cost.bytes += part.bytes;
      cost.seconds += part.seconds;
      cost.memoryBound &= part.memoryBound;
      cost.known &= part.known;
      cost.attention |= part.attention;
      cost.scatters |= part.scatters;
    }
    cost.memoryBound &= works;
    return cost;
  }
  // Copies run on their own streams; views and ops without tensors do no
  // device work worth counting.
  if (isa<OffloadToCpuOp, LoadToGpuOp, WaitOp>(op) || isCopyStart(op))
    return cost;
  if (getViewSource(op)) {
    cost.isView = true;
    return cost;
  }
  auto isTensor = [](Type type) { return isa<TensorType>(type); };
  if (op->getNumRegions() == 0 && !llvm::any_of(op->getOperandTypes(), isTensor) &&
      !llvm::any_of(op->getResultTypes(), isTensor))
    return cost;
  // tensor.empty and constants only allocate or exist.
  if (op->getNumOperands() == 0 && op->getNumRegions() == 0)
    return cost;

  std::optional<double> flops;
  bool isAttention = false;
  if (auto traced = dyn_cast<TracedOpInterface>(op)) {
    flops = getTracedFlops(traced, isAttention);
    cost.bytes = operandAndResultBytes(op);
    if (isScatterTarget(traced.getTarget()) && op->getNumOperands() > 1 &&
        op->getNumResults() == 1) {
      // The indices and values (the last operand) are read, and as many
      // destination elements as values read and written; the rest of the
      // destination is not touched.
      cost.scatters = true;
      cost.bytes = 2 * tensorBytes(op->getOperands().back().getType());
      for (Value operand : op->getOperands().drop_front())
        cost.bytes += tensorBytes(operand.getType());
    }
  } else if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
    flops = getLinalgFlops(linalgOp);
    // Inits are written, not read, unless the payload reads them.
    for (OpOperand *input : linalgOp.getDpsInputOperands())
      cost.bytes += tensorBytes(input->get().getType());
    for (Type type : op->getResultTypes())
      cost.bytes += tensorBytes(type);
  } else {
    // Unknown op: memory bound, the least time it can take. That is the
    // conservative side for hiding copies under it. (Traced ops took the
    // branch above.)
    cost.known = op->getDialect() &&
                 (isa<linalg::LinalgDialect>(op->getDialect()) ||
                  op->getDialect()->getNamespace() == "arith" ||
                  op->getDialect()->getNamespace() == "math" ||
                  op->getDialect()->getNamespace() == "tensor");
    cost.bytes = operandAndResultBytes(op);
  }
  cost.flops = flops.value_or(0);
  cost.attention = isAttention;
  double computeSeconds = 0;
  if (cost.flops > 0) {
    if (Type element = computeElementType(op)) {
      double rate = profile.getFlopsPerSecond(element);
      // Fused attention kernels run well below the GEMM peak.
      if (isAttention && element.isIntOrFloat() &&
          element.getIntOrFloatBitWidth() <= 16)
        rate = std::min(rate, profile.attentionFlops);
      computeSeconds = cost.flops / rate;
    }
  }
  double memorySeconds = cost.bytes / profile.hbmBandwidth;
  cost.seconds = std::max(computeSeconds, memorySeconds) + profile.opOverhead;
  cost.memoryBound = memorySeconds > 0 && memorySeconds >= computeSeconds;
  return cost;
}
