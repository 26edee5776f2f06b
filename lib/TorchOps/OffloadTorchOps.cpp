//===- OffloadTorchOps.cpp - torch.ops.offload.* over offload_rt ----------===//
//
// The copy ops the PyTorch bridge puts into compiled graphs:
//
//   offload_start(Tensor src, SymInt[] stride, Tensor[] after) -> Tensor
//   offload_wait(Tensor host, Tensor src, Tensor[] after) -> ()
//   load(Tensor host, SymInt[] size, SymInt[] stride, ScalarType dtype,
//        Device device, Tensor[] after) -> Tensor
//   load_start(Tensor host, SymInt[] size, SymInt[] stride, ScalarType dtype,
//              Device device, Tensor[] after) -> Tensor
//   load_wait(Tensor(a!) dst, Tensor host, Tensor[] after) -> ()
//   offload_release(Tensor host, Tensor src) -> ()
//   prefetch_push(Tensor[] hosts) -> ()
//   prefetch_issue(Tensor anchor) -> ()
//
// The host value is an opaque 1-D uint8 CPU tensor: the bytes of the saved
// tensor laid out with an explicit dense `stride` (offload_start's), which
// the load rebuilds with the size, stride and dtype it is given. A compiler
// sees a flat byte buffer it has no reason to relayout or read. `after` only
// pins an op's place in a graph (data dependencies); the values are ignored. CUDA tensors go through offload_rt's cuda backend, with
// PyTorch's current stream as the compute stream and its caching allocator
// owning device memory; CPU tensors go through the sim backend (the "device"
// is host memory, the compute stream is the calling thread, so the waits
// block it), so CPU tests copy through the real runtime logic.
//
// Bookkeeping: a host tensor from offload_start owns one pinned block of the
// runtime's pool (from_blob; its deleter calls offload_rt_free_host, which
// returns the block only after every copy reading it completed). Tokens of
// started copies are kept by data pointer: of the host tensor for
// offload_wait, of the destination for load_wait. docs/torch-ops.md has the
// semantics and the reasons.
//
//===----------------------------------------------------------------------===//

#include "offload_torch_ops.h"

#include <ATen/EmptyTensor.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <c10/core/Device.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>
#include <c10/util/accumulate.h>
#include <torch/library.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

constexpr int kSim = -1; // "device index" of the sim backend

/// Everything the ops share. Allocated once and never destroyed: host
/// tensors (whose deleters use it) may outlive static destruction.
struct State {
  std::mutex contextMutex;
  std::vector<offload_rt_context *> cuda; // by device index
  offload_rt_context *sim = nullptr;
  void *simStream = nullptr; // the CPU "compute stream"

  /// A started copy whose wait has not happened yet.
  struct Pending {
    offload_rt_context *ctx = nullptr;
    offload_rt_token *token = nullptr; // null: nothing to wait for
    int device = kSim;
    // offloads: the memory the copy reads when it is the caller's `src`
    // (null when it reads a private dense temporary, or copied already).
    const void *source = nullptr;
  };
  /// A live pinned block behind a host tensor from offload_start.
  struct Block {
    offload_rt_context *ctx = nullptr;
    offload_rt_host_buffer *buffer = nullptr;
    size_t bytes = 0;
    int device = kSim;
  };
  /// A load prefetch_issue started before its graph's load_start asked.
  struct Prefetched {
    at::Tensor bytes; // the destination, as uint8, on the device
    Pending pending;
  };
  std::mutex mapMutex;
  std::unordered_map<const void *, Pending> offloads; // by host data ptr
  std::unordered_map<const void *, Pending> loads;    // by dst data ptr
  std::unordered_map<const void *, Block> blocks;     // by host data ptr
  /// Per forward of a graph that pushed one (prefetch_push), the host
  /// values whose loads the backward graph before its own may start, in
  /// forward order; the most recent last.
  std::vector<std::vector<const void *>> prefetchGroups;
  std::unordered_map<const void *, Prefetched> prefetched; // by host data ptr

  std::atomic<uint64_t> hostWaitNs{0}, hostWaits{0}, syncFallbacks{0},
      genericLoads{0}, prefetchedLoads{0};
  /// CUDA contexts created without timing events (the default).
  std::atomic<uint64_t> untimedCudaContexts{0};
};

State &state() {
  static State *s = new State();
  return *s;
}

thread_local std::string lastError;

/// Every runtime failure becomes a TORCH_CHECK error naming the op, the call
/// and the runtime's message.
void check(offload_rt_status st, const char *op, const char *call) {
  TORCH_CHECK(st >= 0, "offload::", op, ": ", call, " failed (",
              offload_rt_status_string(st), "): ", offload_rt_last_error());
}

/// Drops a token that will never be waited on (replaced or its host died).
void discardQuietly(const State::Pending &p, const char *why) {
  if (!p.token)
    return;
  offload_rt_status st = offload_rt_token_discard(p.ctx, p.token);
  if (st < 0)
    std::fprintf(stderr, "offload_torch_ops: warning: %s: "
                 "offload_rt_token_discard failed: %s\n",
                 why, offload_rt_last_error());
}

