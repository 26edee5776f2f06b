//===- RuntimeTest.cpp - offload_rt through its C API ---------------------===//
//
// Every test runs on the backend OFFLOAD_RT_BACKEND names (sim by default).
// The sim runs copies slowly where a test needs a window in which a missing
// wait would show (sim_copy_latency_us), and its freeAsync poisons memory, so
// an ordering bug reads as wrong bytes. Tests that need such a window, or the
// sim's failure injection, say so and are skipped on cuda.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "offload_rt/offload_rt_mlir.h"
#include "offload_rt/offload_rt_sim.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <random>
#include <algorithm>
#include <thread>

using namespace offload_rt_test;

namespace {

constexpr uint64_t kMiB = 1024 * 1024;

#define EXPECT_OK(call) EXPECT_EQ((call), OFFLOAD_RT_SUCCESS) << offload_rt_last_error()
#define ASSERT_OK(call) ASSERT_EQ((call), OFFLOAD_RT_SUCCESS) << offload_rt_last_error()

class Runtime : public testing::Test {
protected:
  /// Creates the context (and a compute stream) with `opts`.
  void start(const offload_rt_options &opts) {
    ctx = makeContext(opts);
    ASSERT_TRUE(ctx != nullptr);
    ASSERT_OK(offload_rt_stream_create(ctx.get(), &stream));
  }
  /// Sim copies take at least `us` each: the window in which a missing wait
  /// would be seen.
  static offload_rt_options slowCopies(double us) {
    offload_rt_options o = testOptions();
    o.sim_copy_latency_us = us;
    return o;
  }
  void TearDown() override {
    if (ctx && stream) {
      EXPECT_OK(offload_rt_stream_destroy(ctx.get(), stream));
    }
    ctx.reset();
  }
  offload_rt_stats stats() {
    offload_rt_stats s{};
    EXPECT_OK(offload_rt_get_stats(ctx.get(), &s));
    return s;
  }
  /// What offload_rt_print_summary writes.
  std::string summary() {
    FILE *out = std::tmpfile();
    EXPECT_TRUE(out != nullptr);
    if (!out)
      return {};
    EXPECT_OK(offload_rt_print_summary(ctx.get(), out));
    std::rewind(out);
    char text[4096] = {};
    size_t n = std::fread(text, 1, sizeof(text) - 1, out);
    std::fclose(out);
    return std::string(text, n);
  }
  std::vector<uint8_t> hostBytes(offload_rt_host_buffer *buf, size_t n) {
    void *p = nullptr;
    EXPECT_OK(offload_rt_host_data(ctx.get(), buf, 1, &p));
    if (!p)
      return {};
    auto *b = static_cast<uint8_t *>(p);
    return std::vector<uint8_t>(b, b + n);
  }

  ContextPtr ctx;
  void *stream = nullptr;
};

//===--- round trips ------------------------------------------------------===//

TEST_F(Runtime, RoundTripPreservesBytes) {
  start(testOptions());
  auto data = pattern(100003, 1); // odd size: not a multiple of anything
  void *dev = deviceFrom(ctx.get(), stream, data);
  offload_rt_host_buffer *buf = nullptr;
  ASSERT_OK(offload_rt_offload(ctx.get(), dev, data.size(), stream, &buf));
  ASSERT_TRUE(buf != nullptr);
  void *back = nullptr;
  ASSERT_OK(offload_rt_load(ctx.get(), buf, nullptr, data.size(), stream,
                            &back));
  ASSERT_TRUE(back != nullptr);
  EXPECT_TRUE(hostFrom(ctx.get(), stream, back, data.size()) == data);
  EXPECT_OK(offload_rt_free_host(ctx.get(), buf));
  EXPECT_OK(offload_rt_device_free(ctx.get(), back, stream));
  EXPECT_OK(offload_rt_device_free(ctx.get(), dev, stream));
  EXPECT_OK(offload_rt_stream_synchronize(ctx.get(), stream));
}

TEST_F(Runtime, SplitStartAndWaitIntoCallerBuffer) {
  start(slowCopies(2000));
  auto data = pattern(65536, 2);
  void *dev = deviceFrom(ctx.get(), stream, data);
  offload_rt_host_buffer *buf = nullptr;
  offload_rt_token *offloaded = nullptr, *loaded = nullptr;
  ASSERT_OK(offload_rt_offload_start(ctx.get(), dev, data.size(), stream, &buf,
                                     &offloaded));
  ASSERT_OK(offload_rt_wait(ctx.get(), offloaded, stream));
  void *dst = nullptr, *out = nullptr;
  ASSERT_OK(offload_rt_device_alloc(ctx.get(), data.size(), stream, &dst));
  ASSERT_OK(offload_rt_load_start(ctx.get(), buf, dst, data.size(), stream,
                                  &out, &loaded));
  EXPECT_EQ(out, dst);
  ASSERT_OK(offload_rt_wait(ctx.get(), loaded, stream));
  EXPECT_TRUE(hostFrom(ctx.get(), stream, dst, data.size()) == data);
  EXPECT_OK(offload_rt_free_host(ctx.get(), buf));
  EXPECT_OK(offload_rt_device_free(ctx.get(), dst, stream));
  EXPECT_OK(offload_rt_device_free(ctx.get(), dev, stream));
  EXPECT_EQ(stats().waits, 2u);
}

// OFFLOAD_RT_COPY_DELAY_US holds each copy on its stream: a wait on it (and
// so a consumer ordered after the wait) comes at least that much later, and
// the copy times in the stats stay the copies' own.
TEST_F(Runtime, CopyDelayHoldsEachCopyOnItsStream) {
  offload_rt_options o = testOptions();
  o.copy_delay_us = 20000;
  start(o);
  auto data = pattern(65536, 3);
  void *dev = deviceFrom(ctx.get(), stream, data);
  ASSERT_OK(offload_rt_stream_synchronize(ctx.get(), stream));
  auto waited = [&](offload_rt_token *token) {
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_OK(offload_rt_wait(ctx.get(), token, stream));
    EXPECT_OK(offload_rt_stream_synchronize(ctx.get(), stream));
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now() - t0)
        .count();
  };
  offload_rt_host_buffer *buf = nullptr;
  offload_rt_token *offloaded = nullptr, *loaded = nullptr;
  ASSERT_OK(offload_rt_offload_start(ctx.get(), dev, data.size(), stream, &buf,
                                     &offloaded));
  EXPECT_GE(waited(offloaded), 19.0);
  void *back = nullptr;
  ASSERT_OK(offload_rt_load_start(ctx.get(), buf, nullptr, data.size(), stream,
                                  &back, &loaded));
  EXPECT_GE(waited(loaded), 19.0);
  EXPECT_TRUE(hostFrom(ctx.get(), stream, back, data.size()) == data);
  offload_rt_stats s = stats();
  EXPECT_LT(s.d2h_ms + s.h2d_ms, 19.0);
  EXPECT_OK(offload_rt_free_host(ctx.get(), buf));
  EXPECT_OK(offload_rt_device_free(ctx.get(), back, stream));
  EXPECT_OK(offload_rt_device_free(ctx.get(), dev, stream));
  EXPECT_OK(offload_rt_stream_synchronize(ctx.get(), stream));
}

