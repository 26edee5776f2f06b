//===- ByteSize.cpp - Parse and print byte sizes --------------------------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// Exact integer arithmetic: "0.3KB" is 300 bytes, not 299.99999999999997
// rounded down. See ByteSize.h for the grammar.
//
//===----------------------------------------------------------------------===//

#include "offload_support/ByteSize.h"

#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <limits>

using namespace offload_support;

namespace {

constexpr const char *kExpectedUnits =
    "B, KB, MB, GB, TB, KiB, MiB, GiB, TiB, K, M, G or T";

bool isSpace(char c) { return c == ' ' || c == '\t'; }
bool isDigit(char c) { return c >= '0' && c <= '9'; }

std::string lower(std::string_view text) {
  std::string result(text);
  for (char &c : result)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return result;
}

/// Bytes per unit, or 0 for an unknown unit.
uint64_t unitScale(std::string_view unit) {
  std::string u = lower(unit);
  if (u.empty() || u == "b")
    return 1;
  if (u.size() > 3)
    return 0;
  int power;
  switch (u[0]) {
  case 'k': power = 1; break;
  case 'm': power = 2; break;
  case 'g': power = 3; break;
  case 't': power = 4; break;
  default: return 0;
  }
  std::string_view rest = std::string_view(u).substr(1);
  uint64_t base;
  if (rest.empty() || rest == "i" || rest == "ib")
    base = 1024;
  else if (rest == "b")
    base = 1000;
  else
    return 0;
  uint64_t scale = 1;
  while (power--)
    scale *= base;
  return scale;
}

bool fail(std::string *error, std::string message) {
  if (error)
    *error = std::move(message);
  return false;
}

std::string quoted(std::string_view text) {
  return "'" + std::string(text) + "'";
}

} // namespace

std::optional<int64_t>
offload_support::parseByteSize(std::string_view text, std::string *error) {
  std::string_view s = text;
  while (!s.empty() && isSpace(s.front()))
    s.remove_prefix(1);
  while (!s.empty() && isSpace(s.back()))
    s.remove_suffix(1);
  if (s.empty()) {
    fail(error, "empty byte size (expected a number with an optional unit, "
                "e.g. 64MiB, 1.5GB or 4096)");
    return std::nullopt;
  }
  if (s.front() == '-') {
    fail(error, "byte size " + quoted(text) + " is negative");
    return std::nullopt;
  }

  size_t i = 0;
  size_t intBegin = i;
  while (i < s.size() && isDigit(s[i]))
    ++i;
  std::string_view intDigits = s.substr(intBegin, i - intBegin);
  std::string_view fracDigits;
  bool hasPoint = i < s.size() && s[i] == '.';
  if (hasPoint) {
    size_t fracBegin = ++i;
    while (i < s.size() && isDigit(s[i]))
      ++i;
    fracDigits = s.substr(fracBegin, i - fracBegin);
  }
  if (intDigits.empty() && fracDigits.empty()) {
    fail(error, quoted(text) + " is not a byte size (expected a number with "
                               "an optional unit, e.g. 64MiB, 1.5GB or 4096)");
    return std::nullopt;
  }
  std::string_view unit = s.substr(i);
  while (!unit.empty() && isSpace(unit.front()))
    unit.remove_prefix(1);
  uint64_t scale = unitScale(unit);
  if (scale == 0) {
    fail(error, "unknown unit " + quoted(unit) + " in " + quoted(text) +
                    " (expected " + kExpectedUnits + ")");
    return std::nullopt;
  }

  // Whole part times scale, then the fraction's share of scale, rounded
  // down; 128-bit intermediates so nothing wraps before the range check.
  using u128 = unsigned __int128;
  const u128 limit = static_cast<u128>(std::numeric_limits<int64_t>::max());
  auto tooLarge = [&] {
    fail(error, "byte size " + quoted(text) + " is too large (at most " +
                    formatByteSize(std::numeric_limits<int64_t>::max()) +
                    ")");
    return std::nullopt;
  };
  u128 whole = 0;
  for (char c : intDigits) {
    whole = whole * 10 + static_cast<unsigned>(c - '0');
    if (whole > limit)
      return tooLarge();
  }
  u128 bytes = whole * scale;
  if (bytes > limit)
    return tooLarge();
  bool fractional = false;
  if (!fracDigits.empty()) {
    // Digits past the 18th cannot change a whole byte of a scale below 2^60.
    u128 numerator = 0, denominator = 1;
    for (char c : fracDigits.substr(0, 18)) {
      numerator = numerator * 10 + static_cast<unsigned>(c - '0');
      denominator *= 10;
    }
    fractional = numerator != 0;
    bytes += numerator * scale / denominator;
    if (bytes > limit)
      return tooLarge();
  }
  if (fractional && scale == 1) {
    fail(error, "byte size " + quoted(text) +
                    " is not a whole number of bytes (a fraction needs a "
                    "unit, e.g. 1.5KiB)");
    return std::nullopt;
  }
  return static_cast<int64_t>(bytes);
}

std::string offload_support::formatByteSize(int64_t bytes, int decimals) {
  static const char *const units[] = {"B",   "KiB", "MiB", "GiB",
                                      "TiB", "PiB", "EiB"};
  // The magnitude as unsigned, so INT64_MIN has one too.
  uint64_t magnitude = bytes < 0 ? 0 - static_cast<uint64_t>(bytes)
                                 : static_cast<uint64_t>(bytes);
  const char *sign = bytes < 0 ? "-" : "";
  char buffer[48];
  if (magnitude < 1024) {
    std::snprintf(buffer, sizeof buffer, "%s%" PRIu64 " B", sign, magnitude);
    return buffer;
  }
  decimals = decimals < 0 ? 0 : decimals > 6 ? 6 : decimals;
  // Half a unit of the last decimal printed: a value that rounds to 1024
  // moves up a unit ("1.0 MiB", not "1024.0 KiB").
  double half = 0.5;
  for (int i = 0; i < decimals; ++i)
    half /= 10;
  double value = static_cast<double>(magnitude);
  int unit = 0;
  while (unit < 6 && value >= 1024 - half) {
    value /= 1024;
    ++unit;
  }
  std::snprintf(buffer, sizeof buffer, "%s%.*f %s", sign, decimals, value,
                units[unit]);
  return buffer;
}