/// Remembers a started copy under `key`, replacing (and discarding) a stale
/// entry whose tensor died without its wait.
void putPending(std::unordered_map<const void *, State::Pending> State::*map,
                const void *key, State::Pending p) {
  State &s = state();
  State::Pending stale;
  bool hadStale = false;
  {
    std::lock_guard<std::mutex> lock(s.mapMutex);
    auto [it, inserted] = (s.*map).emplace(key, p);
    if (!inserted) {
      stale = it->second;
      hadStale = true;
      it->second = p;
    }
  }
  if (hadStale)
    discardQuietly(stale, "a copy was started into memory whose earlier copy "
                          "was never waited for");
}

bool takePending(std::unordered_map<const void *, State::Pending> State::*map,
                 const void *key, State::Pending *out) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mapMutex);
  auto it = (s.*map).find(key);
  if (it == (s.*map).end())
    return false;
  *out = it->second;
  (s.*map).erase(it);
  return true;
}

/// Forgets `host` in the prefetch groups (an empty group goes too) and
/// takes its started prefetch, if any, into *out. Call with mapMutex held.
bool forgetPrefetchLocked(const void *host, State::Prefetched *out) {
  State &s = state();
  for (auto group = s.prefetchGroups.begin(); group != s.prefetchGroups.end();
       ++group) {
    auto it = std::find(group->begin(), group->end(), host);
    if (it == group->end())
      continue;
    group->erase(it);
    if (group->empty())
      s.prefetchGroups.erase(group);
    break;
  }
  auto it = s.prefetched.find(host);
  if (it == s.prefetched.end())
    return false;
  *out = std::move(it->second);
  s.prefetched.erase(it);
  return true;
}

//===--- contexts ---------------------------------------------------------===//

/// A context of `backend` with the options of the environment
/// (OFFLOAD_RT_POOL_BYTES, OFFLOAD_RT_SIM_LATENCY_US, ...).
offload_rt_context *createContext(offload_rt_backend backend, const char *op,
                                  const char *call) {
  offload_rt_options opts;
  offload_rt_options_init(&opts);
  opts.backend = backend;
  // Timing puts two events on the compute stream around every wait and
  // makes every event a timing one, which leaves the compute stream idle
  // longer (docs/benchmarks/peers/README.md). So CUDA contexts time nothing
  // unless OFFLOAD_RT_TIMING asks.
  if (backend == OFFLOAD_RT_BACKEND_CUDA && !std::getenv("OFFLOAD_RT_TIMING"))
    opts.timing = 0;
  offload_rt_context *ctx = nullptr;
  check(offload_rt_context_create(&opts, &ctx), op, call);
  if (backend == OFFLOAD_RT_BACKEND_CUDA && !opts.timing)
    ++state().untimedCudaContexts;
  return ctx;
}

offload_rt_context *cudaContext(int device, const char *op) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.contextMutex);
  if (s.cuda.empty())
    s.cuda.resize(std::max<int>(c10::cuda::device_count(), 1), nullptr);
  TORCH_CHECK(device >= 0 && device < static_cast<int>(s.cuda.size()),
              "offload::", op, ": bad CUDA device index ", device);
  if (!s.cuda[device]) {
    // The context binds to the device current at creation.
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
    s.cuda[device] = createContext(OFFLOAD_RT_BACKEND_CUDA, op,
                                   "offload_rt_context_create(cuda)");
  }
  return s.cuda[device];
}

offload_rt_context *simContext(const char *op) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.contextMutex);
  if (!s.sim) {
    offload_rt_context *ctx = createContext(
        OFFLOAD_RT_BACKEND_SIM, op, "offload_rt_context_create(sim)");
    void *stream = nullptr;
    offload_rt_status st = offload_rt_stream_create(ctx, &stream);
    if (st < 0) {
      std::string message = offload_rt_last_error();
      offload_rt_context_destroy(ctx);
      TORCH_CHECK(false, "offload::", op,
                  ": offload_rt_stream_create(sim) failed: ", message);
    }
    s.simStream = stream;
    s.sim = ctx;
  }
  return s.sim;
}

/// The backend of one op call: its context and compute stream.
struct Target {
  offload_rt_context *ctx;
  void *stream;
  int device; // CUDA index, or kSim
};

Target targetFor(const c10::Device &device, const char *op) {
  if (device.is_cuda()) {
    int index = device.has_index() ? device.index() : c10::cuda::current_device();
    return {cudaContext(index, op),
            c10::cuda::getCurrentCUDAStream(
                static_cast<c10::DeviceIndex>(index))
                .stream(),
            index};
  }
  TORCH_CHECK(device.is_cpu(), "offload::", op,
              ": tensors must be on CUDA (cuda backend) or CPU (sim "
              "backend), got ",
              device);
  offload_rt_context *ctx = simContext(op);
  return {ctx, state().simStream, kSim};
}

/// OFFLOAD_MLIR_SKIP_WAITS (testing only): a comma-separated list of the
/// ops (offload_wait, load_wait, load) whose wait is dropped, so a stress run
/// can show that it catches a missing wait. Read at every call.
bool skipWait(const char *op) {
  const char *v = std::getenv("OFFLOAD_MLIR_SKIP_WAITS");
  if (!v || !*v)
    return false;
  std::string list = std::string(",") + v + ",";
  return list.find(std::string(",") + op + ",") != std::string::npos;
}

