//===- CostModel.h - Op and copy costs on a device --------------*- C++ -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// A roofline cost model: an op takes max(FLOPs / peak FLOP/s, bytes / HBM
// bandwidth) plus a fixed per-op overhead; a copy over the host link takes a
// fixed latency plus bytes / link bandwidth. FLOPs come from shapes for
// matmuls, attention and convolutions (traced ATen targets and upstream linalg
// contractions and convolutions); every other op is costed from the bytes it
// reads and writes; views are free. The numbers live in a DeviceProfile whose
// defaults are the H100 measurements of docs/architecture.md.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_ANALYSIS_COSTMODEL_H
#define OFFLOAD_ANALYSIS_COSTMODEL_H

#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace mlir {
namespace offload {

/// What the cost model knows about a device and its host link. Bandwidths are
/// in bytes per second, rates in FLOP/s, times in seconds.
struct DeviceProfile {
  std::string name = "h100-pcie5";
  /// Pinned copies, one direction at a time.
  double d2hBandwidth = 55e9;
  double h2dBandwidth = 55e9;
  /// Both directions together, when a D2H and an H2D copy overlap.
  double bothWaysBandwidth = 89.7e9;
  /// Device memory bandwidth, counting read and write bytes.
  double hbmBandwidth = 3.0e12;
  /// Dense peak per element type (tensor cores for 16-bit and 8-bit types;
  /// fp32 without TF32, as PyTorch's default matmul precision).
  double bf16Flops = 790e12;
  double f16Flops = 790e12;
  double f8Flops = 1580e12;
  double f32Flops = 60e12;
  double f64Flops = 30e12;
  /// Scaled-dot-product attention in 16-bit and 8-bit types, FLOPs counted
  /// as the model counts them (cuDNN's fused kernels, forward and backward).
  double attentionFlops = 300e12;
  /// Fixed cost of one copy (launch and completion), on top of the transfer.
  double copyLatency = 10e-6;
  /// Fixed cost of one op that does work.
  double opOverhead = 2e-6;
  /// Time a memory-bound kernel (OpCost::memoryBound) runs longer per
  /// second a copy transfers beside it, per copy stream: copies share the
  /// device memory's bandwidth with it. Compute-bound kernels lose nothing
  /// measurable (docs/calibrate.md). 0 unless measured
  /// (`python -m offload_mlir.calibrate`).
  double copyInterference = 0;

  /// FLOP/s for arithmetic on `elementType`.
  double getFlopsPerSecond(Type elementType) const;
  /// Seconds a copy of `bytes` takes alone on the link.
  double getCopySeconds(int64_t bytes, bool toDevice) const;
  /// This profile with every copy taking `margin` (a fraction) longer: the
  /// link's bandwidths divided, and the copy latency multiplied, by
  /// 1 + margin. Compute is unchanged.
  DeviceProfile withCopyMargin(double margin) const;

  /// Reads a JSON profile; keys present override the defaults (see
  /// docs/cost-model.md). Fails with a message in `error`.
  static FailureOr<DeviceProfile> loadJson(StringRef path, std::string &error);
};

/// Per-field overrides of a profile, as pass options carry them: a negative
/// value leaves the field alone.
struct DeviceProfileOverrides {
  std::string profileFile;
  double d2hGBps = -1, h2dGBps = -1, bothWaysGBps = -1, hbmGBps = -1;
  double bf16TFlops = -1, f32TFlops = -1, attentionTFlops = -1;
  double copyLatencyUs = -1, opOverheadUs = -1, copyInterference = -1;

  /// The H100 defaults, then the JSON file if any, then the overrides.
  FailureOr<DeviceProfile> resolve(std::string &error) const;
};

/// The cost of one op.
struct OpCost {
  double flops = 0;
  /// Bytes read and written in device memory.
  double bytes = 0;
  double seconds = 0;
  /// True if the op only views its operand (no work, no memory).
  bool isView = false;
  /// True if its time is device-memory traffic rather than arithmetic (its
  /// bytes take longer than its flops): copies beside it take bandwidth
  /// from it (DeviceProfile::copyInterference). Matmuls and attention are
  /// not; elementwise ops and reductions are.
  bool memoryBound = false;
  /// False if the model fell back to its default for an op it does not know.
  bool known = true;
  /// True if the op accumulates or writes values into a copy of its first
  /// operand at positions computed at run time (ATen's index_put, scatter,
  /// index_add and their kin). Its kernel touches only those positions (its
  /// bytes count them, not the whole destination), so the destination is a
  /// materialized buffer no fused kernel produces or consumes in passing,
  /// and a compiler writes it in place where nothing else reads it.
  bool scatters = false;
  /// True for a fused attention kernel (ATen's scaled_dot_product ops):
  /// a library kernel that allocates its own results.
  bool attention = false;
};

class CostModel {
public:
  explicit CostModel(DeviceProfile profile) : profile(std::move(profile)) {}

  /// Cost of a top-level op of a training step. Offload copies cost nothing
  /// here: they run on the copy streams.
  OpCost estimate(Operation *op) const;

  const DeviceProfile &getProfile() const { return profile; }

private:
  DeviceProfile profile;
};

} // namespace offload
} // namespace mlir

#endif // OFFLOAD_ANALYSIS_COSTMODEL_H
