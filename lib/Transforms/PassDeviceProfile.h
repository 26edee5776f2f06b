//===- PassDeviceProfile.h - Device profile from pass options ---*- C++ -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// Every cost-model pass carries the DeviceProfileOptions of Passes.td; this
// turns them into a DeviceProfile, diagnosing a bad profile file.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_LIB_TRANSFORMS_PASSDEVICEPROFILE_H
#define OFFLOAD_LIB_TRANSFORMS_PASSDEVICEPROFILE_H

#include "offload/Analysis/CostModel.h"

#include "mlir/IR/Operation.h"

namespace mlir {
namespace offload {

/// The DeviceProfileOptions of the pass this is expanded in (its option
/// members are protected, so this reads them from inside the pass).
#define OFFLOAD_PASS_PROFILE_OVERRIDES()                                       \
  ::mlir::offload::DeviceProfileOverrides {                                    \
    deviceProfile, d2hGBps, h2dGBps, bothWaysGBps, hbmGBps, bf16TFlops,         \
        f32TFlops, copyLatencyUs, opOverheadUs                                 \
  }

/// Resolves `overrides` into a profile; emits an error at `anchor` on failure.
inline FailureOr<DeviceProfile>
getPassDeviceProfile(StringRef passName,
                     const DeviceProfileOverrides &overrides,
                     Operation *anchor) {
  std::string error;
  FailureOr<DeviceProfile> profile = overrides.resolve(error);
  if (failed(profile))
    anchor->emitError() << passName << ": " << error;
  return profile;
}

/// Parses a max-inflight-bytes style option; emits an error on failure.
inline FailureOr<int64_t> parseBytesOption(StringRef passName,
                                           StringRef optionName,
                                           StringRef text, Operation *anchor) {
  std::optional<int64_t> bytes = parseByteSize(text);
  if (!bytes) {
    anchor->emitError() << passName << ": cannot parse " << optionName << "='"
                        << text << "' as a byte size (e.g. 512MiB, 20GiB, 2GB)";
    return failure();
  }
  return *bytes;
}

} // namespace offload
} // namespace mlir

#endif // OFFLOAD_LIB_TRANSFORMS_PASSDEVICEPROFILE_H