/// Makes the compute stream wait for a copy. CUDA: device-side, the host
/// does not block. Sim: the compute stream is the calling thread, so it
/// blocks until the copy is done (timed as host-blocked time).
void waitFor(const State::Pending &p, const char *op) {
  if (!p.token)
    return;
  if (skipWait(op)) {
    check(offload_rt_token_discard(p.ctx, p.token), op,
          "offload_rt_token_discard");
    return;
  }
  State &s = state();
  if (p.device != kSim) {
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(p.device));
    void *stream = c10::cuda::getCurrentCUDAStream(
                       static_cast<c10::DeviceIndex>(p.device))
                       .stream();
    check(offload_rt_wait(p.ctx, p.token, stream), op, "offload_rt_wait");
    return;
  }
  check(offload_rt_wait(p.ctx, p.token, s.simStream), op, "offload_rt_wait");
  auto start = std::chrono::steady_clock::now();
  offload_rt_status st = offload_rt_stream_synchronize(p.ctx, s.simStream);
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                std::chrono::steady_clock::now() - start)
                .count();
  s.hostWaitNs += static_cast<uint64_t>(ns);
  ++s.hostWaits;
  check(st, op, "offload_rt_stream_synchronize");
}

void checkDense(const at::Tensor &t, const char *op, const char *name) {
  TORCH_CHECK(t.defined(), "offload::", op, ": ", name, " is undefined");
  TORCH_CHECK(t.layout() == c10::kStrided && !t.is_quantized(), "offload::",
              op, ": ", name, " must be a dense (strided) tensor, got ",
              t.layout());
}

/// True if `stride` lays out a tensor of `sizes` without overlaps or gaps
/// (PyTorch's is_non_overlapping_and_dense: a tensor of fewer than 2
/// elements always is; otherwise dims of size < 2 are ignored and the others,
/// by increasing stride, must have strides 1, s0, s0*s1, ...). Negative
/// strides are not (at::empty_strided has none).
bool isNonOverlappingAndDense(c10::IntArrayRef sizes, c10::IntArrayRef stride) {
  for (int64_t s : stride)
    if (s < 0)
      return false;
  if (c10::multiply_integers(sizes) < 2)
    return true;
  std::vector<size_t> perm;
  for (size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i] >= 2)
      perm.push_back(i);
  std::stable_sort(perm.begin(), perm.end(), [&](size_t a, size_t b) {
    return stride[a] < stride[b];
  });
  int64_t required = 1;
  for (size_t i : perm) {
    if (stride[i] != required)
      return false;
    required *= sizes[i];
  }
  return true;
}

/// Checks that `stride` is a dense layout for `sizes` (clear error if not).
void checkLayout(c10::IntArrayRef sizes, c10::IntArrayRef stride,
                 const char *op) {
  TORCH_CHECK(stride.size() == sizes.size(), "offload::", op, ": stride ",
              stride, " has ", stride.size(), " dims, but size ", sizes,
              " has ", sizes.size());
  for (int64_t d : sizes)
    TORCH_CHECK(d >= 0, "offload::", op, ": negative size in ", sizes);
  TORCH_CHECK(isNonOverlappingAndDense(sizes, stride), "offload::", op,
              ": stride ", stride, " is not a non-overlapping and dense "
              "layout for size ", sizes,
              " (elements would overlap or leave gaps, or a stride is "
              "negative); the host buffer holds exactly numel * itemsize "
              "bytes, so the strides must be the contiguous strides of some "
              "order of the dims");
}

/// Same layout: equal strides in every dim of size > 1 (as PyTorch compares
/// for contiguity; a size-1 dim's stride does not matter).
bool sameLayout(c10::IntArrayRef sizes, c10::IntArrayRef a,
                c10::IntArrayRef b) {
  for (size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i] > 1 && a[i] != b[i])
      return false;
  return true;
}

/// An uninitialized dense tensor whose every byte the caller overwrites
/// (with a copy). Not at::empty_strided: under
/// torch.use_deterministic_algorithms(True), with
/// torch.utils.deterministic.fill_uninitialized_memory (on by default), that
/// fills the new memory with NaN first, a memory-bound kernel per copy for
/// bytes the copy replaces anyway. On a CUDA device, from PyTorch's caching
/// allocator on the current stream, as at::empty_strided allocates; on the
/// CPU pinned if `pinned`.
at::Tensor emptyToOverwrite(c10::IntArrayRef size, c10::IntArrayRef stride,
                            at::ScalarType dtype, const c10::Device &device,
                            bool pinned = false) {
  if (!device.is_cuda())
    return at::Tensor(at::detail::empty_strided_cpu(size, stride, dtype, pinned));
  c10::cuda::CUDAGuard guard(device);
  return at::Tensor(at::detail::empty_strided_generic(
      size, stride, c10::cuda::CUDACachingAllocator::get(),
      c10::DispatchKeySet(c10::DispatchKey::CUDA), dtype));
}

