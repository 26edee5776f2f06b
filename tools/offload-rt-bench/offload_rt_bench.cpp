//===- offload_rt_bench.cpp - offload_rt copies vs plain cudaMemcpyAsync --===//
//
// 1. Bandwidth: for buffers of 1 MiB .. 1 GiB (powers of 4), device->host,
//    host->device and both at once, through offload_rt (offload/load + wait
//    on the compute stream) next to plain cudaMemcpyAsync between the same
//    cudaMalloc'd buffers and cudaHostAlloc'd buffers. Each iteration is
//    timed with CUDA events on the stream that waits for the result, so the
//    runtime's cross-stream event waits are inside its numbers. Best and
//    median of N iterations.
// 2. Overlap: a run of cuBLAS bf16 GEMMs (8192^3 by default) timed alone on
//    the compute stream, then while offload_rt copies 1 GiB each way; the
//    slowdown of the GEMMs is what offloading costs compute.
// 3. Small copies (--mode small): for tensors of 64 KiB, 256 KiB, 1 MiB and
//    4 MiB, --small-mib (256) MiB in tensors of that size, each its own
//    cudaMalloc, moved one offload_rt call per tensor, in copy groups of
//    about --group-mib (32) MiB, and as one group of all; next to one large
//    offload_rt copy of the same total (the reference of the % columns) and a
//    plain cudaMemcpyAsync of it. Each iteration enqueues every copy, then
//    the compute stream waits for the copy stream (an event recorded there
//    after the last copy), timed with CUDA events on the compute stream as
//    above, so the host's enqueueing time is inside the numbers when it is
//    the longer part. Loads allocate their device memory (device_dst NULL,
//    as load groups do). Tokens are not asked for: one wait per copy would
//    be the same in every mode.
//
// Usage: offload_rt_bench [--mode default|small|all] [--iters N]
//                         [--max-mib M] [--gemm N] [--rounds R]
//                         [--small-mib T] [--group-mib G]
//   default: parts 1 and 2 (and the call overhead); small: part 3; all: both.
//
//===----------------------------------------------------------------------===//

#include "offload_rt/offload_rt.h"

#include <cuda_runtime.h>
#ifdef OFFLOAD_RT_BENCH_CUBLAS
#include <cublas_v2.h>
#include <cuda_bf16.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace {

void checkCuda(cudaError_t err, const char *what) {
  if (err != cudaSuccess) {
    std::fprintf(stderr, "%s failed: %s\n", what, cudaGetErrorString(err));
    std::exit(1);
  }
}
#define CUDA(call) checkCuda((call), #call)

void checkRt(offload_rt_status st, const char *what) {
  if (st < 0) {
    std::fprintf(stderr, "%s failed: %s\n", what, offload_rt_last_error());
    std::exit(1);
  }
}
#define RT(call) checkRt((call), #call)

/// An offload that must really copy: KEPT_ON_DEVICE would time nothing.
void checkCopied(offload_rt_status st, const char *what) {
  checkRt(st, what);
  if (st != OFFLOAD_RT_SUCCESS) {
    std::fprintf(stderr, "%s: %s (pool too small)\n", what,
                 offload_rt_status_string(st));
    std::exit(1);
  }
}
#define RT_COPIED(call) checkCopied((call), #call)

struct Options {
  std::string mode = "default";
  int iters = 20;
  size_t maxMiB = 1024;
  int gemm = 8192;
  int rounds = 5;
  size_t smallMiB = 256; // total per tensor size in the small-copies part
  size_t groupMiB = 32;  // target size of one copy group there
};

Options parse(int argc, char **argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    long v = std::atol(argv[i + 1]);
    if (flag == "--mode")
      o.mode = argv[i + 1];
    else if (flag == "--small-mib")
      o.smallMiB = size_t(v);
    else if (flag == "--group-mib")
      o.groupMiB = size_t(v);
    else if (flag == "--iters")
      o.iters = int(v);
    else if (flag == "--max-mib")
      o.maxMiB = size_t(v);
    else if (flag == "--gemm")
      o.gemm = int(v);
    else if (flag == "--rounds")
      o.rounds = int(v);
  }
  return o;
}

