//===- TestUtil.h - shared helpers of the offload_rt tests ----------------===//
#ifndef OFFLOAD_RT_TEST_TESTUTIL_H
#define OFFLOAD_RT_TEST_TESTUTIL_H

#ifdef OFFLOAD_RT_MINITEST
#include "MiniTest.h"
#else
#include <gtest/gtest.h>
#endif

#include "offload_rt/offload_rt.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace offload_rt_test {

/// Options for a test context: the environment's values, the sim backend
/// unless OFFLOAD_RT_BACKEND says otherwise, handle checks on.
offload_rt_options testOptions();

struct ContextDeleter {
  void operator()(offload_rt_context *ctx) const;
};
using ContextPtr = std::unique_ptr<offload_rt_context, ContextDeleter>;

/// A context, or null after reporting a test failure.
ContextPtr makeContext(const offload_rt_options &opts);
bool isSim(offload_rt_context *ctx);

/// Deterministic non-zero bytes (zeros would hide unwritten memory).
std::vector<uint8_t> pattern(size_t bytes, uint32_t seed);

/// Device memory holding `bytes`, written on `stream` (and synchronised).
void *deviceFrom(offload_rt_context *ctx, void *stream,
                 const std::vector<uint8_t> &bytes);
/// Reads device memory back after the work enqueued on `stream`.
std::vector<uint8_t> hostFrom(offload_rt_context *ctx, void *stream,
                              const void *device, size_t bytes);

/// True when `text` contains `part` (for error-message checks).
bool contains(const std::string &text, const std::string &part);

/// Captures what the process writes to stderr while it lives.
class StderrCapture {
public:
  StderrCapture();
  ~StderrCapture();
  /// Stops capturing and returns the text.
  std::string take();

private:
  int saved_ = -1;
  std::string path_;
};

} // namespace offload_rt_test

#endif // OFFLOAD_RT_TEST_TESTUTIL_H