/// A 1-D uint8 tensor over the byte span of a non-overlapping and dense
/// tensor (numel * itemsize bytes from t.data_ptr()), sharing its storage.
at::Tensor bytesOf(const at::Tensor &t) {
  at::Tensor bytes =
      at::empty({0}, at::TensorOptions().dtype(at::kByte).device(t.device()));
  bytes.set_(t.storage(), t.storage_offset() * t.element_size(),
             {static_cast<int64_t>(t.nbytes())}, {1});
  return bytes;
}

//===--- the ops ----------------------------------------------------------===//

/// The deleter of a host tensor from offload_start: forgets the block (and
/// a wait that never came), then hands the block back to the runtime, which
/// returns it to the pool once every copy reading it completed.
void releaseHostBlock(offload_rt_context *ctx, offload_rt_host_buffer *buffer,
                      void *data) {
  State &s = state();
  State::Pending stale;
  bool hadStale = false;
  State::Prefetched unused;
  bool hadPrefetch = false;
  {
    std::lock_guard<std::mutex> lock(s.mapMutex);
    s.blocks.erase(data);
    hadPrefetch = forgetPrefetchLocked(data, &unused);
    auto it = s.offloads.find(data);
    if (it != s.offloads.end()) {
      stale = it->second;
      hadStale = true;
      s.offloads.erase(it);
    }
  }
  if (hadStale)
    discardQuietly(stale, "a host tensor from offload_start died before its "
                          "offload_wait");
  if (hadPrefetch)
    discardQuietly(unused.pending, "a host tensor died with its prefetched "
                                   "load never asked for");
  if (offload_rt_free_host(ctx, buffer) < 0)
    std::fprintf(stderr,
                 "offload_torch_ops: warning: offload_rt_free_host failed: "
                 "%s\n",
                 offload_rt_last_error());
}

at::Tensor offloadStart(const at::Tensor &src, c10::IntArrayRef stride,
                        at::TensorList /*after*/) {
  const char *op = "offload_start";
  checkDense(src, op, "src");
  checkLayout(src.sizes(), stride, op);
  auto hostOptions = at::TensorOptions().dtype(at::kByte).device(c10::kCPU);
  const int64_t bytes = src.numel() * static_cast<int64_t>(src.element_size());
  if (bytes == 0)
    return at::empty({0}, hostOptions);

  Target t = targetFor(src.device(), op);
  std::optional<c10::cuda::CUDAGuard> guard;
  if (t.device != kSim)
    guard.emplace(static_cast<c10::DeviceIndex>(t.device));

  // The copy reads a dense span laid out with `stride`: src's own memory if
  // it already has that layout, else a temporary made on the compute stream,
  // which must live until the copy completed.
  bool temporary = !sameLayout(src.sizes(), src.strides(), stride);
  at::Tensor dense = src;
  if (temporary) {
    dense = emptyToOverwrite(src.sizes(), stride, src.scalar_type(), src.device());
    dense.copy_(src);
  }

  offload_rt_host_buffer *buffer = nullptr;
  offload_rt_token *token = nullptr;
  offload_rt_status st =
      offload_rt_offload_start(t.ctx, dense.const_data_ptr(),
                               static_cast<size_t>(bytes), t.stream, &buffer,
                               &token);
  check(st, op, "offload_rt_offload_start");

  if (st == OFFLOAD_RT_KEPT_ON_DEVICE) {
    // Pool full and not growable: no copy was made. Copy synchronously into
    // an ordinary CPU tensor (pinned for CUDA) instead; correct, just slow.
    check(offload_rt_token_discard(t.ctx, token), op,
          "offload_rt_token_discard");
    check(offload_rt_free_host(t.ctx, buffer), op, "offload_rt_free_host");
    ++state().syncFallbacks;
    TORCH_WARN_ONCE(
        "offload::offload_start: offload_rt's pinned pool is full and cannot "
        "grow (OFFLOAD_RT_POOL_BYTES / OFFLOAD_RT_POOL_GROWABLE); copying "
        "synchronously into ordinary host memory instead. Further fallbacks "
        "are counted in offload_mlir.ops.runtime_stats()['fallbacks'].");
    at::Tensor host = emptyToOverwrite({bytes}, {1}, at::kByte, c10::kCPU,
                                       /*pinned=*/t.device != kSim);
    host.copy_(bytesOf(dense)); // blocking: the data is there on return
    putPending(&State::offloads, host.const_data_ptr(), {t.ctx, nullptr, t.device});
    return host;
  }

  void *hostPtr = nullptr;
  check(offload_rt_host_data(t.ctx, buffer, /*wait=*/0, &hostPtr), op,
        "offload_rt_host_data");
  if (temporary) {
    // The runtime calls back once the D2H copy completed; dropping the last
    // reference then returns the memory to PyTorch's allocator.
    auto *keep = new at::Tensor(dense);
    st = offload_rt_release_device_after_copy(
        t.ctx, buffer,
        [](void *, void *user) { delete static_cast<at::Tensor *>(user); },
        keep);
    if (st < 0) {
      // Cannot hand it over: wait for the copy here, then drop it.
      std::string message = offload_rt_last_error();
      offload_rt_host_data(t.ctx, buffer, /*wait=*/1, &hostPtr);
      delete keep;
      offload_rt_token_discard(t.ctx, token);
      offload_rt_free_host(t.ctx, buffer);
      TORCH_CHECK(false, "offload::", op,
                  ": offload_rt_release_device_after_copy failed: ", message);
    }
  }

  {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mapMutex);
    s.blocks[hostPtr] = {t.ctx, buffer, static_cast<size_t>(bytes), t.device};
  }
  putPending(&State::offloads, hostPtr,
             {t.ctx, token, t.device,
              temporary ? nullptr : src.const_data_ptr()});
  offload_rt_context *ctx = t.ctx;
  return at::from_blob(
      hostPtr, {bytes},
      [ctx, buffer](void *data) { releaseHostBlock(ctx, buffer, data); },
      hostOptions);
}