struct Summary {
  double best = 0, median = 0; // ms
};

Summary summarize(std::vector<float> ms) {
  std::sort(ms.begin(), ms.end());
  return {ms.front(), ms[ms.size() / 2]};
}

/// Times `body` (which enqueues work that `stream` ends up waiting for)
/// between two events on `stream`, after two warm-up runs. With `hostMs`,
/// also the host's time in `body` per timed run.
Summary timeOn(cudaStream_t stream, int iters,
               const std::function<void()> &body,
               const std::function<void()> &after = [] {},
               std::vector<double> *hostMs = nullptr) {
  cudaEvent_t e0, e1;
  CUDA(cudaEventCreate(&e0));
  CUDA(cudaEventCreate(&e1));
  std::vector<float> ms;
  for (int i = 0; i < iters + 2; ++i) {
    CUDA(cudaEventRecord(e0, stream));
    auto t0 = std::chrono::steady_clock::now();
    body();
    if (hostMs && i >= 2)
      hostMs->push_back(std::chrono::duration<double, std::milli>(
                            std::chrono::steady_clock::now() - t0)
                            .count());
    CUDA(cudaEventRecord(e1, stream));
    CUDA(cudaEventSynchronize(e1));
    after();
    float t = 0;
    CUDA(cudaEventElapsedTime(&t, e0, e1));
    if (i >= 2)
      ms.push_back(t);
  }
  CUDA(cudaEventDestroy(e0));
  CUDA(cudaEventDestroy(e1));
  return summarize(ms);
}

double gbps(size_t bytes, double ms) { return bytes / (ms * 1e6); }

struct Buffers {
  void *devSrc, *devDst;   // cudaMalloc
  void *hostA, *hostB;     // cudaHostAlloc, for the plain copies
  offload_rt_host_buffer *staged = nullptr; // offload_rt source of loads
};

