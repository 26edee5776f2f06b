//===- PassOptionValues.cpp - Parse and print option values ---------------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// The option value types of PassOptionValues.h: each parses with the
// project's one byte-size parser (offload_support::parseByteSize) and
// prints what reads back as the same value.
//
//===----------------------------------------------------------------------===//

#include "offload/Transforms/PassOptionValues.h"
#include "offload_support/ByteSize.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace mlir;
using namespace mlir::offload;

static std::optional<int64_t> parseBytes(StringRef text, std::string &error) {
  return offload_support::parseByteSize({text.data(), text.size()}, &error);
}

std::optional<ByteSize> ByteSize::parse(StringRef text, std::string &error) {
  if (std::optional<int64_t> bytes = parseBytes(text, error))
    return ByteSize(*bytes);
  return std::nullopt;
}

void ByteSize::print(llvm::raw_ostream &os) const { os << bytes; }

std::optional<PrefetchBytes> PrefetchBytes::parse(StringRef text,
                                                  std::string &error) {
  if (text.trim() == "auto")
    return PrefetchBytes();
  if (std::optional<int64_t> bytes = parseBytes(text, error))
    return PrefetchBytes(*bytes);
  error += " (or auto)";
  return std::nullopt;
}

void PrefetchBytes::print(llvm::raw_ostream &os) const {
  if (isAuto())
    os << "auto";
  else
    os << bytes;
}

std::optional<Budget> Budget::parse(StringRef text, std::string &error) {
  text = text.trim();
  Budget budget;
  if (text.empty())
    return budget;
  double number;
  bool isNumber = !text.getAsDouble(number);
  if (isNumber && number > 0 && number <= 1) {
    budget.fraction = number;
    return budget;
  }
  budget.bytes = parseBytes(text, error);
  if (!budget.bytes) {
    if (isNumber)
      error += "; a fraction of the predicted peak without offload is in "
               "(0, 1]";
    return std::nullopt;
  }
  return budget;
}

void Budget::print(llvm::raw_ostream &os) const {
  if (bytes) {
    os << *bytes;
    return;
  }
  if (fraction == 0)
    return;
  // The shortest decimal that reads back as the same double.
  for (int digits = 1; digits <= 17; ++digits) {
    std::string text;
    llvm::raw_string_ostream(text) << llvm::format("%.*g", digits, fraction);
    if (std::strtod(text.c_str(), nullptr) == fraction || digits == 17) {
      os << text;
      return;
    }
  }
}