void offloadWait(const at::Tensor &host, const at::Tensor &src,
                 at::TensorList /*after*/) {
  const char *op = "offload_wait";
  checkDense(host, op, "host");
  checkDense(src, op, "src");
  if (host.numel() == 0)
    return;
  State::Pending p;
  TORCH_CHECK(takePending(&State::offloads, host.const_data_ptr(), &p),
              "offload::offload_wait: no pending offload for the host tensor "
              "at ",
              host.const_data_ptr(),
              " (shape ", host.sizes(), ", ", host.scalar_type(),
              "): it was already waited for, or it does not come from "
              "offload::offload_start");
  waitFor(p, op);
  // `src` is an operand so that the graph keeps the copy's source alive (and
  // unwritten) until here. A different tensor means the graph freed or
  // reused the real source while the copy read it: fail loudly.
  TORCH_CHECK(!p.source || src.numel() == 0 || src.const_data_ptr() == p.source,
              "offload::offload_wait: src (data at ", src.const_data_ptr(),
              ") is not the tensor offload_start copied from (data at ",
              p.source,
              "): the copy's source was not kept alive until the wait (did a "
              "compiler pass a copy of the operand to one of the ops?)");
}

/// The deferred form of offload_wait (offload.deferred in the IR): the
/// compute stream does not wait for the copy; `src` stays allocated until
/// the copy has read it, then goes back to PyTorch's allocator. A later
/// load of `host` still waits for the copy (the runtime orders it).
void offloadRelease(const at::Tensor &host, const at::Tensor &src) {
  const char *op = "offload_release";
  checkDense(host, op, "host");
  checkDense(src, op, "src");
  if (host.numel() == 0)
    return;
  State &s = state();
  State::Pending p;
  TORCH_CHECK(takePending(&State::offloads, host.const_data_ptr(), &p),
              "offload::offload_release: no pending offload for the host "
              "tensor at ", host.const_data_ptr(), ": it was already waited "
              "for, or it does not come from offload::offload_start");
  if (!p.token)
    return; // copied synchronously already
  TORCH_CHECK(!p.source || src.numel() == 0 || src.const_data_ptr() == p.source,
              "offload::offload_release: src is not the tensor offload_start "
              "copied from");
  State::Block block;
  {
    std::lock_guard<std::mutex> lock(s.mapMutex);
    auto it = s.blocks.find(host.const_data_ptr());
    TORCH_CHECK(it != s.blocks.end(), "offload::offload_release: the host "
                "tensor's block is gone");
    block = it->second;
  }
  if (p.source) {
    // The runtime calls back once the D2H copy completed; dropping this
    // reference then returns the memory to PyTorch's allocator.
    auto *keep = new at::Tensor(src);
    offload_rt_status st = offload_rt_release_device_after_copy(
        p.ctx, block.buffer,
        [](void *, void *user) { delete static_cast<at::Tensor *>(user); },
        keep);
    if (st < 0) {
      delete keep;
      waitFor(p, op); // cannot hand it over: wait here instead
      return;
    }
  }
  check(offload_rt_token_discard(p.ctx, p.token), op, "offload_rt_token_discard");
}

bool poisonEnabled() {
  const char *v = std::getenv("OFFLOAD_MLIR_POISON");
  return v && *v && std::strcmp(v, "0") != 0;
}