void bandwidth(offload_rt_context *ctx, cudaStream_t compute, Buffers &b,
               const Options &o) {
  cudaStream_t s1, s2;
  CUDA(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CUDA(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaEvent_t fork, joinA, joinB;
  CUDA(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CUDA(cudaEventCreateWithFlags(&joinA, cudaEventDisableTiming));
  CUDA(cudaEventCreateWithFlags(&joinB, cudaEventDisableTiming));

  std::printf("\n%-9s %-6s %12s %12s %12s %12s %8s\n", "size", "dir",
              "plain best", "plain med", "rt best", "rt med", "rt/plain");
  std::printf("%-9s %-6s %12s %12s %12s %12s %8s\n", "", "", "GB/s", "GB/s",
              "GB/s", "GB/s", "(median)");
  for (size_t mib = 1; mib <= o.maxMiB; mib *= 4) {
    size_t n = mib << 20;
    int iters = mib >= 256 ? std::max(5, o.iters / 2) : o.iters;
    // The load source: one offload of devSrc, kept for the whole size.
    RT(offload_rt_offload(ctx, b.devSrc, n, compute, &b.staged));
    RT(offload_rt_synchronize(ctx));

    offload_rt_host_buffer *buf = nullptr;
    void *out = nullptr;
    auto freeBuf = [&] { RT(offload_rt_free_host(ctx, buf)); };

    Summary plainD2H = timeOn(compute, iters, [&] {
      CUDA(cudaMemcpyAsync(b.hostA, b.devSrc, n, cudaMemcpyDeviceToHost,
                           compute));
    });
    Summary rtD2H = timeOn(
        compute, iters,
        [&] {
          offload_rt_token *t;
          RT(offload_rt_offload_start(ctx, b.devSrc, n, compute, &buf, &t));
          RT(offload_rt_wait(ctx, t, compute));
        },
        freeBuf);
    Summary plainH2D = timeOn(compute, iters, [&] {
      CUDA(cudaMemcpyAsync(b.devDst, b.hostB, n, cudaMemcpyHostToDevice,
                           compute));
    });
    Summary rtH2D = timeOn(compute, iters, [&] {
      RT(offload_rt_load(ctx, b.staged, b.devDst, n, compute, &out));
    });
    // Both directions at once: plain uses two streams forked from compute.
    Summary plainBi = timeOn(compute, iters, [&] {
      CUDA(cudaEventRecord(fork, compute));
      CUDA(cudaStreamWaitEvent(s1, fork, 0));
      CUDA(cudaStreamWaitEvent(s2, fork, 0));
      CUDA(cudaMemcpyAsync(b.hostA, b.devSrc, n, cudaMemcpyDeviceToHost, s1));
      CUDA(cudaMemcpyAsync(b.devDst, b.hostB, n, cudaMemcpyHostToDevice, s2));
      CUDA(cudaEventRecord(joinA, s1));
      CUDA(cudaEventRecord(joinB, s2));
      CUDA(cudaStreamWaitEvent(compute, joinA, 0));
      CUDA(cudaStreamWaitEvent(compute, joinB, 0));
    });
    Summary rtBi = timeOn(
        compute, iters,
        [&] {
          offload_rt_token *td, *th;
          RT(offload_rt_offload_start(ctx, b.devSrc, n, compute, &buf, &td));
          RT(offload_rt_load_start(ctx, b.staged, b.devDst, n, compute, &out,
                                   &th));
          RT(offload_rt_wait(ctx, td, compute));
          RT(offload_rt_wait(ctx, th, compute));
        },
        freeBuf);
    RT(offload_rt_free_host(ctx, b.staged));

    struct Row {
      const char *dir;
      size_t bytes;
      Summary plain, rt;
    } rows[] = {{"D2H", n, plainD2H, rtD2H},
                {"H2D", n, plainH2D, rtH2D},
                {"bidir", 2 * n, plainBi, rtBi}};
    for (const Row &r : rows) {
      std::printf("%6zu MiB %-6s %12.2f %12.2f %12.2f %12.2f %7.1f%%\n", mib,
                  r.dir, gbps(r.bytes, r.plain.best),
                  gbps(r.bytes, r.plain.median), gbps(r.bytes, r.rt.best),
                  gbps(r.bytes, r.rt.median),
                  100.0 * r.plain.median / r.rt.median);
    }
    std::fflush(stdout);
  }
  CUDA(cudaStreamDestroy(s1));
  CUDA(cudaStreamDestroy(s2));
  CUDA(cudaEventDestroy(fork));
  CUDA(cudaEventDestroy(joinA));
  CUDA(cudaEventDestroy(joinB));
}

/// Host cost of one offload_rt_offload_start + wait (no device time).
void callOverhead(offload_rt_context *ctx, cudaStream_t compute, Buffers &b) {
  std::vector<double> us;
  for (int i = 0; i < 200; ++i) {
    offload_rt_host_buffer *buf;
    offload_rt_token *t;
    auto t0 = std::chrono::steady_clock::now();
    RT(offload_rt_offload_start(ctx, b.devSrc, 4096, compute, &buf, &t));
    RT(offload_rt_wait(ctx, t, compute));
    auto t1 = std::chrono::steady_clock::now();
    RT(offload_rt_free_host(ctx, buf));
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  CUDA(cudaStreamSynchronize(compute));
  std::sort(us.begin(), us.end());
  std::printf("\nhost time of offload_start+wait (4 KiB, 200 calls): median "
              "%.1f us, p90 %.1f us\n",
              us[us.size() / 2], us[us.size() * 9 / 10]);
}

/// The median of host times, in ms.
double medianOf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

/// Part 3: many small tensors, one call each vs copy groups vs one large
/// copy of the same total.
void smallCopies(offload_rt_context *ctx, cudaStream_t compute,
                 const Options &o) {
  const size_t total = o.smallMiB << 20;
  // Loads allocate device memory each iteration and free it after: keep the
  // freed memory in the device's pool, so no iteration pays for mapping it
  // again (the default release threshold returns it at every sync).
  int device = 0;
  CUDA(cudaGetDevice(&device));
  cudaMemPool_t memPool;
  CUDA(cudaDeviceGetDefaultMemPool(&memPool, device));
  uint64_t keep = UINT64_MAX;
  CUDA(cudaMemPoolSetAttribute(memPool, cudaMemPoolAttrReleaseThreshold,
                               &keep));

  void *d2hStream = nullptr, *h2dStream = nullptr;
  RT(offload_rt_get_copy_streams(ctx, &d2hStream, &h2dStream));
  cudaEvent_t copied;
  CUDA(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming));
  // The compute stream waits for every copy queued so far on a copy stream
  // (FIFO): one wait, the same in every mode.
  auto join = [&](void *copyStream) {
    CUDA(cudaEventRecord(copied, static_cast<cudaStream_t>(copyStream)));
    CUDA(cudaStreamWaitEvent(compute, copied, 0));
  };
  std::vector<void *> outs;
  // After a timed load: free what it allocated, outside the timing.
  auto freeOuts = [&] {
    for (void *p : outs)
      RT(offload_rt_device_free(ctx, p, compute));
    CUDA(cudaStreamSynchronize(compute));
  };

  // The reference: one large copy of the same total, plain and offload_rt.
  void *big = nullptr, *plainHost = nullptr;
  CUDA(cudaMalloc(&big, total));
  CUDA(cudaMemset(big, 0x5a, total));
  CUDA(cudaHostAlloc(&plainHost, total, cudaHostAllocDefault));
  Summary plainD2H = timeOn(compute, o.iters, [&] {
    CUDA(cudaMemcpyAsync(plainHost, big, total, cudaMemcpyDeviceToHost,
                         compute));
  });
  Summary plainH2D = timeOn(compute, o.iters, [&] {
    CUDA(cudaMemcpyAsync(big, plainHost, total, cudaMemcpyHostToDevice,
                         compute));
  });
  offload_rt_host_buffer *buf = nullptr;
  Summary largeD2H = timeOn(
      compute, o.iters,
      [&] {
        RT_COPIED(offload_rt_offload(ctx, big, total, compute, &buf));
        join(d2hStream);
      },
      [&] { RT(offload_rt_free_host(ctx, buf)); });
  RT_COPIED(offload_rt_offload(ctx, big, total, compute, &buf));
  RT(offload_rt_synchronize(ctx));
  outs.assign(1, nullptr);
  Summary largeH2D = timeOn(
      compute, o.iters,
      [&] {
        RT(offload_rt_load_start(ctx, buf, nullptr, total, compute, &outs[0],
                                 nullptr));
        join(h2dStream);
      },
      freeOuts);
  RT(offload_rt_free_host(ctx, buf));
  CUDA(cudaFree(big));
  CUDA(cudaFreeHost(plainHost));

  std::printf("\nsmall copies: %zu MiB per tensor size, each tensor its own "
              "cudaMalloc; %d iterations after 2 warm-ups, median (best); "
              "GB/s = 1e9 bytes/s; the device's default memory pool keeps "
              "freed memory (release threshold set to the maximum)\n",
              o.smallMiB, o.iters);
  std::printf("  one large copy of %zu MiB: plain cudaMemcpyAsync D2H %.2f, "
              "H2D %.2f GB/s; offload_rt D2H %.2f (%.2f), H2D %.2f (%.2f) "
              "GB/s = 100%% below\n",
              o.smallMiB, gbps(total, plainD2H.median),
              gbps(total, plainH2D.median), gbps(total, largeD2H.median),
              gbps(total, largeD2H.best), gbps(total, largeH2D.median),
              gbps(total, largeH2D.best));
  std::printf("\n%-8s %7s %-12s | %8s %8s %7s %8s | %8s %8s %7s %8s\n", "size",
              "tensors", "calls", "D2H GB/s", "(best)", "% large", "host us",
              "H2D GB/s", "(best)", "% large", "host us");
  std::printf("%-8s %7s %-12s | %8s %8s %7s %8s | %8s %8s %7s %8s\n", "", "",
              "", "median", "", "median", "/tensor", "median", "", "median",
              "/tensor");

  for (size_t size : {size_t(64) << 10, size_t(256) << 10, size_t(1) << 20,
                      size_t(4) << 20}) {
    if (size > total)
      continue;
    const size_t count = total / size;
    std::vector<const void *> src(count);
    for (const void *&p : src) {
      void *d = nullptr;
      CUDA(cudaMalloc(&d, size));
      CUDA(cudaMemset(d, 0x5a, size));
      p = d;
    }
    std::vector<size_t> sizes(count, size);
    std::vector<offload_rt_host_buffer *> bufs(count);
    // Tensors per call: 1 (one offload_rt call per tensor), a group of about
    // --group-mib, all of them in one group.
    std::vector<size_t> perCall = {1};
    size_t g = std::max<size_t>(1, (o.groupMiB << 20) / size);
    if (g > 1 && g < count)
      perCall.push_back(g);
    if (count > 1)
      perCall.push_back(count);

    // Enqueues `body(first, n)` over the tensors, n at a time.
    auto inCalls = [&](size_t n,
                       const std::function<void(size_t, size_t)> &body) {
      for (size_t i = 0; i < count; i += n)
        body(i, std::min(n, count - i));
    };
    auto freeBufs = [&] {
      for (offload_rt_host_buffer *b : bufs)
        RT(offload_rt_free_host(ctx, b));
    };
    struct Row {
      size_t n;
      Summary d2h, h2d;
      double d2hHostMs, h2dHostMs;
    };
    std::vector<Row> rows;
    for (size_t n : perCall) {
      std::vector<double> host;
      Summary d2h = timeOn(
          compute, o.iters,
          [&] {
            inCalls(n, [&](size_t i, size_t m) {
              if (n == 1)
                RT_COPIED(offload_rt_offload(ctx, src[i], size, compute,
                                             &bufs[i]));
              else
                RT_COPIED(offload_rt_offload_group(ctx, m, &src[i], &sizes[i],
                                                   compute, &bufs[i]));
            });
            join(d2hStream);
          },
          freeBufs, &host);
      rows.push_back({n, d2h, {}, medianOf(host), 0});
    }

    // The loads' source: every tensor offloaded once, as one group.
    std::vector<offload_rt_host_buffer *> staged(count);
    RT_COPIED(offload_rt_offload_group(ctx, count, src.data(), sizes.data(),
                                       compute, staged.data()));
    RT(offload_rt_synchronize(ctx));
    outs.assign(count, nullptr);
    for (Row &r : rows) {
      std::vector<double> host;
      size_t n = r.n;
      r.h2d = timeOn(
          compute, o.iters,
          [&] {
            inCalls(n, [&](size_t i, size_t m) {
              if (n == 1)
                RT(offload_rt_load_start(ctx, staged[i], nullptr, size,
                                         compute, &outs[i], nullptr));
              else
                RT(offload_rt_load_group_start(ctx, m, &staged[i], &sizes[i],
                                               compute, &outs[i], nullptr));
            });
            join(h2dStream);
          },
          freeOuts, &host);
      r.h2dHostMs = medianOf(host);
    }
    for (offload_rt_host_buffer *b : staged)
      RT(offload_rt_free_host(ctx, b));
    for (const void *p : src)
      CUDA(cudaFree(const_cast<void *>(p)));

    for (const Row &r : rows) {
      std::string calls = r.n == 1       ? "per tensor"
                          : r.n == count ? "one group"
                                         : "groups of " + std::to_string(r.n);
      std::string label = size >= (1 << 20)
                              ? std::to_string(size >> 20) + " MiB"
                              : std::to_string(size >> 10) + " KiB";
      std::printf("%-8s %7zu %-12s | %8.2f %8.2f %6.1f%% %8.2f | %8.2f "
                  "%8.2f %6.1f%% %8.2f\n",
                  label.c_str(), count, calls.c_str(),
                  gbps(total, r.d2h.median), gbps(total, r.d2h.best),
                  100.0 * largeD2H.median / r.d2h.median,
                  1000.0 * r.d2hHostMs / count, gbps(total, r.h2d.median),
                  gbps(total, r.h2d.best),
                  100.0 * largeH2D.median / r.h2d.median,
                  1000.0 * r.h2dHostMs / count);
    }
    std::fflush(stdout);
  }
  CUDA(cudaEventDestroy(copied));
}

#ifdef OFFLOAD_RT_BENCH_CUBLAS
void checkBlas(cublasStatus_t st, const char *what) {
  if (st != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "%s failed: status %d\n", what, int(st));
    std::exit(1);
  }
}
#define BLAS(call) checkBlas((call), #call)

void overlap(offload_rt_context *ctx, cudaStream_t compute, Buffers &b,
             const Options &o) {
  const int n = o.gemm;
  const size_t elems = size_t(n) * n;
  const size_t copyBytes = std::min<size_t>(o.maxMiB, 1024) << 20;
  // Random bf16 operands (zeros would run faster than real data).
  std::vector<__nv_bfloat16> host(elems);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (auto &x : host)
    x = __float2bfloat16(dist(rng));
  void *A, *B, *C;
  CUDA(cudaMalloc(&A, elems * 2));
  CUDA(cudaMalloc(&B, elems * 2));
  CUDA(cudaMalloc(&C, elems * 2));
  CUDA(cudaMemcpy(A, host.data(), elems * 2, cudaMemcpyHostToDevice));
  std::shuffle(host.begin(), host.end(), rng);
  CUDA(cudaMemcpy(B, host.data(), elems * 2, cudaMemcpyHostToDevice));

  cublasHandle_t handle;
  BLAS(cublasCreate(&handle));
  BLAS(cublasSetStream(handle, compute));
  float alpha = 1, beta = 0;
  auto gemm = [&] {
    BLAS(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, A,
                      CUDA_R_16BF, n, B, CUDA_R_16BF, n, &beta, C,
                      CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  };

  // One GEMM's time, and how long the copies take, set the run's length:
  // enough GEMMs to fill ~80% of the copy window, so every GEMM overlaps.
  Summary one = timeOn(compute, 10, gemm);
  RT(offload_rt_offload(ctx, b.devSrc, copyBytes, compute, &b.staged));
  RT(offload_rt_synchronize(ctx));
  offload_rt_host_buffer *buf = nullptr;
  void *out = nullptr;
  offload_rt_token *td = nullptr, *th = nullptr;
  auto startCopies = [&] {
    RT(offload_rt_offload_start(ctx, b.devSrc, copyBytes, compute, &buf, &td));
    RT(offload_rt_load_start(ctx, b.staged, b.devDst, copyBytes, compute,
                             &out, &th));
  };
  auto finishCopies = [&] {
    RT(offload_rt_wait(ctx, td, compute));
    RT(offload_rt_wait(ctx, th, compute));
  };
  Summary copies = timeOn(
      compute, 3, [&] { startCopies(); finishCopies(); },
      [&] { RT(offload_rt_free_host(ctx, buf)); });
  int k = std::max(1, int(0.8 * copies.median / one.median));
  auto run = [&] {
    for (int i = 0; i < k; ++i)
      gemm();
  };

  std::vector<float> alone, together;
  std::vector<double> d2h, h2d;
  cudaEvent_t e0, e1;
  CUDA(cudaEventCreate(&e0));
  CUDA(cudaEventCreate(&e1));
  for (int r = 0; r < o.rounds; ++r) {
    float ms;
    // Alone.
    CUDA(cudaEventRecord(e0, compute));
    run();
    CUDA(cudaEventRecord(e1, compute));
    CUDA(cudaEventSynchronize(e1));
    CUDA(cudaEventElapsedTime(&ms, e0, e1));
    alone.push_back(ms);
    // With both copies started just before the GEMMs, waited for after.
    RT(offload_rt_reset_stats(ctx));
    CUDA(cudaEventRecord(e0, compute));
    startCopies();
    run();
    CUDA(cudaEventRecord(e1, compute));
    finishCopies();
    CUDA(cudaStreamSynchronize(compute));
    CUDA(cudaEventElapsedTime(&ms, e0, e1));
    together.push_back(ms);
    RT(offload_rt_synchronize(ctx));
    offload_rt_stats s;
    RT(offload_rt_get_stats(ctx, &s));
    d2h.push_back(gbps(s.d2h_bytes, s.d2h_ms));
    h2d.push_back(gbps(s.h2d_bytes, s.h2d_ms));
    RT(offload_rt_free_host(ctx, buf));
  }
  Summary a = summarize(alone), t = summarize(together);
  std::sort(d2h.begin(), d2h.end());
  std::sort(h2d.begin(), h2d.end());
  double flops = 2.0 * n * n * double(n);
  std::printf("\noverlap: %d x bf16 GEMM %d^3 (cuBLAS, fp32 accumulate) on the "
              "compute stream, %d rounds\n", k, n, o.rounds);
  std::printf("  one GEMM alone: median %.3f ms (%.0f TFLOP/s)\n", one.median,
              flops / (one.median * 1e9));
  std::printf("  copies alone: %zu MiB each way in %.2f ms (median)\n",
              copyBytes >> 20, copies.median);
  std::printf("  GEMMs alone:          median %.3f ms, best %.3f ms\n",
              a.median, a.best);
  std::printf("  GEMMs during copies:  median %.3f ms, best %.3f ms\n",
              t.median, t.best);
  std::printf("  copy bandwidth during GEMMs (median, from offload_rt stats): "
              "D2H %.2f GB/s, H2D %.2f GB/s\n",
              d2h[d2h.size() / 2], h2d[h2d.size() / 2]);
  std::printf("  GEMM slowdown: %.2f%% (median vs median)\n",
              100.0 * (t.median / a.median - 1.0));
  RT(offload_rt_free_host(ctx, b.staged));
  CUDA(cudaEventDestroy(e0));
  CUDA(cudaEventDestroy(e1));
  BLAS(cublasDestroy(handle));
  CUDA(cudaFree(A));
  CUDA(cudaFree(B));
  CUDA(cudaFree(C));
}
#endif

} // namespace

int main(int argc, char **argv) {
  Options o = parse(argc, argv);
  bool classic = o.mode == "default" || o.mode == "all";
  bool small = o.mode == "small" || o.mode == "all";
  if (!classic && !small) {
    std::fprintf(stderr, "unknown --mode %s (default, small or all)\n",
                 o.mode.c_str());
    return 2;
  }
  size_t maxBytes = o.maxMiB << 20;
  cudaDeviceProp prop;
  CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs, PCI %04x:%02x:%02x\n", prop.name,
              prop.multiProcessorCount, prop.pciDomainID, prop.pciBusID,
              prop.pciDeviceID);

  offload_rt_options opts;
  offload_rt_options_init(&opts);
  opts.backend = OFFLOAD_RT_BACKEND_CUDA;
  // A D2H block and a staged block of the largest size (and 4 KiB calls);
  // for the small copies, all tensors of one size offloaded and staged.
  opts.pool_initial_bytes =
      std::max(classic ? 2 * maxBytes : 0, small ? 2 * (o.smallMiB << 20) : 0) +
      (1 << 20);
  opts.pool_growable = 0;
  auto t0 = std::chrono::steady_clock::now();
  offload_rt_context *ctx = nullptr;
  RT(offload_rt_context_create(&opts, &ctx));
  double createMs = std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now() - t0)
                        .count();
  std::printf("offload_rt context with a %.0f MiB pinned pool created in "
              "%.0f ms (one cudaHostAlloc)\n",
              opts.pool_initial_bytes / 1048576.0, createMs);

  cudaStream_t compute;
  CUDA(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
  if (classic) {
    Buffers b;
    CUDA(cudaMalloc(&b.devSrc, maxBytes));
    CUDA(cudaMalloc(&b.devDst, maxBytes));
    CUDA(cudaMemset(b.devSrc, 0x5a, maxBytes));
    CUDA(cudaHostAlloc(&b.hostA, maxBytes, cudaHostAllocDefault));
    CUDA(cudaHostAlloc(&b.hostB, maxBytes, cudaHostAllocDefault));
    std::memset(b.hostB, 0x3c, maxBytes);

    bandwidth(ctx, compute, b, o);
    callOverhead(ctx, compute, b);
#ifdef OFFLOAD_RT_BENCH_CUBLAS
    if (o.gemm > 0)
      overlap(ctx, compute, b, o);
#else
    std::printf("\noverlap: skipped (built without cuBLAS)\n");
#endif
    CUDA(cudaFree(b.devSrc));
    CUDA(cudaFree(b.devDst));
    CUDA(cudaFreeHost(b.hostA));
    CUDA(cudaFreeHost(b.hostB));
  }
  if (small)
    smallCopies(ctx, compute, o);
  std::printf("\n");
  RT(offload_rt_print_summary(ctx, stdout));
  RT(offload_rt_context_destroy(ctx));
  CUDA(cudaStreamDestroy(compute));
  return 0;
}
