//===- ByteSizeTest.cpp - offload_support::parseByteSize, formatByteSize --===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// The one byte-size spelling of the project: the passes' options and
// offload_rt's environment variables both parse with it. Built into the
// runtime's test binary, which links the library the runtime links.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "offload_support/ByteSize.h"

#include <limits>

using offload_support::formatByteSize;
using offload_support::parseByteSize;
using offload_rt_test::contains;

namespace {

constexpr int64_t kKiB = 1024, kMiB = kKiB * 1024, kGiB = kMiB * 1024,
                  kTiB = kGiB * 1024;

/// The bytes `text` spells, or -1.
int64_t bytes(const char *text) {
  std::optional<int64_t> result = parseByteSize(text);
  return result ? *result : -1;
}

/// Why `text` is not a byte size ("" if it is one).
std::string errorOf(const char *text) {
  std::string error;
  if (parseByteSize(text, &error))
    return "";
  return error;
}

TEST(ByteSize, PlainIntegersAreBytes) {
  EXPECT_EQ(bytes("0"), 0);
  EXPECT_EQ(bytes("4096"), 4096);
  EXPECT_EQ(bytes("4096B"), 4096);
  EXPECT_EQ(bytes("  4096 "), 4096);
  EXPECT_EQ(bytes("1.0"), 1);
}

TEST(ByteSize, BinaryAndDecimalUnits) {
  EXPECT_EQ(bytes("64KiB"), 64 * kKiB);
  EXPECT_EQ(bytes("64MiB"), 64 * kMiB);
  EXPECT_EQ(bytes("20GiB"), 20 * kGiB);
  EXPECT_EQ(bytes("2TiB"), 2 * kTiB);
  EXPECT_EQ(bytes("64KB"), 64000);
  EXPECT_EQ(bytes("16GB"), int64_t(16) * 1000 * 1000 * 1000);
  EXPECT_EQ(bytes("3TB"), int64_t(3) * 1000 * 1000 * 1000 * 1000);
  // dd's and ulimit's spelling: a lone letter is binary; so is Ki, Mi, ...
  EXPECT_EQ(bytes("256M"), 256 * kMiB);
  EXPECT_EQ(bytes("1G"), kGiB);
  EXPECT_EQ(bytes("8Ki"), 8 * kKiB);
  // Units ignore case and may follow a space (formatByteSize's spelling).
  EXPECT_EQ(bytes("64mib"), 64 * kMiB);
  EXPECT_EQ(bytes("64 MiB"), 64 * kMiB);
  EXPECT_EQ(bytes("2gb"), 2000000000);
}

TEST(ByteSize, FractionsWithAUnitRoundDownExactly) {
  EXPECT_EQ(bytes("1.5GB"), 1500000000);
  EXPECT_EQ(bytes("1.5G"), 3 * 512 * kMiB);
  EXPECT_EQ(bytes("0.3KB"), 300); // not 299 from 0.3 * 1000 in doubles
  EXPECT_EQ(bytes(".5KiB"), 512);
  EXPECT_EQ(bytes("0.1KiB"), 102);
  EXPECT_EQ(bytes("1.00000000000000000001KiB"), 1024);
}

TEST(ByteSize, LargestSize) {
  EXPECT_EQ(bytes("9223372036854775807"), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(bytes("8388607TiB"), 8388607 * kTiB);
  EXPECT_TRUE(contains(errorOf("9223372036854775808"), "too large"));
  EXPECT_TRUE(contains(errorOf("8388608TiB"), "is too large (at most 8.0 EiB)"));
  EXPECT_TRUE(contains(errorOf("99999999999999999999999999GiB"), "too large"));
}

TEST(ByteSize, BadInputSaysWhy) {
  EXPECT_TRUE(contains(errorOf(""), "empty byte size"));
  EXPECT_TRUE(contains(errorOf("   "), "empty byte size"));
  EXPECT_EQ(errorOf("lots"),
            "'lots' is not a byte size (expected a number with an optional "
            "unit, e.g. 64MiB, 1.5GB or 4096)");
  EXPECT_EQ(errorOf("12XB"),
            "unknown unit 'XB' in '12XB' (expected B, KB, MB, GB, TB, KiB, "
            "MiB, GiB, TiB, K, M, G or T)");
  EXPECT_EQ(errorOf("-1GiB"), "byte size '-1GiB' is negative");
  EXPECT_TRUE(contains(errorOf("1.5"), "is not a whole number of bytes"));
  EXPECT_TRUE(contains(errorOf("1.5B"), "is not a whole number of bytes"));
  // What strtod would take, and a number followed by more than a unit.
  EXPECT_TRUE(contains(errorOf("1e9"), "unknown unit 'e9'"));
  EXPECT_TRUE(contains(errorOf("0x10"), "unknown unit 'x10'"));
  EXPECT_TRUE(contains(errorOf("inf"), "is not a byte size"));
  EXPECT_TRUE(contains(errorOf("nan"), "is not a byte size"));
  EXPECT_TRUE(contains(errorOf("+5"), "is not a byte size"));
  EXPECT_TRUE(contains(errorOf("1.2.3"), "unknown unit '.3'"));
  EXPECT_TRUE(contains(errorOf("2GiB extra"), "unknown unit 'GiB extra'"));
  EXPECT_TRUE(contains(errorOf("2 Gbit"), "unknown unit 'Gbit'"));
  EXPECT_TRUE(contains(errorOf("."), "is not a byte size"));
  // No error text asked for: still just no value.
  EXPECT_FALSE(parseByteSize("lots").has_value());
}

TEST(ByteSize, FormatsInBinaryUnitsForPeople) {
  EXPECT_EQ(formatByteSize(0), "0 B");
  EXPECT_EQ(formatByteSize(512), "512 B");
  EXPECT_EQ(formatByteSize(1023), "1023 B");
  EXPECT_EQ(formatByteSize(1024), "1.0 KiB");
  EXPECT_EQ(formatByteSize(64 * kKiB), "64.0 KiB");
  EXPECT_EQ(formatByteSize(1536 * kMiB), "1.5 GiB");
  EXPECT_EQ(formatByteSize(kMiB - 1), "1.0 MiB"); // not "1024.0 KiB"
  EXPECT_EQ(formatByteSize(20 * kGiB), "20.0 GiB");
  EXPECT_EQ(formatByteSize(-64 * kKiB), "-64.0 KiB");
  EXPECT_EQ(formatByteSize(std::numeric_limits<int64_t>::max()), "8.0 EiB");
  EXPECT_EQ(formatByteSize(std::numeric_limits<int64_t>::min()), "-8.0 EiB");
  // More decimals where one is too coarse (2.05 GiB is not 2.0 GiB).
  EXPECT_EQ(formatByteSize(2198355984, 2), "2.05 GiB");
  EXPECT_EQ(formatByteSize(kGiB - 1, 2), "1.00 GiB");
  EXPECT_EQ(formatByteSize(512, 2), "512 B");
  EXPECT_EQ(formatByteSize(1536, 0), "2 KiB");
}

TEST(ByteSize, FormattedSizesParseBack) {
  for (int64_t size : {int64_t(0), int64_t(512), 64 * kKiB, 20 * kGiB})
    EXPECT_EQ(bytes(formatByteSize(size).c_str()), size);
}

} // namespace