/// Allocates the destination (`size`, `stride`, `dtype` on `device`) and
/// starts the host-to-device copy of `host`'s bytes into its span. Returns
/// the destination and, in *pending, what to wait for.
at::Tensor startLoad(const at::Tensor &host, c10::IntArrayRef size,
                     c10::IntArrayRef stride, at::ScalarType dtype,
                     const c10::Device &device, const char *op,
                     State::Pending *pending) {
  checkDense(host, op, "host");
  TORCH_CHECK(host.is_cpu(), "offload::", op,
              ": host must be a CPU tensor, got one on ", host.device());
  TORCH_CHECK(host.scalar_type() == at::kByte && host.dim() == 1, "offload::",
              op, ": host must be a 1-D torch.uint8 byte buffer (as "
              "offload_start returns), got ", host.scalar_type(),
              " of shape ", host.sizes());
  checkLayout(size, stride, op);
  const int64_t numel = c10::multiply_integers(size);
  const int64_t bytes = numel * static_cast<int64_t>(c10::elementSize(dtype));
  TORCH_CHECK(host.numel() == bytes, "offload::", op, ": host has ",
              host.numel(), " bytes, but size ", size, " of ", dtype,
              " needs ", bytes, " (numel * itemsize)");
  Target t = targetFor(device, op);
  c10::Device dstDevice = t.device == kSim
                              ? c10::Device(c10::kCPU)
                              : c10::Device(c10::kCUDA,
                                            static_cast<c10::DeviceIndex>(t.device));
  std::optional<c10::cuda::CUDAGuard> guard;
  if (t.device != kSim)
    guard.emplace(static_cast<c10::DeviceIndex>(t.device));

  State::Prefetched early;
  bool hadEarly = false;
  {
    std::lock_guard<std::mutex> lock(state().mapMutex);
    hadEarly = forgetPrefetchLocked(host.const_data_ptr(), &early);
  }
  if (hadEarly) {
    if (early.pending.ctx == t.ctx && early.bytes.nbytes() == size_t(bytes) &&
        early.bytes.device() == dstDevice) {
      // Started by the backward graph before (prefetch_issue): the
      // destination is its bytes, laid out as asked.
      at::Tensor dst = at::empty({0}, at::TensorOptions().dtype(dtype).device(dstDevice));
      dst.set_(early.bytes.storage(), 0, size, stride);
      *pending = early.pending;
      ++state().prefetchedLoads;
      return dst;
    }
    discardQuietly(early.pending, "a prefetched load did not match its load");
  }

  // From PyTorch's caching allocator, on the compute stream: memory that
  // work already enqueued there may still use (the copy waits for it). Dense
  // with `stride`, so its bytes are the span [data_ptr, data_ptr + bytes).
  at::Tensor dst = emptyToOverwrite(size, stride, dtype, dstDevice);
  *pending = {t.ctx, nullptr, t.device};
  if (bytes == 0)
    return dst;

  if (poisonEnabled()) {
    // All-ones bytes: NaN in every floating type, -1 / true otherwise. On
    // the compute stream, before the copy (which waits for it).
    if (t.device == kSim)
      std::memset(dst.mutable_data_ptr(), 0xFF, static_cast<size_t>(bytes));
    else
      C10_CUDA_CHECK(cudaMemsetAsync(dst.mutable_data_ptr(), 0xFF,
                                     static_cast<size_t>(bytes),
                                     static_cast<cudaStream_t>(t.stream)));
  }

  State::Block block;
  bool fromPool = false;
  {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mapMutex);
    auto it = s.blocks.find(host.const_data_ptr());
    if (it != s.blocks.end()) {
      block = it->second;
      fromPool = block.ctx == t.ctx &&
                 static_cast<size_t>(bytes) <= block.bytes &&
                 host.is_contiguous();
    }
  }
  if (!fromPool) {
    // Not a live block of this backend's pool (a fallback copy, a user
    // tensor, another device): a plain byte copy into dst's span on the
    // compute stream, which orders it before later compute work by itself.
    ++state().genericLoads;
    bytesOf(dst).copy_(host, /*non_blocking=*/t.device != kSim);
    return dst;
  }
  void *out = nullptr;
  offload_rt_token *token = nullptr;
  check(offload_rt_load_start(t.ctx, block.buffer, dst.mutable_data_ptr(),
                              static_cast<size_t>(bytes), t.stream, &out,
                              &token),
        op, "offload_rt_load_start");
  pending->token = token;
  return dst;
}

at::Tensor load(const at::Tensor &host, c10::IntArrayRef size,
                c10::IntArrayRef stride, at::ScalarType dtype,
                c10::Device device, at::TensorList /*after*/) {
  State::Pending p;
  at::Tensor dst = startLoad(host, size, stride, dtype, device, "load", &p);
  waitFor(p, "load");
  return dst;
}

at::Tensor loadStart(const at::Tensor &host, c10::IntArrayRef size,
                     c10::IntArrayRef stride, at::ScalarType dtype,
                     c10::Device device, at::TensorList /*after*/) {
  State::Pending p;
  at::Tensor dst =
      startLoad(host, size, stride, dtype, device, "load_start", &p);
  if (dst.numel() > 0)
    putPending(&State::loads, dst.const_data_ptr(), p);
  return dst;
}

void loadWait(const at::Tensor &dst, const at::Tensor & /*host*/,
              at::TensorList /*after*/) {
  const char *op = "load_wait";
  checkDense(dst, op, "dst");
  if (dst.numel() == 0)
    return;
  State::Pending p;
  TORCH_CHECK(takePending(&State::loads, dst.const_data_ptr(), &p),
              "offload::load_wait: no pending load into the tensor at ",
              dst.const_data_ptr(), " (shape ", dst.sizes(), ", ",
              dst.scalar_type(), " on ", dst.device(),
              "): it was already waited for, or it does not come from "
              "offload::load_start");
  waitFor(p, op);
}

/// The host values of one forward whose loads the backward graph before
/// this graph's own may start (offload.prefetch in the IR): a new group.
void prefetchPush(at::TensorList hosts) {
  std::vector<const void *> group;
  for (const at::Tensor &host : hosts)
    if (host.numel() > 0)
      group.push_back(host.const_data_ptr());
  if (group.empty())
    return;
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mapMutex);
  s.prefetchGroups.push_back(std::move(group));
}

