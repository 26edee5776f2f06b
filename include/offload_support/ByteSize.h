//===- ByteSize.h - Parse and print byte sizes ------------------*- C++ -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// The one spelling of byte sizes in the project: the passes' options
// (budget=, max-inflight-bytes=) and offload_rt's environment variables
// (OFFLOAD_RT_POOL_BYTES) parse with parseByteSize, and diagnostics and the
// report print with formatByteSize. Plain C++17, no LLVM: the runtime
// depends on nothing else of the project but this.
//
// Grammar (case-insensitive units, spaces allowed around the unit):
//
//   size := number [unit]
//   number := digits ['.' digits] | '.' digits
//   unit := B
//         | KB | MB | GB | TB             powers of 1000
//         | KiB | MiB | GiB | TiB         powers of 1024
//         | Ki | Mi | Gi | Ti             the same, without the B
//         | K | M | G | T                 powers of 1024, as dd and ulimit
//
// A fraction needs a unit larger than a byte and is rounded down to whole
// bytes ("1.5KiB" is 1536, "1.5" and "1.5B" are errors). No signs, no
// exponents, no hex, nothing past the unit; the result is at most INT64_MAX.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_SUPPORT_BYTESIZE_H
#define OFFLOAD_SUPPORT_BYTESIZE_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace offload_support {

/// The bytes `text` spells, or std::nullopt with a one-line reason in
/// `*error` (when not null) that quotes the text, e.g. "unknown unit 'XB' in
/// '12XB' (expected B, KB, MB, GB, TB, KiB, MiB, GiB, TiB, K, M, G or T)".
std::optional<int64_t> parseByteSize(std::string_view text,
                                     std::string *error = nullptr);

/// `bytes` in binary units for people: "0 B", "512 B", "64.0 KiB",
/// "1.5 GiB" (`decimals` decimals, 0 to 6, from KiB up; the largest unit with
/// a value of at least 1, up to EiB). Negative values keep their sign.
std::string formatByteSize(int64_t bytes, int decimals = 1);

} // namespace offload_support

#endif // OFFLOAD_SUPPORT_BYTESIZE_H