// Several threads, each with its own compute stream, keep a few buffers on
// the host at a time and load them back in random order.
TEST_F(Runtime, ManyConcurrentRoundTripsKeepTheirBytes) {
  offload_rt_options opts = testOptions();
  opts.pool_initial_bytes = 4 * kMiB; // small: growth happens concurrently
  start(opts);
  constexpr int kThreads = 4, kIterations = 60;
  std::atomic<int> mismatches{0}, failures{0};
  auto worker = [&](int t) {
    offload_rt_context *c = ctx.get();
    void *s = nullptr;
    if (offload_rt_stream_create(c, &s) != OFFLOAD_RT_SUCCESS) {
      ++failures;
      return;
    }
    std::mt19937 rng(100 + t);
    struct Held {
      std::vector<uint8_t> data;
      offload_rt_host_buffer *buf;
    };
    std::deque<Held> held;
    auto loadOne = [&](size_t index) {
      Held h = std::move(held[index]);
      held.erase(held.begin() + index);
      void *back = nullptr;
      if (offload_rt_load(c, h.buf, nullptr, h.data.size(), s, &back) < 0) {
        ++failures;
        return;
      }
      if (hostFrom(c, s, back, h.data.size()) != h.data)
        ++mismatches;
      if (offload_rt_free_host(c, h.buf) < 0 ||
          offload_rt_device_free(c, back, s) < 0)
        ++failures;
    };
    for (int i = 0; i < kIterations; ++i) {
      size_t bytes = 1 + rng() % (1 << 20);
      Held h{pattern(bytes, t * 1000 + i), nullptr};
      void *dev = deviceFrom(c, s, h.data);
      if (offload_rt_offload(c, dev, bytes, s, &h.buf) != OFFLOAD_RT_SUCCESS ||
          offload_rt_free_device_after_copy(c, h.buf) < 0) {
        ++failures;
        continue;
      }
      held.push_back(std::move(h));
      if (held.size() > 4 || rng() % 3 == 0)
        loadOne(rng() % held.size());
    }
    while (!held.empty())
      loadOne(0);
    if (offload_rt_stream_destroy(c, s) < 0)
      ++failures;
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back(worker, t);
  for (auto &th : threads)
    th.join();
  EXPECT_EQ(failures.load(), 0) << offload_rt_last_error();
  EXPECT_EQ(mismatches.load(), 0);
  ASSERT_OK(offload_rt_synchronize(ctx.get()));
  offload_rt_stats s = stats();
  EXPECT_EQ(s.d2h_copies, uint64_t(kThreads * kIterations));
  EXPECT_EQ(s.h2d_copies, uint64_t(kThreads * kIterations));
  EXPECT_EQ(s.fallbacks, 0u);
  EXPECT_EQ(s.pinned_in_use_bytes, 0u);
  EXPECT_EQ(s.host_live_bytes, 0u);
  EXPECT_EQ(s.device_releases, uint64_t(kThreads * kIterations));
}

//===--- ordering guarantees ----------------------------------------------===//

namespace {
void sleepMs(void *ms) {
  std::this_thread::sleep_for(
      std::chrono::milliseconds(reinterpret_cast<intptr_t>(ms)));
}
} // namespace

// Guarantee 1: the D2H copy waits for the compute stream's earlier work.
TEST_F(Runtime, OffloadSeesWritesEnqueuedBeforeIt) {
  start(testOptions());
  auto before = pattern(32768, 3), after = pattern(32768, 4);
  void *dev = deviceFrom(ctx.get(), stream, before);
  // Compute is busy for 50 ms, then overwrites the buffer.
  ASSERT_OK(offload_rt_stream_enqueue_host_fn(ctx.get(), stream, sleepMs,
                                              reinterpret_cast<void *>(50)));
  ASSERT_OK(offload_rt_memcpy_async(ctx.get(), dev, after.data(), after.size(),
                                    stream));
  offload_rt_host_buffer *buf = nullptr;
  ASSERT_OK(offload_rt_offload(ctx.get(), dev, after.size(), stream, &buf));
  EXPECT_TRUE(hostBytes(buf, after.size()) == after);
  EXPECT_OK(offload_rt_free_host(ctx.get(), buf));
  EXPECT_OK(offload_rt_device_free(ctx.get(), dev, stream));
}

// Guarantee 2 and 3: the load waits for its (slow) offload, and the compute
// stream's next work waits for the load.
TEST_F(Runtime, LoadWaitsForOffloadAndComputeWaitsForLoad) {
  start(slowCopies(30000));
  auto data = pattern(200000, 5);
  void *dev = deviceFrom(ctx.get(), stream, data);
  offload_rt_host_buffer *buf = nullptr;
  ASSERT_OK(offload_rt_offload(ctx.get(), dev, data.size(), stream, &buf));
  void *back = nullptr;
  ASSERT_OK(offload_rt_load(ctx.get(), buf, nullptr, data.size(), stream,
                            &back));
  // Enqueued right away on compute: must run after both copies.
  EXPECT_TRUE(hostFrom(ctx.get(), stream, back, data.size()) == data);
  ASSERT_OK(offload_rt_synchronize(ctx.get()));
  offload_rt_stats s = stats();
  EXPECT_EQ(s.waits, 1u);
  if (isSim(ctx.get())) { // compute stood still for most of two copies
    EXPECT_GT(s.wait_ms, 30.0);
  }
  EXPECT_OK(offload_rt_free_host(ctx.get(), buf));
  EXPECT_OK(offload_rt_device_free(ctx.get(), back, stream));
  EXPECT_OK(offload_rt_device_free(ctx.get(), dev, stream));
}

struct ReleaseProbe {
  const uint8_t *host = nullptr;
  std::vector<uint8_t> expected;
  const void *device = nullptr;
  std::atomic<int> calls{0};
  std::atomic<bool> copyWasComplete{false}, rightPointer{false};
};

void probeRelease(void *device, void *user) {
  auto *p = static_cast<ReleaseProbe *>(user);
  p->rightPointer = device == p->device;
  p->copyWasComplete =
      p->host && std::memcmp(p->host, p->expected.data(), p->expected.size()) == 0;
  ++p->calls;
}

// Guarantee 4, callback form: the release runs only once the copy finished.
TEST_F(Runtime, ReleaseCallbackRunsOnlyAfterTheCopy) {
  start(slowCopies(50000));
  ReleaseProbe probe;
  probe.expected = pattern(4096, 6);
  void *dev = deviceFrom(ctx.get(), stream, probe.expected);
  probe.device = dev;
  offload_rt_host_buffer *buf = nullptr;
  ASSERT_OK(offload_rt_offload(ctx.get(), dev, 4096, stream, &buf));
  void *host = nullptr;
  ASSERT_OK(offload_rt_host_data(ctx.get(), buf, 0, &host));
  probe.host = static_cast<const uint8_t *>(host);
  ASSERT_OK(offload_rt_release_device_after_copy(ctx.get(), buf, probeRelease,
                                                 &probe));
  ASSERT_OK(offload_rt_poll(ctx.get()));
  if (isSim(ctx.get())) { // the copy takes 50 ms: too early to release
    EXPECT_EQ(probe.calls.load(), 0);
  }
  ASSERT_OK(offload_rt_synchronize(ctx.get()));
  EXPECT_EQ(probe.calls.load(), 1);
  EXPECT_TRUE(probe.copyWasComplete.load());
  EXPECT_TRUE(probe.rightPointer.load());
  EXPECT_EQ(stats().device_releases, 1u);
  // A second hand-over of the same device buffer is refused.
  EXPECT_EQ(offload_rt_free_device_after_copy(ctx.get(), buf),
            OFFLOAD_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_OK(offload_rt_free_host(ctx.get(), buf));
  EXPECT_OK(offload_rt_device_free(ctx.get(), dev, stream));
}

// Guarantee 4, stream-ordered form: the sim poisons freed memory, so a free
// that overtook the copy would leave poison in the host copy.
TEST_F(Runtime, StreamOrderedFreeFollowsTheCopy) {
  start(slowCopies(20000));
  auto data = pattern(1 << 16, 7);
  void *dev = deviceFrom(ctx.get(), stream, data);
  offload_rt_host_buffer *buf = nullptr;
  ASSERT_OK(offload_rt_offload(ctx.get(), dev, data.size(), stream, &buf));
  ASSERT_OK(offload_rt_free_device_after_copy(ctx.get(), buf));
  EXPECT_TRUE(hostBytes(buf, data.size()) == data);
  EXPECT_OK(offload_rt_free_host(ctx.get(), buf));
}

// Guarantee 5: a freed host buffer's block is not reused while a load still
// reads it. The pool holds one block, so the next offload must wait for it.
TEST_F(Runtime, FreedBlockIsNotReusedBeforeItsLoadCompletes) {
  offload_rt_options opts = slowCopies(40000);
  opts.pool_initial_bytes = 4096;
  opts.pool_growable = 0;
  start(opts);
  auto a = pattern(4096, 8), b = pattern(4096, 9);
  void *devA = deviceFrom(ctx.get(), stream, a);
  void *devB = deviceFrom(ctx.get(), stream, b);
  offload_rt_host_buffer *bufA = nullptr, *bufB = nullptr;
  ASSERT_OK(offload_rt_offload(ctx.get(), devA, 4096, stream, &bufA));
  ASSERT_OK(offload_rt_synchronize(ctx.get()));
  void *back = nullptr;
  offload_rt_token *loading = nullptr;
  ASSERT_OK(offload_rt_load_start(ctx.get(), bufA, nullptr, 4096, stream,
                                  &back, &loading));
  ASSERT_OK(offload_rt_free_host(ctx.get(), bufA)); // load still running
  ASSERT_OK(offload_rt_offload(ctx.get(), devB, 4096, stream, &bufB));
  ASSERT_OK(offload_rt_wait(ctx.get(), loading, stream));
  EXPECT_TRUE(hostFrom(ctx.get(), stream, back, 4096) == a);
  EXPECT_TRUE(hostBytes(bufB, 4096) == b);
  if (isSim(ctx.get())) {
    EXPECT_EQ(stats().pool_stalls, 1u);
  }
  EXPECT_EQ(stats().fallbacks, 0u);
  EXPECT_OK(offload_rt_free_host(ctx.get(), bufB));
  for (void *p : {back, devA, devB})
    EXPECT_OK(offload_rt_device_free(ctx.get(), p, stream));
}

TEST_F(Runtime, MaxInFlightThrottlesTheHost) {
  if (testOptions().backend != OFFLOAD_RT_BACKEND_SIM)
    GTEST_SKIP() << "needs slow sim copies to keep copies in flight";
  offload_rt_options opts = slowCopies(20000);
  opts.max_in_flight = 2;
  start(opts);
  auto data = pattern(1024, 10);
  void *dev = deviceFrom(ctx.get(), stream, data);
  std::vector<offload_rt_host_buffer *> bufs(5);
  for (auto &b : bufs)
    ASSERT_OK(offload_rt_offload(ctx.get(), dev, data.size(), stream, &b));
  EXPECT_EQ(stats().throttles, 3u);
  for (auto *b : bufs) {
    EXPECT_TRUE(hostBytes(b, data.size()) == data);
    EXPECT_OK(offload_rt_free_host(ctx.get(), b));
  }
  EXPECT_OK(offload_rt_device_free(ctx.get(), dev, stream));
}

//===--- pool exhaustion --------------------------------------------------===//

TEST_F(Runtime, ExhaustedPoolKeepsOnDeviceAndWarnsOnce) {
  offload_rt_options opts = testOptions();
  opts.pool_initial_bytes = kMiB;
  opts.pool_growable = 0;
  start(opts);
  auto data = pattern(768 * 1024, 11);
  void *dev = deviceFrom(ctx.get(), stream, data);
  offload_rt_host_buffer *first = nullptr, *kept = nullptr, *kept2 = nullptr;
  ASSERT_OK(offload_rt_offload(ctx.get(), dev, data.size(), stream, &first));

  StderrCapture err;
  EXPECT_EQ(offload_rt_offload(ctx.get(), dev, data.size(), stream, &kept),
            OFFLOAD_RT_KEPT_ON_DEVICE);
  EXPECT_EQ(offload_rt_offload(ctx.get(), dev, data.size(), stream, &kept2),
            OFFLOAD_RT_KEPT_ON_DEVICE);
  std::string warning = err.take();
  EXPECT_TRUE(contains(warning, "pinned pool exhausted (request 768.0 KiB, "
                                "reserved 1.0 MiB, in use 768.0 KiB;"))
      << warning;
  EXPECT_EQ(warning.find("pinned pool exhausted"),
            warning.rfind("pinned pool exhausted"))
      << "warned more than once: " << warning;
  ASSERT_TRUE(kept != nullptr);

  // Code that ignores the status still loads the right bytes.
  void *back = nullptr;
  ASSERT_OK(offload_rt_load(ctx.get(), kept, nullptr, data.size(), stream,
                            &back));
  EXPECT_TRUE(hostFrom(ctx.get(), stream, back, data.size()) == data);
  void *host = &host;
  EXPECT_OK(offload_rt_host_data(ctx.get(), kept, 1, &host));
  EXPECT_EQ(host, nullptr);

  // Its device buffer is the data: released at free_host, not after "copy".
  ReleaseProbe probe;
  probe.device = dev;
  ASSERT_OK(offload_rt_release_device_after_copy(ctx.get(), kept,
                                                 probeRelease, &probe));
  ASSERT_OK(offload_rt_synchronize(ctx.get()));
  EXPECT_EQ(probe.calls.load(), 0);
  EXPECT_OK(offload_rt_free_host(ctx.get(), kept));
  EXPECT_OK(offload_rt_stream_synchronize(ctx.get(), stream));
  EXPECT_EQ(probe.calls.load(), 1);

  offload_rt_stats s = stats();
  EXPECT_EQ(s.fallbacks, 2u);
  EXPECT_EQ(s.d2h_copies, 1u);
  EXPECT_EQ(s.pinned_reserved_bytes, kMiB);
  for (auto *b : {first, kept2})
    EXPECT_OK(offload_rt_free_host(ctx.get(), b));
  EXPECT_OK(offload_rt_device_free(ctx.get(), back, stream));
  EXPECT_OK(offload_rt_device_free(ctx.get(), dev, stream));
}

/// Activations saved by one transformer layer (bf16 unless noted), for a
/// model of width `d`, MLP width `f`, `kv` key/value width, `t` tokens.
std::vector<size_t> layerActivations(size_t t, size_t d, size_t f, size_t kv,
                                     size_t heads) {
  return {
      t * d * 2,     // layer input
      t * 4,         // rmsnorm 1/rms (fp32)
      t * d * 2,     // q
      t * kv * 2,    // k
      t * kv * 2,    // v
      heads * t * 4, // attention log-sum-exp (fp32)
      t * d * 2,     // attention output
      t * d * 2,     // residual
      t * 4,         // rmsnorm 2
      t * f * 2,     // gate
      t * f * 2,     // up
      t * f * 2,     // silu(gate) * up
  };
}

/// A small Llama-shaped model: 6 layers, 256 tokens, width 2048.
std::vector<size_t> transformerActivations(size_t tokens = 256) {
  std::vector<size_t> sizes;
  for (int layer = 0; layer < 6; ++layer)
    for (size_t s : layerActivations(tokens, 2048, 5632, 512, 16))
      sizes.push_back(s);
  return sizes;
}

uint64_t planned(const std::vector<size_t> &sizes) {
  uint64_t total = 0;
  for (size_t s : sizes)
    total += (s + 255) / 256 * 256;
  return total;
}

class Workload : public Runtime {
protected:
  /// One training step: forward offloads every activation; backward loads
  /// them in reverse order and frees each host copy after its load.
  void step(const std::vector<size_t> &sizes) {
    size_t largest = *std::max_element(sizes.begin(), sizes.end());
    if (largest > srcBytes) {
      if (src) {
        EXPECT_OK(offload_rt_device_free(ctx.get(), src, stream));
      }
      src = deviceFrom(ctx.get(), stream, pattern(largest, 12));
      srcBytes = largest;
    }
    std::vector<offload_rt_host_buffer *> saved;
    for (size_t bytes : sizes) {
      offload_rt_host_buffer *b = nullptr;
      ASSERT_OK(offload_rt_offload(ctx.get(), src, bytes, stream, &b));
      saved.push_back(b);
    }
    void *dst = nullptr;
    ASSERT_OK(offload_rt_device_alloc(ctx.get(), largest, stream, &dst));
    for (size_t i = saved.size(); i-- > 0;) {
      void *out = nullptr;
      ASSERT_OK(offload_rt_load(ctx.get(), saved[i], dst, sizes[i], stream,
                                &out));
      ASSERT_OK(offload_rt_free_host(ctx.get(), saved[i]));
    }
    ASSERT_OK(offload_rt_device_free(ctx.get(), dst, stream));
    ASSERT_OK(offload_rt_stream_synchronize(ctx.get(), stream));
    ASSERT_OK(offload_rt_synchronize(ctx.get()));
  }
  /// Reserved pinned bytes over the most bytes ever offloaded at once.
  double reservedOverPeak() {
    offload_rt_stats s = stats();
    double ratio =
        double(s.pinned_reserved_bytes) / double(s.host_peak_live_bytes);
    std::fprintf(stderr, "reserved %llu / peak %llu = %.4f (%llu chunks)\n",
                 (unsigned long long)s.pinned_reserved_bytes,
                 (unsigned long long)s.host_peak_live_bytes, ratio,
                 (unsigned long long)s.pool_chunks);
    return ratio;
  }
  void TearDown() override {
    if (src) {
      EXPECT_OK(offload_rt_device_free(ctx.get(), src, stream));
    }
    Runtime::TearDown();
  }
  void *src = nullptr;
  size_t srcBytes = 0;
};

// With the pool sized from the plan (what the compiler passes), nothing grows
// and nothing is reserved beyond the plan.
TEST_F(Workload, PlannedPoolNeverGrows) {
  std::vector<size_t> sizes = transformerActivations();
  offload_rt_options opts = testOptions();
  opts.pool_initial_bytes = planned(sizes);
  opts.pool_growable = 0;
  start(opts);
  for (int i = 0; i < 2; ++i)
    step(sizes);
  offload_rt_stats s = stats();
  EXPECT_EQ(s.pool_grows, 0u);
  EXPECT_EQ(s.pool_chunks, 1u);
  EXPECT_EQ(s.fallbacks, 0u);
  EXPECT_EQ(s.pinned_reserved_bytes, planned(sizes));
  EXPECT_LE(reservedOverPeak(), 1.001);
}

// A plan that underestimates by half: the pool grows in the first step only,
// and stays within 1.15x of the peak (no power-of-two rounding).
TEST_F(Workload, UnderestimatedPlanGrowsWithin115Percent) {
  std::vector<size_t> sizes = transformerActivations();
  offload_rt_options opts = testOptions();
  opts.pool_initial_bytes = planned(sizes) / 2;
  start(opts);
  step(sizes);
  uint64_t grows = stats().pool_grows;
  EXPECT_GT(grows, 0u);
  step(sizes);
  step(sizes);
  EXPECT_EQ(stats().pool_grows, grows) << "steady state grew";
  EXPECT_EQ(stats().fallbacks, 0u);
  EXPECT_LE(reservedOverPeak(), 1.15);
}

// No plan at all: the pool grows from empty, in ~30 chunks, not per tensor.
TEST_F(Workload, EmptyPoolGrowsWithin115Percent) {
  std::vector<size_t> sizes = transformerActivations();
  offload_rt_options opts = testOptions();
  opts.pool_initial_bytes = 0;
  start(opts);
  step(sizes);
  uint64_t grows = stats().pool_grows;
  EXPECT_LT(grows, sizes.size() / 2);
  step(sizes);
  step(sizes);
  EXPECT_EQ(stats().pool_grows, grows) << "steady state grew";
  EXPECT_EQ(stats().fallbacks, 0u);
  EXPECT_EQ(stats().pinned_in_use_bytes, 0u);
  EXPECT_LE(reservedOverPeak(), 1.15);
}

// Shapes that grow between steps (a longer sequence) leave chunks too small
// for the new sizes; those are released rather than kept beside new ones.
TEST_F(Workload, GrowingShapesDoNotPileUpChunks) {
  offload_rt_options opts = testOptions();
  opts.pool_initial_bytes = 0;
  start(opts);
  std::vector<size_t> one = {8 * kMiB};
  step(one);
  step({9 * kMiB});
  step({10 * kMiB});
  offload_rt_stats s = stats();
  EXPECT_EQ(s.pool_chunks, 1u);
  EXPECT_EQ(s.pinned_reserved_bytes, 10 * kMiB);
}

//===--- statistics -------------------------------------------------------===//

TEST_F(Runtime, StatsCountBytesCopiesTimesAndPeaks) {
  start(slowCopies(10000));
  auto data = pattern(64 * 1024, 14);
  void *dev = deviceFrom(ctx.get(), stream, data);
  std::vector<offload_rt_host_buffer *> bufs(3);
  for (auto &b : bufs)
    ASSERT_OK(offload_rt_offload(ctx.get(), dev, data.size(), stream, &b));
  void *dst = nullptr;
  ASSERT_OK(offload_rt_device_alloc(ctx.get(), data.size(), stream, &dst));
  for (int i = 0; i < 2; ++i) {
    void *out = nullptr;
    ASSERT_OK(offload_rt_load(ctx.get(), bufs[i], dst, data.size(), stream,
                              &out));
  }
  ASSERT_OK(offload_rt_stream_synchronize(ctx.get(), stream));
  ASSERT_OK(offload_rt_synchronize(ctx.get()));
  offload_rt_stats s = stats();
  EXPECT_EQ(s.d2h_copies, 3u);
  EXPECT_EQ(s.h2d_copies, 2u);
  EXPECT_EQ(s.d2h_bytes, 3u * data.size());
  EXPECT_EQ(s.h2d_bytes, 2u * data.size());
  EXPECT_EQ(s.waits, 2u);
  EXPECT_GT(s.d2h_ms, 0.0);
  EXPECT_GT(s.h2d_ms, 0.0);
  if (isSim(ctx.get())) { // each copy takes >= 10 ms
    EXPECT_GE(s.d2h_ms, 3 * 9.5);
    EXPECT_GE(s.h2d_ms, 2 * 9.5);
  }
  EXPECT_EQ(s.pinned_peak_in_use_bytes, 3u * data.size());
  EXPECT_EQ(s.host_peak_live_bytes, 3u * data.size());
  for (auto *b : bufs)
    ASSERT_OK(offload_rt_free_host(ctx.get(), b));
  ASSERT_OK(offload_rt_synchronize(ctx.get()));
  s = stats();
  EXPECT_EQ(s.pinned_in_use_bytes, 0u);
  EXPECT_EQ(s.host_live_bytes, 0u);
  EXPECT_EQ(s.pinned_peak_in_use_bytes, 3u * data.size());

  std::string text = summary();
  EXPECT_TRUE(contains(text, "device->host")) << text;
  EXPECT_TRUE(contains(text, "compute-stream waits: 2")) << text;
  // Sizes in human units (offload_support::formatByteSize), not 0.000 GiB.
  EXPECT_TRUE(contains(text,
                       "  bytes                  192.0 KiB       128.0 KiB\n"))
      << text;
  EXPECT_TRUE(contains(text, "peak 192.0 KiB in use")) << text;

  EXPECT_OK(offload_rt_reset_stats(ctx.get()));
  s = stats();
  EXPECT_EQ(s.d2h_copies, 0u);
  EXPECT_EQ(s.pinned_peak_in_use_bytes, 0u);
  EXPECT_OK(offload_rt_device_free(ctx.get(), dst, stream));
  EXPECT_OK(offload_rt_device_free(ctx.get(), dev, stream));
}

// Device bytes through offload_rt: an allocation counts from the call, a
// stream-ordered free once its stream reaches it; the peak keeps the most.
TEST_F(Runtime, DeviceBytesInUseAndPeakFollowTheStream) {
  start(testOptions());
  const uint64_t base = stats().device_in_use_bytes;
  void *a = nullptr, *b = nullptr;
  ASSERT_OK(offload_rt_device_alloc(ctx.get(), kMiB, stream, &a));
  ASSERT_OK(offload_rt_device_alloc(ctx.get(), 2 * kMiB, stream, &b));
  EXPECT_EQ(stats().device_in_use_bytes, base + 3 * kMiB);
  EXPECT_EQ(stats().device_peak_bytes, base + 3 * kMiB);

  // The stream is held up behind a host function: the free of `a` is
  // enqueued but not reached, so its bytes are still in use.
  std::atomic<bool> go{false};
  auto hold = [](void *flag) {
    while (!static_cast<std::atomic<bool> *>(flag)->load())
      std::this_thread::sleep_for(std::chrono::microseconds(100));
  };
  ASSERT_OK(offload_rt_stream_enqueue_host_fn(ctx.get(), stream, hold, &go));
  ASSERT_OK(offload_rt_device_free(ctx.get(), a, stream));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(stats().device_in_use_bytes, base + 3 * kMiB);
  go = true;
  ASSERT_OK(offload_rt_stream_synchronize(ctx.get(), stream));
  // On cuda the count drops in a host function right behind the free,
  // which a stream synchronization waits for.
  offload_rt_stats s = stats();
  EXPECT_EQ(s.device_in_use_bytes, base + 2 * kMiB);
  EXPECT_EQ(s.device_peak_bytes, base + 3 * kMiB);

  EXPECT_OK(offload_rt_reset_stats(ctx.get()));
  EXPECT_EQ(stats().device_peak_bytes, base + 2 * kMiB);
  ASSERT_OK(offload_rt_device_free(ctx.get(), b, stream));
  ASSERT_OK(offload_rt_stream_synchronize(ctx.get(), stream));
  EXPECT_EQ(stats().device_in_use_bytes, base);

  std::string text = summary();
  EXPECT_TRUE(contains(text,
                       "device memory through offload_rt: "))
      << text;
}

//===--- handle checks and errors -----------------------------------------===//

TEST_F(Runtime, DoubleReleaseAndUseAfterReleaseAreReported) {
  start(testOptions()); // testOptions turns checks on
  auto data = pattern(512, 15);
  void *dev = deviceFrom(ctx.get(), stream, data);
  offload_rt_host_buffer *buf = nullptr;
  offload_rt_token *token = nullptr;
  ASSERT_OK(offload_rt_offload_start(ctx.get(), dev, data.size(), stream, &buf,
                                     &token));
  ASSERT_OK(offload_rt_free_host(ctx.get(), buf));

  EXPECT_EQ(offload_rt_free_host(ctx.get(), buf),
            OFFLOAD_RT_ERROR_INVALID_HANDLE);
  EXPECT_TRUE(contains(offload_rt_last_error(), "double release"))
      << offload_rt_last_error();
  void *out = nullptr;
  EXPECT_EQ(offload_rt_load(ctx.get(), buf, nullptr, data.size(), stream, &out),
            OFFLOAD_RT_ERROR_INVALID_HANDLE);
  EXPECT_TRUE(contains(offload_rt_last_error(), "use after release"))
      << offload_rt_last_error();

  // A token outlives its buffer's release, and is consumed by one wait.
  EXPECT_OK(offload_rt_wait(ctx.get(), token, stream));
  EXPECT_EQ(offload_rt_wait(ctx.get(), token, stream),
            OFFLOAD_RT_ERROR_INVALID_HANDLE);
  EXPECT_TRUE(contains(offload_rt_last_error(), "already waited"))
      << offload_rt_last_error();

  int notAHandle = 0;
  EXPECT_EQ(offload_rt_free_host(
                ctx.get(), reinterpret_cast<offload_rt_host_buffer *>(&notAHandle)),
            OFFLOAD_RT_ERROR_INVALID_HANDLE);
  EXPECT_TRUE(contains(offload_rt_last_error(), "not a host buffer"))
      << offload_rt_last_error();
  EXPECT_EQ(offload_rt_free_host(ctx.get(), nullptr),
            OFFLOAD_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_OK(offload_rt_device_free(ctx.get(), dev, stream));
}

TEST_F(Runtime, InvalidArgumentsAreNamed) {
  start(testOptions());
  offload_rt_host_buffer *buf = nullptr;
  EXPECT_EQ(offload_rt_offload(ctx.get(), nullptr, 16, stream, &buf),
            OFFLOAD_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(offload_rt_last_error()),
            "offload_rt_offload_start: device_ptr is NULL");
  auto data = pattern(256, 16);
  void *dev = deviceFrom(ctx.get(), stream, data);
  ASSERT_OK(offload_rt_offload(ctx.get(), dev, 256, stream, &buf));
  void *out = nullptr;
  EXPECT_EQ(offload_rt_load(ctx.get(), buf, nullptr, 257, stream, &out),
            OFFLOAD_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(offload_rt_last_error(), "257 bytes requested"))
      << offload_rt_last_error();
  // The copy may still be reading dev: hand it over instead of freeing it.
  EXPECT_OK(offload_rt_free_device_after_copy(ctx.get(), buf));
  EXPECT_OK(offload_rt_free_host(ctx.get(), buf));
}

// A host running ahead of the device leaves many timed waits pending on
// one compute stream; since they end in order, a runtime call queries the
// first of them, not all. Checked by failing the 8th event query from here
// on: the next call, with 16 waits pending, must not reach it.
TEST_F(Runtime, PendingWaitsOnOneStreamAreNotAllQueriedAtEachCall) {
  if (testOptions().backend != OFFLOAD_RT_BACKEND_SIM)
    GTEST_SKIP() << "failure injection is a sim feature";
  offload_rt_options opts = testOptions();
  opts.timing = 1;
  start(opts);
  auto data = pattern(4096, 21);
  void *dev = deviceFrom(ctx.get(), stream, data);
  ASSERT_OK(offload_rt_stream_enqueue_host_fn(ctx.get(), stream, sleepMs,
                                              reinterpret_cast<void *>(200)));
  std::vector<offload_rt_host_buffer *> bufs;
  for (int i = 0; i < 16; ++i) {
    offload_rt_host_buffer *buf = nullptr;
    offload_rt_token *token = nullptr;
    ASSERT_OK(offload_rt_offload_start(ctx.get(), dev, data.size(), stream, &buf,
                                       &token));
    ASSERT_OK(offload_rt_wait(ctx.get(), token, stream));
    bufs.push_back(buf);
  }
  ASSERT_OK(offload_rt_sim_inject_failure(ctx.get(), "cudaEventQuery", 8));
  offload_rt_stats s{};
  EXPECT_OK(offload_rt_get_stats(ctx.get(), &s));
  ASSERT_OK(offload_rt_sim_inject_failure(ctx.get(), "cudaEventQuery", 1 << 30));
  EXPECT_EQ(s.waits, 16u);
  ASSERT_OK(offload_rt_synchronize(ctx.get()));
  ASSERT_OK(offload_rt_stream_synchronize(ctx.get(), stream));
  EXPECT_GT(stats().wait_ms, 0.0); // every wait reaped and timed once done
  for (offload_rt_host_buffer *buf : bufs)
    EXPECT_OK(offload_rt_free_host(ctx.get(), buf));
  EXPECT_OK(offload_rt_device_free(ctx.get(), dev, stream));
}

TEST_F(Runtime, BackendFailuresNameTheCallAndCorruptNothing) {
  if (testOptions().backend != OFFLOAD_RT_BACKEND_SIM)
    GTEST_SKIP() << "failure injection is a sim feature";
  offload_rt_options opts = testOptions();
  opts.pool_initial_bytes = kMiB;
  start(opts);
  auto data = pattern(4096, 17);
  void *dev = deviceFrom(ctx.get(), stream, data);

  // A failed copy returns its block to the pool and no handle.
  ASSERT_OK(offload_rt_sim_inject_failure(ctx.get(), "cudaMemcpyAsync", 1));
  offload_rt_host_buffer *buf = nullptr;
  EXPECT_EQ(offload_rt_offload(ctx.get(), dev, data.size(), stream, &buf),
            OFFLOAD_RT_ERROR_BACKEND);
  EXPECT_EQ(std::string(offload_rt_last_error()),
            "cudaMemcpyAsync failed: injected failure (sim)");
  EXPECT_EQ(buf, nullptr);
  EXPECT_EQ(stats().pinned_in_use_bytes, 0u);

  // The context keeps working; a failed load leaves the buffer loadable.
  ASSERT_OK(offload_rt_offload(ctx.get(), dev, data.size(), stream, &buf));
  ASSERT_OK(offload_rt_sim_inject_failure(ctx.get(), "cudaMallocAsync", 1));
  void *back = nullptr;
  EXPECT_EQ(offload_rt_load(ctx.get(), buf, nullptr, data.size(), stream,
                            &back),
            OFFLOAD_RT_ERROR_BACKEND);
  EXPECT_EQ(std::string(offload_rt_last_error()),
            "cudaMallocAsync failed: injected failure (sim)");
  ASSERT_OK(offload_rt_load(ctx.get(), buf, nullptr, data.size(), stream,
                            &back));
  EXPECT_TRUE(hostFrom(ctx.get(), stream, back, data.size()) == data);

  // A reservation that cannot be pinned says so.
  ASSERT_OK(offload_rt_sim_inject_failure(ctx.get(), "cudaHostAlloc", 1));
  EXPECT_EQ(offload_rt_reserve(ctx.get(), 8 * kMiB),
            OFFLOAD_RT_ERROR_OUT_OF_MEMORY);
  EXPECT_TRUE(contains(offload_rt_last_error(), "cudaHostAlloc failed"))
      << offload_rt_last_error();

  // Failed growth falls back to keeping the buffer on the device.
  ASSERT_OK(offload_rt_sim_inject_failure(ctx.get(), "cudaHostAlloc", 1));
  std::vector<uint8_t> big = pattern(2 * kMiB, 18);
  void *devBig = deviceFrom(ctx.get(), stream, big);
  offload_rt_host_buffer *kept = nullptr;
  StderrCapture err;
  EXPECT_EQ(offload_rt_offload(ctx.get(), devBig, big.size(), stream, &kept),
            OFFLOAD_RT_KEPT_ON_DEVICE);
  std::string warning = err.take();
  EXPECT_TRUE(contains(warning, "cudaHostAlloc failed")) << warning;

  for (auto *b : {buf, kept})
    EXPECT_OK(offload_rt_free_host(ctx.get(), b));
  for (void *p : {back, dev, devBig})
    EXPECT_OK(offload_rt_device_free(ctx.get(), p, stream));
}

TEST_F(Runtime, CudaFailureNamesTheCall) {
  start(testOptions());
  void *p = nullptr;
  // An impossible allocation fails cleanly (no sticky device error).
  EXPECT_EQ(offload_rt_device_alloc(ctx.get(), size_t(1) << 60, stream, &p),
            OFFLOAD_RT_ERROR_BACKEND);
  EXPECT_TRUE(contains(offload_rt_last_error(), "cudaMallocAsync failed: "))
      << offload_rt_last_error();
}

//===--- copy groups ------------------------------------------------------===//

/// The bytes a member takes in its group's block (256-byte units).
uint64_t rounded(size_t bytes) {
  return std::max<uint64_t>(1, (bytes + 255) / 256) * 256;
}

uint64_t blockBytes(const std::vector<size_t> &sizes) {
  uint64_t total = 0;
  for (size_t s : sizes)
    total += rounded(s);
  return total;
}

/// Copy groups over device sources of different sizes.
class CopyGroup : public Runtime {
protected:
  /// Device buffers holding pattern(sizes[i], seed + i).
  void makeSources(const std::vector<size_t> &sizes, uint32_t seed) {
    for (size_t i = 0; i < sizes.size(); ++i) {
      data.push_back(pattern(sizes[i], seed + uint32_t(i)));
      dev.push_back(deviceFrom(ctx.get(), stream, data.back()));
      bytes.push_back(sizes[i]);
      owned.push_back(true);
    }
  }
  uint64_t totalBytes() const {
    uint64_t total = 0;
    for (size_t b : bytes)
      total += b;
    return total;
  }
  /// Offloads every source as one group.
  std::vector<offload_rt_host_buffer *>
  offloadAll(offload_rt_status expected = OFFLOAD_RT_SUCCESS) {
    std::vector<offload_rt_host_buffer *> bufs(dev.size());
    EXPECT_EQ(offload_rt_offload_group(ctx.get(), dev.size(), dev.data(),
                                       bytes.data(), stream, bufs.data()),
              expected)
        << offload_rt_last_error();
    return bufs;
  }
  void blockWaitsForLoad(bool groupLoad);
  void TearDown() override {
    if (ctx) {
      EXPECT_OK(offload_rt_synchronize(ctx.get())); // no copy reads them
      for (size_t i = 0; i < dev.size(); ++i)
        if (owned[i]) {
          EXPECT_OK(offload_rt_device_free(
              ctx.get(), const_cast<void *>(dev[i]), stream));
        }
    }
    Runtime::TearDown();
  }

  std::vector<std::vector<uint8_t>> data;
  std::vector<const void *> dev;
  std::vector<size_t> bytes;
  std::vector<bool> owned; // freed at TearDown (not handed to the runtime)
};

TEST_F(CopyGroup, RoundTripKeepsEachMembersBytes) {
  start(testOptions());
  makeSources({64 * 1024, 1, 100003, 256 * 1024 + 7, 4096}, 20);
  const size_t n = dev.size();
  std::vector<offload_rt_host_buffer *> bufs = offloadAll();
  // One block: the members side by side, each at a 256-byte aligned offset.
  std::vector<uint8_t *> host(n);
  for (size_t i = 0; i < n; ++i) {
    void *p = nullptr;
    ASSERT_OK(offload_rt_host_data(ctx.get(), bufs[i], 1, &p));
    host[i] = static_cast<uint8_t *>(p);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 256, 0u) << "member " << i;
    EXPECT_TRUE(hostBytes(bufs[i], bytes[i]) == data[i]) << "member " << i;
  }
  for (size_t i = 0; i + 1 < n; ++i)
    EXPECT_EQ(uint64_t(host[i + 1] - host[i]), rounded(bytes[i]));
  offload_rt_stats s = stats();
  EXPECT_EQ(s.d2h_copies, n); // statistics count each member
  EXPECT_EQ(s.d2h_bytes, totalBytes());
  EXPECT_EQ(s.pinned_in_use_bytes, blockBytes(bytes));
  EXPECT_EQ(s.host_live_bytes, totalBytes());

  // Back as one group, in another order, one member twice, one partly.
  std::vector<size_t> from = {4, 2, 0, 3, 1, 2};
  std::vector<offload_rt_host_buffer *> order;
  std::vector<size_t> sizes;
  for (size_t i : from) {
    order.push_back(bufs[i]);
    sizes.push_back(bytes[i]);
  }
  sizes[2] = 1000; // the first 1000 bytes of member 0
  std::vector<void *> back(order.size());
  std::vector<offload_rt_token *> tokens(order.size());
  ASSERT_OK(offload_rt_load_group_start(ctx.get(), order.size(), order.data(),
                                        sizes.data(), stream, back.data(),
                                        tokens.data()));
  for (offload_rt_token *t : tokens)
    ASSERT_OK(offload_rt_wait(ctx.get(), t, stream));
  for (size_t k = 0; k < order.size(); ++k) {
    std::vector<uint8_t> expected(data[from[k]].begin(),
                                  data[from[k]].begin() + sizes[k]);
    EXPECT_TRUE(hostFrom(ctx.get(), stream, back[k], sizes[k]) == expected)
        << "load " << k << " (member " << from[k] << ")";
  }
  ASSERT_OK(offload_rt_synchronize(ctx.get()));
  s = stats();
  EXPECT_EQ(s.h2d_copies, order.size());
  EXPECT_EQ(s.waits, order.size());
  for (void *p : back)
    EXPECT_OK(offload_rt_device_free(ctx.get(), p, stream));
  for (auto *b : bufs)
    EXPECT_OK(offload_rt_free_host(ctx.get(), b));
  ASSERT_OK(offload_rt_synchronize(ctx.get()));
  EXPECT_EQ(stats().pinned_in_use_bytes, 0u);
}

TEST_F(CopyGroup, GroupOfOneIsAnOrdinaryOffload) {
  start(testOptions());
  makeSources({5000}, 21);
  std::vector<offload_rt_host_buffer *> bufs = offloadAll();
  EXPECT_TRUE(hostBytes(bufs[0], bytes[0]) == data[0]);
  EXPECT_EQ(stats().pinned_in_use_bytes, rounded(5000));
  void *back = nullptr;
  ASSERT_OK(offload_rt_load(ctx.get(), bufs[0], nullptr, bytes[0], stream,
                            &back));
  EXPECT_TRUE(hostFrom(ctx.get(), stream, back, bytes[0]) == data[0]);
  EXPECT_OK(offload_rt_free_host(ctx.get(), bufs[0]));
  EXPECT_OK(offload_rt_device_free(ctx.get(), back, stream));
  ASSERT_OK(offload_rt_synchronize(ctx.get()));
  EXPECT_EQ(stats().pinned_in_use_bytes, 0u);
}

// The sim runs a batch as one task: its latency is paid once per group, not
// once per member.
TEST_F(CopyGroup, SimPaysTheLatencyOncePerGroup) {
  if (testOptions().backend != OFFLOAD_RT_BACKEND_SIM)
    GTEST_SKIP() << "times the sim's copy latency";
  start(slowCopies(20000));
  makeSources({4096, 8192, 100, 65536, 3000}, 22);
  std::vector<offload_rt_host_buffer *> bufs = offloadAll();
  std::vector<void *> back(bufs.size());
  std::vector<offload_rt_token *> tokens(bufs.size());
  ASSERT_OK(offload_rt_load_group_start(ctx.get(), bufs.size(), bufs.data(),
                                        bytes.data(), stream, back.data(),
                                        tokens.data()));
  for (offload_rt_token *t : tokens)
    ASSERT_OK(offload_rt_wait(ctx.get(), t, stream));
  ASSERT_OK(offload_rt_stream_synchronize(ctx.get(), stream));
  ASSERT_OK(offload_rt_synchronize(ctx.get()));
  offload_rt_stats s = stats();
  EXPECT_GE(s.d2h_ms, 19.0);
  EXPECT_LT(s.d2h_ms, 60.0) << "5 copies of 20 ms each would take 100";
  EXPECT_GE(s.h2d_ms, 19.0);
  EXPECT_LT(s.h2d_ms, 60.0);
  for (size_t i = 0; i < bufs.size(); ++i) {
    EXPECT_TRUE(hostFrom(ctx.get(), stream, back[i], bytes[i]) == data[i]);
    EXPECT_OK(offload_rt_device_free(ctx.get(), back[i], stream));
    EXPECT_OK(offload_rt_free_host(ctx.get(), bufs[i]));
  }
}

// The block is shared: freed members' parts are not handed out again, and
// the block returns to the pool with the last member, in any order.
TEST_F(CopyGroup, BlockReturnsToThePoolAfterItsLastMember) {
  std::vector<size_t> sizes = {64 * 1024, 1, 100003, 256 * 1024 + 7, 4096};
  offload_rt_options opts = testOptions();
  opts.pool_initial_bytes = blockBytes(sizes); // exactly the group's block
  opts.pool_growable = 0;
  start(opts);
  makeSources(sizes, 23);
  std::vector<offload_rt_host_buffer *> bufs = offloadAll();
  ASSERT_OK(offload_rt_synchronize(ctx.get()));
  uint64_t live = totalBytes();
  for (size_t i : {3, 0, 4, 1}) {
    ASSERT_OK(offload_rt_free_host(ctx.get(), bufs[i]));
    ASSERT_OK(offload_rt_synchronize(ctx.get()));
    live -= bytes[i];
    offload_rt_stats s = stats();
    EXPECT_EQ(s.pinned_in_use_bytes, blockBytes(sizes))
        << "after freeing member " << i;
    EXPECT_EQ(s.host_live_bytes, live) << "after freeing member " << i;
  }
  // The pool is still full: a new offload stays on the device, and the last
  // member's bytes are intact.
  offload_rt_host_buffer *other = nullptr;
  {
    StderrCapture err;
    EXPECT_EQ(offload_rt_offload(ctx.get(), dev[0], bytes[0], stream, &other),
              OFFLOAD_RT_KEPT_ON_DEVICE);
  }
  EXPECT_OK(offload_rt_free_host(ctx.get(), other));
  EXPECT_TRUE(hostBytes(bufs[2], bytes[2]) == data[2]);

  ASSERT_OK(offload_rt_free_host(ctx.get(), bufs[2]));
  ASSERT_OK(offload_rt_synchronize(ctx.get()));
  offload_rt_stats s = stats();
  EXPECT_EQ(s.pinned_in_use_bytes, 0u);
  EXPECT_EQ(s.host_live_bytes, 0u);
  EXPECT_EQ(s.pinned_peak_in_use_bytes, blockBytes(sizes));
  // The whole block is free again: the same group fits once more.
  bufs = offloadAll();
  for (size_t i = 0; i < bufs.size(); ++i) {
    EXPECT_TRUE(hostBytes(bufs[i], bytes[i]) == data[i]);
    EXPECT_OK(offload_rt_free_host(ctx.get(), bufs[i]));
  }
  EXPECT_EQ(stats().fallbacks, 1u);
}

// Guarantee 5 for groups: the block is reused only once the loads from
// every member completed, even after all members were freed. The pool holds
// the group's block only, so the next offload must wait for it. The load is
// a single load_start, or a load group.
void CopyGroup::blockWaitsForLoad(bool groupLoad) {
  std::vector<size_t> sizes = {4096, 8192};
  offload_rt_options opts = slowCopies(40000);
  opts.pool_initial_bytes = blockBytes(sizes);
  opts.pool_growable = 0;
  start(opts);
  makeSources(sizes, 24);
  // Made first: with slow sim copies, making it takes as long as the load.
  auto more = pattern(blockBytes(sizes), 25);
  void *devMore = deviceFrom(ctx.get(), stream, more);
  std::vector<offload_rt_host_buffer *> bufs = offloadAll();
  ASSERT_OK(offload_rt_synchronize(ctx.get()));
  void *back = nullptr;
  offload_rt_token *loading = nullptr;
  if (groupLoad) {
    ASSERT_OK(offload_rt_load_group_start(ctx.get(), 1, &bufs[1], &bytes[1],
                                          stream, &back, &loading));
  } else {
    ASSERT_OK(offload_rt_load_start(ctx.get(), bufs[1], nullptr, bytes[1],
                                    stream, &back, &loading));
  }
  ASSERT_OK(offload_rt_free_host(ctx.get(), bufs[0]));
  ASSERT_OK(offload_rt_free_host(ctx.get(), bufs[1])); // its load still runs
  offload_rt_host_buffer *next = nullptr;
  ASSERT_OK(offload_rt_offload(ctx.get(), devMore, more.size(), stream, &next));
  ASSERT_OK(offload_rt_wait(ctx.get(), loading, stream));
  EXPECT_TRUE(hostFrom(ctx.get(), stream, back, bytes[1]) == data[1]);
  EXPECT_TRUE(hostBytes(next, more.size()) == more);
  if (isSim(ctx.get())) {
    EXPECT_EQ(stats().pool_stalls, 1u);
  }
  EXPECT_EQ(stats().fallbacks, 0u);
  EXPECT_OK(offload_rt_free_host(ctx.get(), next));
  for (void *p : {back, devMore})
    EXPECT_OK(offload_rt_device_free(ctx.get(), p, stream));
}

TEST_F(CopyGroup, BlockIsNotReusedBeforeALoadFromAMemberCompletes) {
  blockWaitsForLoad(/*groupLoad=*/false);
}

TEST_F(CopyGroup, BlockIsNotReusedBeforeALoadGroupCompletes) {
  blockWaitsForLoad(/*groupLoad=*/true);
}

// Guarantees 1-3 for groups: the batched offload sees compute's earlier
// writes, the batched load waits for the (slow) offload, compute for the load.
TEST_F(CopyGroup, KeepsTheOrderingGuarantees) {
  start(slowCopies(30000));
  makeSources({32768, 1000, 65536}, 26);
  const size_t n = dev.size();
  std::vector<std::vector<uint8_t>> after;
  for (size_t i = 0; i < n; ++i)
    after.push_back(pattern(bytes[i], 60 + uint32_t(i)));
  // Compute is busy for 50 ms, then overwrites every source.
  ASSERT_OK(offload_rt_stream_enqueue_host_fn(ctx.get(), stream, sleepMs,
                                              reinterpret_cast<void *>(50)));
  for (size_t i = 0; i < n; ++i)
    ASSERT_OK(offload_rt_memcpy_async(ctx.get(), const_cast<void *>(dev[i]),
                                      after[i].data(), bytes[i], stream));
  std::vector<offload_rt_host_buffer *> bufs = offloadAll();
  std::vector<void *> back(n);
  std::vector<offload_rt_token *> tokens(n);
  ASSERT_OK(offload_rt_load_group_start(ctx.get(), n, bufs.data(),
                                        bytes.data(), stream, back.data(),
                                        tokens.data()));
  for (offload_rt_token *t : tokens)
    ASSERT_OK(offload_rt_wait(ctx.get(), t, stream));
  // Enqueued right away on compute: must run after both batches.
  for (size_t i = 0; i < n; ++i) {
    EXPECT_TRUE(hostFrom(ctx.get(), stream, back[i], bytes[i]) == after[i])
        << "member " << i;
    EXPECT_TRUE(hostBytes(bufs[i], bytes[i]) == after[i]) << "member " << i;
  }
  ASSERT_OK(offload_rt_synchronize(ctx.get()));
  offload_rt_stats s = stats();
  EXPECT_EQ(s.waits, n);
  if (isSim(ctx.get())) { // compute stood still for most of two copies
    EXPECT_GT(s.wait_ms, 30.0);
  }
  for (size_t i = 0; i < n; ++i) {
    EXPECT_OK(offload_rt_free_host(ctx.get(), bufs[i]));
    EXPECT_OK(offload_rt_device_free(ctx.get(), back[i], stream));
  }
}

// Guarantee 4 per member: each member's device buffer is released on its
// own, after the group's copy (the sim poisons freed memory).
TEST_F(CopyGroup, MembersHandOverTheirDeviceBuffersAfterTheCopy) {
  start(slowCopies(20000));
  makeSources({65536, 4096, 20000}, 27);
  std::vector<offload_rt_host_buffer *> bufs = offloadAll();
  for (size_t i : {0, 2}) {
    ASSERT_OK(offload_rt_free_device_after_copy(ctx.get(), bufs[i]));
    owned[i] = false;
  }
  ReleaseProbe probe;
  probe.expected = data[1];
  probe.device = dev[1];
  void *host = nullptr;
  ASSERT_OK(offload_rt_host_data(ctx.get(), bufs[1], 0, &host));
  probe.host = static_cast<const uint8_t *>(host);
  ASSERT_OK(offload_rt_release_device_after_copy(ctx.get(), bufs[1],
                                                 probeRelease, &probe));
  ASSERT_OK(offload_rt_poll(ctx.get()));
  if (isSim(ctx.get())) { // the copy takes 20 ms: too early to release
    EXPECT_EQ(probe.calls.load(), 0);
  }
  for (size_t i = 0; i < bufs.size(); ++i)
    EXPECT_TRUE(hostBytes(bufs[i], bytes[i]) == data[i]) << "member " << i;
  ASSERT_OK(offload_rt_synchronize(ctx.get()));
  EXPECT_EQ(probe.calls.load(), 1);
  EXPECT_TRUE(probe.copyWasComplete.load());
  EXPECT_TRUE(probe.rightPointer.load());
  EXPECT_EQ(stats().device_releases, 3u);
  for (auto *b : bufs)
    EXPECT_OK(offload_rt_free_host(ctx.get(), b));
}

// A group the pool cannot hold keeps every member on the device, as one
// offload would; kept members load (also mixed with pinned ones in a group)
// and release their device buffers at free_host.
TEST_F(CopyGroup, PoolTooSmallKeepsEveryMemberOnDevice) {
  offload_rt_options opts = testOptions();
  opts.pool_initial_bytes = kMiB;
  opts.pool_growable = 0;
  start(opts);
  makeSources({512 * 1024, 512 * 1024, 300 * 1024, 256 * 1024}, 28);
  // The last source alone, first: it fits and leaves 768 KiB.
  offload_rt_host_buffer *single = nullptr;
  ASSERT_OK(offload_rt_offload(ctx.get(), dev[3], bytes[3], stream, &single));
  std::vector<offload_rt_host_buffer *> bufs(3);
  StderrCapture err;
  EXPECT_EQ(offload_rt_offload_group(ctx.get(), 3, dev.data(), bytes.data(),
                                     stream, bufs.data()),
            OFFLOAD_RT_KEPT_ON_DEVICE);
  std::string warning = err.take();
  EXPECT_TRUE(contains(warning, "pinned pool exhausted")) << warning;
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(bufs[i] != nullptr);
    void *host = &host;
    EXPECT_OK(offload_rt_host_data(ctx.get(), bufs[i], 1, &host));
    EXPECT_EQ(host, nullptr);
  }
  offload_rt_stats s = stats();
  EXPECT_EQ(s.fallbacks, 3u);
  EXPECT_EQ(s.d2h_copies, 1u);
  EXPECT_EQ(s.pinned_in_use_bytes, rounded(bytes[3]));

  // One load group: kept members copy on the device, the pinned one over
  // the link.
  std::vector<offload_rt_host_buffer *> order = {bufs[0], single, bufs[2],
                                                 bufs[1]};
  std::vector<size_t> from = {0, 3, 2, 1}, sizes;
  for (size_t i : from)
    sizes.push_back(bytes[i]);
  std::vector<void *> back(order.size());
  std::vector<offload_rt_token *> tokens(order.size());
  ASSERT_OK(offload_rt_load_group_start(ctx.get(), order.size(), order.data(),
                                        sizes.data(), stream, back.data(),
                                        tokens.data()));
  for (offload_rt_token *t : tokens)
    ASSERT_OK(offload_rt_wait(ctx.get(), t, stream));
  for (size_t k = 0; k < order.size(); ++k)
    EXPECT_TRUE(hostFrom(ctx.get(), stream, back[k], sizes[k]) ==
                data[from[k]])
        << "load " << k;

  // Their device buffers are the data: released at free_host.
  ReleaseProbe probe;
  probe.device = dev[0];
  ASSERT_OK(offload_rt_release_device_after_copy(ctx.get(), bufs[0],
                                                 probeRelease, &probe));
  ASSERT_OK(offload_rt_free_device_after_copy(ctx.get(), bufs[1]));
  owned[1] = false;
  ASSERT_OK(offload_rt_synchronize(ctx.get()));
  EXPECT_EQ(probe.calls.load(), 0);
  EXPECT_EQ(stats().device_releases, 0u);
  for (auto *b : {bufs[0], bufs[1], bufs[2], single})
    EXPECT_OK(offload_rt_free_host(ctx.get(), b));
  EXPECT_OK(offload_rt_stream_synchronize(ctx.get(), stream));
  EXPECT_EQ(probe.calls.load(), 1);
  EXPECT_TRUE(probe.rightPointer.load());
  EXPECT_EQ(stats().device_releases, 2u);
  for (void *p : back)
    EXPECT_OK(offload_rt_device_free(ctx.get(), p, stream));
}

TEST_F(CopyGroup, ArgumentsAndHandlesAreChecked) {
  start(testOptions()); // checks on
  makeSources({256, 512, 1024}, 29);
  offload_rt_host_buffer *marker = reinterpret_cast<offload_rt_host_buffer *>(
      uintptr_t(0x1234));
  std::vector<offload_rt_host_buffer *> bufs(3, marker);
  auto outputsCleared = [&] {
    for (auto *b : bufs)
      if (b)
        return false;
    return true;
  };
  auto offload = [&](size_t n, const void *const *d, const size_t *b) {
    std::fill(bufs.begin(), bufs.end(), marker);
    return offload_rt_offload_group(ctx.get(), n, d, b, stream, bufs.data());
  };
  auto lastError = [] { return std::string(offload_rt_last_error()); };

  EXPECT_EQ(offload(0, dev.data(), bytes.data()),
            OFFLOAD_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "offload_rt_offload_group: n is 0");
  EXPECT_EQ(offload(3, nullptr, bytes.data()),
            OFFLOAD_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "offload_rt_offload_group: device_ptrs is NULL");
  EXPECT_TRUE(outputsCleared());
  EXPECT_EQ(offload(3, dev.data(), nullptr), OFFLOAD_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "offload_rt_offload_group: bytes is NULL");
  EXPECT_EQ(offload_rt_offload_group(ctx.get(), 3, dev.data(), bytes.data(),
                                     stream, nullptr),
            OFFLOAD_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "offload_rt_offload_group: out_buffers is NULL");
  std::vector<const void *> withNull = dev;
  withNull[2] = nullptr;
  EXPECT_EQ(offload(3, withNull.data(), bytes.data()),
            OFFLOAD_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "offload_rt_offload_group: device_ptrs[2] is NULL");
  EXPECT_TRUE(outputsCleared());
  std::vector<size_t> huge = {1, SIZE_MAX / 4, SIZE_MAX / 4 + 1};
  EXPECT_EQ(offload(3, dev.data(), huge.data()),
            OFFLOAD_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "the group's size overflows at bytes[2]"))
      << lastError();
  EXPECT_TRUE(outputsCleared());
  // A NULL pointer is fine for zero bytes.
  std::vector<size_t> zero = bytes;
  zero[2] = 0;
  EXPECT_OK(offload(3, withNull.data(), zero.data()));
  for (auto *b : bufs)
    EXPECT_OK(offload_rt_free_host(ctx.get(), b));
  ASSERT_OK(offload_rt_synchronize(ctx.get()));
  EXPECT_EQ(stats().pinned_in_use_bytes, 0u);

  // Loads.
  std::vector<offload_rt_host_buffer *> good = offloadAll();
  offload_rt_host_buffer *released = nullptr;
  ASSERT_OK(offload_rt_offload(ctx.get(), dev[0], bytes[0], stream, &released));
  ASSERT_OK(offload_rt_free_host(ctx.get(), released));
  ASSERT_OK(offload_rt_synchronize(ctx.get()));
  const offload_rt_stats before = stats();
  std::vector<void *> back(3);
  std::vector<offload_rt_token *> tokens(3);
  auto load = [&](size_t n, std::vector<offload_rt_host_buffer *> members,
                  const size_t *b) {
    std::fill(back.begin(), back.end(), reinterpret_cast<void *>(1));
    std::fill(tokens.begin(), tokens.end(),
              reinterpret_cast<offload_rt_token *>(1));
    return offload_rt_load_group_start(ctx.get(), n, members.data(), b,
                                       stream, back.data(), tokens.data());
  };
  auto loadOutputsCleared = [&] {
    for (size_t i = 0; i < 3; ++i)
      if (back[i] || tokens[i])
        return false;
    return true;
  };
  EXPECT_EQ(load(0, good, bytes.data()), OFFLOAD_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "offload_rt_load_group_start: n is 0");
  EXPECT_EQ(offload_rt_load_group_start(ctx.get(), 3, nullptr, bytes.data(),
                                        stream, back.data(), tokens.data()),
            OFFLOAD_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "offload_rt_load_group_start: buffers is NULL");
  EXPECT_TRUE(loadOutputsCleared());
  EXPECT_EQ(load(3, good, nullptr), OFFLOAD_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "offload_rt_load_group_start: bytes is NULL");
  EXPECT_EQ(offload_rt_load_group_start(ctx.get(), 3, good.data(),
                                        bytes.data(), stream, nullptr,
                                        tokens.data()),
            OFFLOAD_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(),
            "offload_rt_load_group_start: out_device_ptrs is NULL");

  EXPECT_EQ(load(3, {good[0], released, good[2]}, bytes.data()),
            OFFLOAD_RT_ERROR_INVALID_HANDLE);
  EXPECT_TRUE(contains(lastError(), "use after release")) << lastError();
  EXPECT_TRUE(contains(lastError(), "(buffers[1])")) << lastError();
  EXPECT_TRUE(loadOutputsCleared());
  int notAHandle = 0;
  EXPECT_EQ(load(3,
                 {reinterpret_cast<offload_rt_host_buffer *>(&notAHandle),
                  good[1], good[2]},
                 bytes.data()),
            OFFLOAD_RT_ERROR_INVALID_HANDLE);
  EXPECT_TRUE(contains(lastError(), "not a host buffer of this context "
                                    "(buffers[0])"))
      << lastError();
  EXPECT_EQ(load(3, {good[0], good[1], nullptr}, bytes.data()),
            OFFLOAD_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "offload_rt_load_group_start: host buffer is NULL "
                         "(buffers[2])");
  std::vector<size_t> tooMany = bytes;
  tooMany[1] += 1;
  EXPECT_EQ(load(3, good, tooMany.data()), OFFLOAD_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "offload_rt_load_group_start: 513 bytes requested "
                         "from a host buffer of 512 (buffers[1])");
  EXPECT_TRUE(loadOutputsCleared());

  // Nothing was copied, allocated or waited on; the group still loads.
  ASSERT_OK(offload_rt_synchronize(ctx.get()));
  offload_rt_stats s = stats();
  EXPECT_EQ(s.h2d_copies, before.h2d_copies);
  EXPECT_EQ(s.device_in_use_bytes, before.device_in_use_bytes);
  ASSERT_OK(load(3, good, bytes.data()));
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_OK(offload_rt_wait(ctx.get(), tokens[i], stream));
    EXPECT_TRUE(hostFrom(ctx.get(), stream, back[i], bytes[i]) == data[i]);
    EXPECT_OK(offload_rt_device_free(ctx.get(), back[i], stream));
    EXPECT_OK(offload_rt_free_host(ctx.get(), good[i]));
  }
}