/// Starts the loads of the most recent group (the graph whose backward runs
/// next, as backward runs the graphs in the reverse of forward's order) on
/// the current stream of each block's device; its load_start takes them.
/// `anchor` only pins the call's place in a graph.
void prefetchIssue(const at::Tensor & /*anchor*/) {
  const char *op = "prefetch_issue";
  State &s = state();
  std::vector<std::pair<const void *, State::Block>> started;
  {
    std::lock_guard<std::mutex> lock(s.mapMutex);
    if (s.prefetchGroups.empty())
      return;
    for (const void *host : s.prefetchGroups.back()) {
      auto it = s.blocks.find(host);
      if (it != s.blocks.end() && !s.prefetched.count(host))
        started.emplace_back(host, it->second);
    }
    s.prefetchGroups.pop_back();
  }
  for (auto &[host, block] : started) {
    c10::Device device = block.device == kSim
                             ? c10::Device(c10::kCPU)
                             : c10::Device(c10::kCUDA,
                                           static_cast<c10::DeviceIndex>(block.device));
    Target t = targetFor(device, op);
    std::optional<c10::cuda::CUDAGuard> guard;
    if (t.device != kSim)
      guard.emplace(static_cast<c10::DeviceIndex>(t.device));
    at::Tensor dst = emptyToOverwrite({static_cast<int64_t>(block.bytes)}, {1},
                                      at::kByte, device);
    void *out = nullptr;
    offload_rt_token *token = nullptr;
    check(offload_rt_load_start(t.ctx, block.buffer, dst.mutable_data_ptr(),
                                block.bytes, t.stream, &out, &token),
          op, "offload_rt_load_start");
    std::lock_guard<std::mutex> lock(s.mapMutex);
    s.prefetched[host] = {dst, {t.ctx, token, t.device}};
  }
}

} // namespace

// flexible_layout: Inductor passes the operands as they are. Under its
// default for custom ops (needs_exact_strides) it gives every custom op its
// own copy of an operand that is not yet a buffer (a fused pointwise result,
// a view): offload_start would then read a private copy that Inductor frees
// right after the call, while the asynchronous copy still reads it, and
// offload_wait's `src` would be another copy, so nothing kept the real
// source alive. With flexible_layout the operand is realised once and shared,
// so `src` of offload_wait is the buffer offload_start reads and Inductor
// frees it only after offload_wait. The ops accept a source with any
// strides: offload_start's `stride` names the layout of the bytes it keeps,
// independent of how Inductor materialised the source.
TORCH_LIBRARY(offload, m) {
  const std::vector<at::Tag> tags = {at::Tag::flexible_layout};
  m.def("offload_start(Tensor src, SymInt[] stride, Tensor[] after) -> Tensor",
        tags);
  m.def("offload_wait(Tensor host, Tensor src, Tensor[] after) -> ()", tags);
  m.def("load(Tensor host, SymInt[] size, SymInt[] stride, ScalarType dtype, "
        "Device device, Tensor[] after) -> Tensor",
        tags);
  m.def("load_start(Tensor host, SymInt[] size, SymInt[] stride, ScalarType dtype, "
        "Device device, Tensor[] after) -> Tensor",
        tags);
  m.def("load_wait(Tensor(a!) dst, Tensor host, Tensor[] after) -> ()", tags);
  m.def("offload_release(Tensor host, Tensor src) -> ()", tags);
  m.def("prefetch_push(Tensor[] hosts) -> ()", tags);
  m.def("prefetch_issue(Tensor anchor) -> ()", tags);
}

// One implementation for both keys: the tensors' devices pick the backend
// (load's `host` is always on the CPU, so the dispatch key alone cannot).
TORCH_LIBRARY_IMPL(offload, CPU, m) {
  m.impl("offload_start", &offloadStart);
  m.impl("offload_wait", &offloadWait);
  m.impl("load", &load);
  m.impl("load_start", &loadStart);
  m.impl("load_wait", &loadWait);
  m.impl("offload_release", &offloadRelease);
  m.impl("prefetch_push", &prefetchPush);
  m.impl("prefetch_issue", &prefetchIssue);
}

TORCH_LIBRARY_IMPL(offload, CUDA, m) {
  m.impl("offload_start", &offloadStart);
  m.impl("offload_wait", &offloadWait);
  m.impl("load", &load);
  m.impl("load_start", &loadStart);
  m.impl("load_wait", &loadWait);
  m.impl("offload_release", &offloadRelease);
  m.impl("prefetch_push", &prefetchPush);
  m.impl("prefetch_issue", &prefetchIssue);
}

//===--- C entry points: statistics ---------------------------------------===//

