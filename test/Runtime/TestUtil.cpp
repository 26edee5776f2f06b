//===- TestUtil.cpp - shared helpers of the offload_rt tests --------------===//

#include "TestUtil.h"

#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace offload_rt_test {

offload_rt_options testOptions() {
  offload_rt_options opts;
  offload_rt_options_init(&opts);
  if (opts.backend == OFFLOAD_RT_BACKEND_DEFAULT)
    opts.backend = OFFLOAD_RT_BACKEND_SIM;
  opts.checks = 1;
  return opts;
}

void ContextDeleter::operator()(offload_rt_context *ctx) const {
  offload_rt_status st = offload_rt_context_destroy(ctx);
  EXPECT_EQ(st, OFFLOAD_RT_SUCCESS) << offload_rt_last_error();
}

ContextPtr makeContext(const offload_rt_options &opts) {
  offload_rt_context *ctx = nullptr;
  offload_rt_status st = offload_rt_context_create(&opts, &ctx);
  EXPECT_EQ(st, OFFLOAD_RT_SUCCESS) << offload_rt_last_error();
  return ContextPtr(ctx);
}

bool isSim(offload_rt_context *ctx) {
  return std::string(offload_rt_backend_name(ctx)) == "sim";
}

std::vector<uint8_t> pattern(size_t bytes, uint32_t seed) {
  std::vector<uint8_t> out(bytes);
  uint32_t x = seed * 2654435761u + 12345u;
  for (size_t i = 0; i < bytes; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    out[i] = static_cast<uint8_t>(x | 1);
  }
  return out;
}

void *deviceFrom(offload_rt_context *ctx, void *stream,
                 const std::vector<uint8_t> &bytes) {
  void *dev = nullptr;
  EXPECT_EQ(offload_rt_device_alloc(ctx, bytes.size(), stream, &dev),
            OFFLOAD_RT_SUCCESS)
      << offload_rt_last_error();
  EXPECT_EQ(offload_rt_memcpy_async(ctx, dev, bytes.data(), bytes.size(),
                                    stream),
            OFFLOAD_RT_SUCCESS)
      << offload_rt_last_error();
  EXPECT_EQ(offload_rt_stream_synchronize(ctx, stream), OFFLOAD_RT_SUCCESS);
  return dev;
}

std::vector<uint8_t> hostFrom(offload_rt_context *ctx, void *stream,
                              const void *device, size_t bytes) {
  std::vector<uint8_t> out(bytes, 0);
  EXPECT_EQ(offload_rt_memcpy_async(ctx, out.data(), device, bytes, stream),
            OFFLOAD_RT_SUCCESS)
      << offload_rt_last_error();
  EXPECT_EQ(offload_rt_stream_synchronize(ctx, stream), OFFLOAD_RT_SUCCESS);
  return out;
}

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

StderrCapture::StderrCapture() {
  char name[] = "/tmp/offload_rt_stderr_XXXXXX";
  int fd = mkstemp(name);
  if (fd < 0)
    return;
  path_ = name;
  std::fflush(stderr);
  saved_ = dup(2);
  dup2(fd, 2);
  close(fd);
}

StderrCapture::~StderrCapture() { take(); }

std::string StderrCapture::take() {
  if (saved_ < 0)
    return "";
  std::fflush(stderr);
  dup2(saved_, 2);
  close(saved_);
  saved_ = -1;
  std::ifstream in(path_);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path_.c_str());
  return text.str();
}

} // namespace offload_rt_test

#ifdef OFFLOAD_RT_MINITEST
int main(int argc, char **argv) {
  return testing::mini::runAll(argc, argv);
}
#endif