TEST_F(CopyGroup, BackendFailuresLeaveNothingBehind) {
  if (testOptions().backend != OFFLOAD_RT_BACKEND_SIM)
    GTEST_SKIP() << "failure injection is a sim feature";
  offload_rt_options opts = testOptions();
  opts.pool_initial_bytes = kMiB;
  start(opts);
  makeSources({4096, 8192, 100}, 30);
  const size_t n = dev.size();

  // A failed batch returns the block to the pool and gives no handles.
  ASSERT_OK(
      offload_rt_sim_inject_failure(ctx.get(), "cudaMemcpyBatchAsync", 1));
  std::vector<offload_rt_host_buffer *> bufs =
      offloadAll(OFFLOAD_RT_ERROR_BACKEND);
  EXPECT_EQ(std::string(offload_rt_last_error()),
            "cudaMemcpyBatchAsync failed: injected failure (sim)");
  for (auto *b : bufs)
    EXPECT_EQ(b, nullptr);
  // So does a failed wait on the compute stream's event.
  ASSERT_OK(offload_rt_sim_inject_failure(ctx.get(), "cudaEventRecord", 1));
  bufs = offloadAll(OFFLOAD_RT_ERROR_BACKEND);
  for (auto *b : bufs)
    EXPECT_EQ(b, nullptr);
  offload_rt_stats s = stats();
  EXPECT_EQ(s.pinned_in_use_bytes, 0u);
  EXPECT_EQ(s.host_live_bytes, 0u);
  EXPECT_EQ(s.d2h_copies, 0u);

  bufs = offloadAll();
  ASSERT_OK(offload_rt_synchronize(ctx.get()));
  const uint64_t base = stats().device_in_use_bytes;
  std::vector<void *> back(n);
  std::vector<offload_rt_token *> tokens(n);
  auto load = [&] {
    return offload_rt_load_group_start(ctx.get(), n, bufs.data(),
                                       bytes.data(), stream, back.data(),
                                       tokens.data());
  };
  // All members pinned: one device allocation for the group. It fails:
  // nothing is allocated.
  ASSERT_OK(offload_rt_sim_inject_failure(ctx.get(), "cudaMallocAsync", 1));
  EXPECT_EQ(load(), OFFLOAD_RT_ERROR_BACKEND);
  EXPECT_EQ(std::string(offload_rt_last_error()),
            "cudaMallocAsync failed: injected failure (sim)");
  // The members are one offload group's, in order: one plain copy of their
  // run. It fails: the allocation is freed again.
  ASSERT_OK(offload_rt_sim_inject_failure(ctx.get(), "cudaMemcpyAsync", 1));
  EXPECT_EQ(load(), OFFLOAD_RT_ERROR_BACKEND);
  EXPECT_EQ(std::string(offload_rt_last_error()),
            "cudaMemcpyAsync failed: injected failure (sim)");
  // In another order they are no run: one batched copy. It fails too.
  std::vector<offload_rt_host_buffer *> reversed(bufs.rbegin(), bufs.rend());
  std::vector<size_t> reversedBytes(bytes.rbegin(), bytes.rend());
  ASSERT_OK(
      offload_rt_sim_inject_failure(ctx.get(), "cudaMemcpyBatchAsync", 1));
  EXPECT_EQ(offload_rt_load_group_start(ctx.get(), n, reversed.data(),
                                        reversedBytes.data(), stream,
                                        back.data(), tokens.data()),
            OFFLOAD_RT_ERROR_BACKEND);
  EXPECT_EQ(std::string(offload_rt_last_error()),
            "cudaMemcpyBatchAsync failed: injected failure (sim)");
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(back[i], nullptr);
    EXPECT_EQ(tokens[i], nullptr);
  }
  ASSERT_OK(offload_rt_stream_synchronize(ctx.get(), stream));
  ASSERT_OK(offload_rt_synchronize(ctx.get()));
  EXPECT_EQ(stats().device_in_use_bytes, base);
  EXPECT_EQ(stats().h2d_copies, 0u);

  // The buffers stay loadable.
  ASSERT_OK(load());
  for (size_t i = 0; i < n; ++i) {
    ASSERT_OK(offload_rt_wait(ctx.get(), tokens[i], stream));
    EXPECT_TRUE(hostFrom(ctx.get(), stream, back[i], bytes[i]) == data[i]);
    EXPECT_OK(offload_rt_device_free(ctx.get(), back[i], stream));
    EXPECT_OK(offload_rt_free_host(ctx.get(), bufs[i]));
  }
  ASSERT_OK(offload_rt_synchronize(ctx.get()));
  EXPECT_EQ(stats().pinned_in_use_bytes, 0u);
}