namespace {

int failWith(int code, const std::string &message) {
  lastError = message;
  return code;
}

void addStats(offload_rt_stats &sum, const offload_rt_stats &s) {
  sum.d2h_copies += s.d2h_copies;
  sum.h2d_copies += s.h2d_copies;
  sum.d2h_bytes += s.d2h_bytes;
  sum.h2d_bytes += s.h2d_bytes;
  sum.d2h_ms += s.d2h_ms;
  sum.h2d_ms += s.h2d_ms;
  sum.waits += s.waits;
  sum.wait_ms += s.wait_ms;
  sum.pinned_reserved_bytes += s.pinned_reserved_bytes;
  sum.pinned_in_use_bytes += s.pinned_in_use_bytes;
  sum.pinned_peak_in_use_bytes += s.pinned_peak_in_use_bytes;
  sum.host_live_bytes += s.host_live_bytes;
  sum.host_peak_live_bytes += s.host_peak_live_bytes;
  sum.pool_chunks += s.pool_chunks;
  sum.pool_grows += s.pool_grows;
  sum.fallbacks += s.fallbacks;
  sum.pool_stalls += s.pool_stalls;
  sum.throttles += s.throttles;
  sum.device_releases += s.device_releases;
  sum.device_in_use_bytes += s.device_in_use_bytes;
  sum.device_peak_bytes += s.device_peak_bytes;
}

} // namespace

extern "C" int offload_torch_get_stats(int backend, offload_rt_stats *out) {
  if (!out)
    return failWith(OFFLOAD_RT_ERROR_INVALID_ARGUMENT, "out is NULL");
  *out = offload_rt_stats{};
  State &s = state();
  std::vector<std::pair<int, offload_rt_context *>> contexts;
  void *simStream = nullptr;
  {
    std::lock_guard<std::mutex> lock(s.contextMutex);
    if (backend == OFFLOAD_TORCH_BACKEND_CUDA) {
      for (size_t i = 0; i < s.cuda.size(); ++i)
        if (s.cuda[i])
          contexts.emplace_back(static_cast<int>(i), s.cuda[i]);
    } else if (backend == OFFLOAD_TORCH_BACKEND_SIM) {
      if (s.sim)
        contexts.emplace_back(kSim, s.sim);
      simStream = s.simStream;
    } else {
      return failWith(OFFLOAD_RT_ERROR_INVALID_ARGUMENT,
                      "backend must be 0 (cuda) or 1 (sim)");
    }
  }
  if (contexts.empty())
    return 1;
  for (auto [device, ctx] : contexts) {
    offload_rt_status st;
    if (device != kSim) {
      // Wait times end with events on the compute streams: settle them too.
      int previous = 0;
      cudaGetDevice(&previous);
      cudaSetDevice(device);
      cudaError_t err = cudaDeviceSynchronize();
      cudaSetDevice(previous);
      if (err != cudaSuccess)
        return failWith(OFFLOAD_RT_ERROR_BACKEND,
                        std::string("cudaDeviceSynchronize failed: ") +
                            cudaGetErrorString(err));
    } else if ((st = offload_rt_stream_synchronize(ctx, simStream)) < 0) {
      return failWith(st, offload_rt_last_error());
    }
    offload_rt_stats one;
    if ((st = offload_rt_synchronize(ctx)) < 0 ||
        (st = offload_rt_get_stats(ctx, &one)) < 0)
      return failWith(st, offload_rt_last_error());
    addStats(*out, one);
  }
  return 0;
}

extern "C" int offload_torch_reset_stats(void) {
  State &s = state();
  std::vector<offload_rt_context *> contexts;
  {
    std::lock_guard<std::mutex> lock(s.contextMutex);
    for (offload_rt_context *c : s.cuda)
      if (c)
        contexts.push_back(c);
    if (s.sim)
      contexts.push_back(s.sim);
  }
  int result = 0;
  for (offload_rt_context *c : contexts) {
    offload_rt_status st = offload_rt_reset_stats(c);
    if (st < 0 && result == 0)
      result = failWith(st, offload_rt_last_error());
  }
  s.hostWaitNs = 0;
  s.hostWaits = 0;
  s.syncFallbacks = 0;
  s.genericLoads = 0;
  s.prefetchedLoads = 0;
  return result;
}

extern "C" size_t offload_torch_stats_size(void) {
  return sizeof(offload_rt_stats);
}

extern "C" int offload_torch_get_extra_stats(offload_torch_extra_stats *out,
                                             size_t size) {
  if (!out || size != sizeof(offload_torch_extra_stats))
    return failWith(-1, "offload_torch_get_extra_stats: size mismatch");
  State &s = state();
  *out = offload_torch_extra_stats{};
  out->host_wait_seconds = s.hostWaitNs.load() * 1e-9;
  out->host_waits = s.hostWaits.load();
  out->sync_fallbacks = s.syncFallbacks.load();
  out->generic_loads = s.genericLoads.load();
  out->untimed_cuda_contexts = s.untimedCudaContexts.load();
  out->prefetched_loads = s.prefetchedLoads.load();
  std::lock_guard<std::mutex> lock(s.mapMutex);
  out->pending_offloads = s.offloads.size();
  out->pending_loads = s.loads.size();
  out->live_host_blocks = s.blocks.size();
  return 0;
}

extern "C" double offload_torch_host_wait_seconds(void) {
  return state().hostWaitNs.load() * 1e-9;
}

extern "C" const char *offload_torch_last_error(void) {
  return lastError.c_str();
}