// A load group of one offload group's members, in order, is one device
// allocation filled by one copy; it returns with its last member, whatever
// the order the members are freed in.
TEST_F(CopyGroup, LoadGroupSharesOneDeviceAllocation) {
  start(testOptions());
  makeSources({64 * 1024, 3000, 256 * 1024 + 7}, 60);
  const size_t n = dev.size();
  std::vector<offload_rt_host_buffer *> bufs = offloadAll();
  ASSERT_OK(offload_rt_synchronize(ctx.get()));
  const offload_rt_stats before = stats();
  std::vector<void *> back(n);
  std::vector<offload_rt_token *> tokens(n);
  ASSERT_OK(offload_rt_load_group_start(ctx.get(), n, bufs.data(),
                                        bytes.data(), stream, back.data(),
                                        tokens.data()));
  for (size_t i = 0; i < n; ++i) {
    ASSERT_OK(offload_rt_wait(ctx.get(), tokens[i], stream));
    EXPECT_TRUE(hostFrom(ctx.get(), stream, back[i], bytes[i]) == data[i]);
    if (i > 0) { // side by side, at the offload group's offsets
      auto hostAt = [&](size_t k) {
        void *p = nullptr;
        offload_rt_host_data(ctx.get(), bufs[k], 0, &p);
        return static_cast<const char *>(p);
      };
      EXPECT_EQ(static_cast<char *>(back[i]) - static_cast<char *>(back[0]),
                hostAt(i) - hostAt(0));
    }
  }
  ASSERT_OK(offload_rt_synchronize(ctx.get()));
  offload_rt_stats loaded = stats();
  // Counted per member; one allocation for all of them.
  EXPECT_EQ(loaded.h2d_copies - before.h2d_copies, n);
  EXPECT_EQ(loaded.h2d_bytes - before.h2d_bytes, totalBytes());
  const uint64_t held = loaded.device_in_use_bytes - before.device_in_use_bytes;
  EXPECT_GE(held, totalBytes());
  // Freed last to first: the allocation stays until the last one.
  for (size_t i = n; i-- > 1;) {
    EXPECT_OK(offload_rt_device_free(ctx.get(), back[i], stream));
    ASSERT_OK(offload_rt_stream_synchronize(ctx.get(), stream));
    EXPECT_EQ(stats().device_in_use_bytes, loaded.device_in_use_bytes);
  }
  EXPECT_OK(offload_rt_device_free(ctx.get(), back[0], stream));
  ASSERT_OK(offload_rt_stream_synchronize(ctx.get(), stream));
  EXPECT_EQ(stats().device_in_use_bytes, before.device_in_use_bytes);
  for (auto *b : bufs)
    EXPECT_OK(offload_rt_free_host(ctx.get(), b));
}

// Several threads, each with its own compute stream, offload groups and load
// back random subsets of what they hold (members of different groups
// together), freeing the members in random order.
TEST_F(CopyGroup, ConcurrentGroupRoundTripsKeepTheirBytes) {
  offload_rt_options opts = testOptions();
  opts.pool_initial_bytes = 2 * kMiB; // small: growth happens concurrently
  start(opts);
  constexpr int kThreads = 4, kIterations = 30;
  std::atomic<int> mismatches{0}, failures{0};
  std::atomic<uint64_t> offloaded{0}, loaded{0};
  auto worker = [&](int t) {
    offload_rt_context *c = ctx.get();
    void *s = nullptr;
    if (offload_rt_stream_create(c, &s) != OFFLOAD_RT_SUCCESS) {
      ++failures;
      return;
    }
    std::mt19937 rng(300 + t);
    struct Held {
      std::vector<uint8_t> data;
      offload_rt_host_buffer *buf;
    };
    std::vector<Held> held;
    auto loadSome = [&](size_t count) {
      std::shuffle(held.begin(), held.end(), rng);
      count = std::min(count, held.size());
      std::vector<offload_rt_host_buffer *> bufs;
      std::vector<size_t> sizes;
      for (size_t i = 0; i < count; ++i) {
        bufs.push_back(held[i].buf);
        sizes.push_back(held[i].data.size());
      }
      std::vector<void *> back(count);
      std::vector<offload_rt_token *> tokens(count);
      if (offload_rt_load_group_start(c, count, bufs.data(), sizes.data(), s,
                                      back.data(), tokens.data()) < 0) {
        ++failures;
        return;
      }
      loaded += count;
      for (size_t i = 0; i < count; ++i) {
        if (offload_rt_wait(c, tokens[i], s) < 0)
          ++failures;
        if (hostFrom(c, s, back[i], sizes[i]) != held[i].data)
          ++mismatches;
      }
      for (size_t i = count; i-- > 0;)
        if (offload_rt_free_host(c, bufs[i]) < 0 ||
            offload_rt_device_free(c, back[i], s) < 0)
          ++failures;
      held.erase(held.begin(), held.begin() + count);
    };
    for (int i = 0; i < kIterations; ++i) {
      size_t n = 1 + rng() % 5;
      std::vector<Held> group;
      std::vector<const void *> devs;
      std::vector<size_t> sizes;
      for (size_t j = 0; j < n; ++j) {
        size_t b = 1 + rng() % (256 * 1024);
        group.push_back(
            {pattern(b, t * 10000 + i * 10 + uint32_t(j)), nullptr});
        devs.push_back(deviceFrom(c, s, group.back().data));
        sizes.push_back(b);
      }
      std::vector<offload_rt_host_buffer *> bufs(n);
      if (offload_rt_offload_group(c, n, devs.data(), sizes.data(), s,
                                   bufs.data()) != OFFLOAD_RT_SUCCESS) {
        ++failures;
        continue;
      }
      offloaded += n;
      for (size_t j = 0; j < n; ++j) {
        if (offload_rt_free_device_after_copy(c, bufs[j]) < 0)
          ++failures;
        group[j].buf = bufs[j];
        held.push_back(std::move(group[j]));
      }
      if (held.size() > 8 || rng() % 3 == 0)
        loadSome(1 + rng() % 6);
    }
    while (!held.empty())
      loadSome(6);
    if (offload_rt_stream_destroy(c, s) < 0)
      ++failures;
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back(worker, t);
  for (auto &th : threads)
    th.join();
  EXPECT_EQ(failures.load(), 0) << offload_rt_last_error();
  EXPECT_EQ(mismatches.load(), 0);
  ASSERT_OK(offload_rt_synchronize(ctx.get()));
  offload_rt_stats s = stats();
  EXPECT_EQ(s.d2h_copies, offloaded.load());
  EXPECT_EQ(s.h2d_copies, loaded.load());
  EXPECT_EQ(loaded.load(), offloaded.load());
  EXPECT_EQ(s.fallbacks, 0u);
  EXPECT_EQ(s.pinned_in_use_bytes, 0u);
  EXPECT_EQ(s.host_live_bytes, 0u);
  EXPECT_EQ(s.device_releases, offloaded.load());
}

// What compiled code calls: the default context, handles and tokens as
// `void *`, each used on its own afterwards.
TEST(MlirWrappers, CopyGroupEntryPoints) {
  offload_rt_options opts = testOptions();
  ASSERT_OK(offload_rt_init(&opts));
  void *stream = nullptr;
  ASSERT_OK(offload_rt_stream_create(nullptr, &stream));
  offload_rt_mlir_set_compute_stream(stream);
  std::vector<std::vector<uint8_t>> data = {pattern(3000, 40),
                                            pattern(70000, 41),
                                            pattern(256, 42)};
  void *dev[3];
  int64_t bytes[3];
  for (size_t i = 0; i < 3; ++i) {
    dev[i] = deviceFrom(nullptr, stream, data[i]);
    bytes[i] = int64_t(data[i].size());
  }
  void *handles[3] = {};
  offload_rt_mlir_offload_group_start(3, dev, bytes, stream, handles);
  for (size_t i = 0; i < 3; ++i)
    ASSERT_TRUE(handles[i] != nullptr);
  void *tokens[3] = {};
  offload_rt_mlir_load_group_start(3, handles, bytes, stream, tokens);
  for (size_t i = 0; i < 3; ++i) {
    void *back = offload_rt_mlir_wait(tokens[i], stream);
    EXPECT_TRUE(hostFrom(nullptr, stream, back, data[i].size()) == data[i]);
    EXPECT_OK(offload_rt_device_free(nullptr, back, stream));
  }
  for (size_t i = 0; i < 3; ++i) {
    offload_rt_mlir_free_host(handles[i]);
    EXPECT_OK(offload_rt_device_free(nullptr, dev[i], stream));
  }
  ASSERT_OK(offload_rt_synchronize(nullptr));
  offload_rt_stats s{};
  ASSERT_OK(offload_rt_get_stats(nullptr, &s));
  EXPECT_EQ(s.d2h_copies, 3u);
  EXPECT_EQ(s.h2d_copies, 3u);
  EXPECT_EQ(s.pinned_in_use_bytes, 0u);
  offload_rt_mlir_set_compute_stream(nullptr);
  EXPECT_OK(offload_rt_stream_destroy(nullptr, stream));
  EXPECT_OK(offload_rt_shutdown());
}

//===--- contexts and options ---------------------------------------------===//

TEST(DefaultContext, NullContextMeansTheProcessDefault) {
  offload_rt_options opts = testOptions();
  ASSERT_OK(offload_rt_init(&opts));
  EXPECT_EQ(offload_rt_init(&opts), OFFLOAD_RT_ERROR_INVALID_ARGUMENT);
  void *stream = nullptr;
  ASSERT_OK(offload_rt_stream_create(nullptr, &stream));
  auto data = pattern(1000, 19);
  void *dev = deviceFrom(nullptr, stream, data);
  offload_rt_host_buffer *buf = nullptr;
  ASSERT_OK(offload_rt_offload(nullptr, dev, data.size(), stream, &buf));
  void *back = nullptr;
  ASSERT_OK(offload_rt_load(nullptr, buf, nullptr, data.size(), stream, &back));
  EXPECT_TRUE(hostFrom(nullptr, stream, back, data.size()) == data);
  EXPECT_OK(offload_rt_free_host(nullptr, buf));
  EXPECT_OK(offload_rt_device_free(nullptr, back, stream));
  EXPECT_OK(offload_rt_device_free(nullptr, dev, stream));
  EXPECT_OK(offload_rt_stream_destroy(nullptr, stream));
  EXPECT_OK(offload_rt_shutdown());
}

TEST(Options, EnvironmentSetsDefaults) {
  setenv("OFFLOAD_RT_POOL_BYTES", "1.5G", 1);
  setenv("OFFLOAD_RT_POOL_GROWABLE", "0", 1);
  setenv("OFFLOAD_RT_MAX_IN_FLIGHT", "8", 1);
  offload_rt_options opts;
  offload_rt_options_init(&opts);
  EXPECT_EQ(opts.pool_initial_bytes, 3 * 512 * kMiB);
  EXPECT_EQ(opts.pool_growable, 0);
  EXPECT_EQ(opts.max_in_flight, 8u);
  setenv("OFFLOAD_RT_POOL_BYTES", "64MiB", 1);
  offload_rt_options_init(&opts);
  EXPECT_EQ(opts.pool_initial_bytes, 64 * kMiB);
  // The passes' spelling (offload_support::parseByteSize): GB is decimal.
  setenv("OFFLOAD_RT_POOL_BYTES", "2GB", 1);
  offload_rt_options_init(&opts);
  EXPECT_EQ(opts.pool_initial_bytes, 2000000000u);
  {
    StderrCapture err;
    setenv("OFFLOAD_RT_POOL_BYTES", "lots", 1);
    offload_rt_options_init(&opts);
    EXPECT_TRUE(contains(err.take(),
                         "offload_rt: warning: ignoring OFFLOAD_RT_POOL_BYTES: "
                         "'lots' is not a byte size"));
  }
  EXPECT_EQ(opts.pool_initial_bytes, 0u);
  {
    StderrCapture err;
    setenv("OFFLOAD_RT_POOL_BYTES", "12XB", 1);
    offload_rt_options_init(&opts);
    EXPECT_TRUE(contains(err.take(), "unknown unit 'XB' in '12XB'"));
  }
  EXPECT_EQ(opts.pool_initial_bytes, 0u);
  unsetenv("OFFLOAD_RT_POOL_BYTES");
  unsetenv("OFFLOAD_RT_POOL_GROWABLE");
  unsetenv("OFFLOAD_RT_MAX_IN_FLIGHT");
  setenv("OFFLOAD_RT_COPY_DELAY_US", "1500", 1);
  offload_rt_options_init(&opts);
  EXPECT_EQ(opts.copy_delay_us, 1500.0);
  unsetenv("OFFLOAD_RT_COPY_DELAY_US");
}

} // namespace
