//===- SimBackend.cpp - the runtime's streams and copies on host threads --===//
//
// A stand-in for the CUDA runtime that keeps its ordering rules, so the pool,
// the ordering guarantees and the accounting are tested without a GPU:
//   - a stream is a worker thread draining a FIFO of tasks;
//   - recording an event enqueues a task that marks a fresh marker done (and
//     stamps it with the worker's clock); a stream wait enqueues a task that
//     blocks that stream's worker until the marker captured at enqueue time is
//     done, so the caller never blocks, as with cudaStreamWaitEvent;
//   - "device" memory is plain malloc'd memory; freeAsync is a task that
//     poisons the bytes before freeing them, so a copy that ran after the
//     free would read the poison and fail the tests' byte comparisons;
//   - copies are memcpy on the stream's worker, optionally slowed to a given
//     link bandwidth and latency; a batch of copies (cudaMemcpyBatchAsync) is
//     one task that pays the latency once and the bandwidth for its total.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace offload_rt {
namespace {

using Clock = std::chrono::steady_clock;

Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(s));
}

/// The completion of the work captured by one recordEvent.
struct Marker {
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  Clock::time_point time;

  void complete() {
    std::lock_guard<std::mutex> lock(mutex);
    time = Clock::now();
    done = true;
    cv.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait(lock, [&] { return done; });
  }
  bool isDone() {
    std::lock_guard<std::mutex> lock(mutex);
    return done;
  }
};

struct SimEvent {
  std::mutex mutex;
  std::shared_ptr<Marker> latest; // null until first recorded
  std::shared_ptr<Marker> current() {
    std::lock_guard<std::mutex> lock(mutex);
    return latest;
  }
};

class SimStream {
public:
  SimStream() : worker_([this] { run(); }) {}
  ~SimStream() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    worker_.join();
  }

  void enqueue(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      tasks_.push_back(std::move(task));
      ++submitted_;
    }
    wake_.notify_all();
  }

  /// Runs `task` on the calling thread if the stream has nothing queued or
  /// running (it would run at once in stream order), else enqueues it. Code
  /// lowered to run on the host frees through an idle stream; doing the
  /// free at once makes what the runtime counts as in use not depend on
  /// when the worker thread gets to it.
  void runNowIfIdle(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (tasks_.empty() && finished_ == submitted_) {
        task();
        ++submitted_;
        ++finished_;
        drained_.notify_all();
        return;
      }
    }
    enqueue(std::move(task));
  }

  void synchronize() {
    std::unique_lock<std::mutex> lock(mutex_);
    uint64_t target = submitted_;
    drained_.wait(lock, [&] { return finished_ >= target; });
  }

private:
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      // Drain everything before stopping: destroying a stream in CUDA also
      // lets its pending work complete.
      wake_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty())
        return;
      std::function<void()> task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      task();
      lock.lock();
      ++finished_;
      drained_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_, drained_;
  std::deque<std::function<void()>> tasks_;
  uint64_t submitted_ = 0, finished_ = 0;
  bool stopping_ = false;
  std::thread worker_; // last: starts after the fields above exist
};

constexpr unsigned char kFreedPoison = 0xDB;

class SimBackend final : public Backend {
public:
  explicit SimBackend(const offload_rt_options &opts)
      : gbps_(opts.sim_copy_gbps), latencyUs_(opts.sim_copy_latency_us) {}

  ~SimBackend() override {
    defaultStream_.reset();
    for (auto &entry : deviceAllocs_)
      std::free(entry.first);
  }

  const char *name() const override { return "sim"; }
  Stream resolve(Stream s) override {
    return s ? s : static_cast<Stream>(defaultStream_.get());
  }

  offload_rt_status createStream(Stream *out) override {
    if (auto st = injected("cudaStreamCreateWithFlags"))
      return st;
    *out = new SimStream();
    return OFFLOAD_RT_SUCCESS;
  }
  offload_rt_status destroyStream(Stream s) override {
    delete stream(s);
    return OFFLOAD_RT_SUCCESS;
  }
  offload_rt_status synchronizeStream(Stream s) override {
    if (auto st = injected("cudaStreamSynchronize"))
      return st;
    stream(s)->synchronize();
    return OFFLOAD_RT_SUCCESS;
  }
  offload_rt_status launchHostFunc(Stream s, void (*fn)(void *),
                                   void *arg) override {
    if (auto st = injected("cudaLaunchHostFunc"))
      return st;
    stream(s)->enqueue([fn, arg] { fn(arg); });
    return OFFLOAD_RT_SUCCESS;
  }

  offload_rt_status createEvent(Event *out, bool) override {
    if (auto st = injected("cudaEventCreateWithFlags"))
      return st;
    *out = new SimEvent();
    return OFFLOAD_RT_SUCCESS;
  }
  offload_rt_status destroyEvent(Event e) override {
    // Tasks hold the markers, not the event, so pending work is unaffected.
    delete static_cast<SimEvent *>(e);
    return OFFLOAD_RT_SUCCESS;
  }
  offload_rt_status recordEvent(Event e, Stream s) override {
    if (auto st = injected("cudaEventRecord"))
      return st;
    auto marker = std::make_shared<Marker>();
    auto *event = static_cast<SimEvent *>(e);
    {
      std::lock_guard<std::mutex> lock(event->mutex);
      event->latest = marker;
    }
    stream(s)->enqueue([marker] { marker->complete(); });
    return OFFLOAD_RT_SUCCESS;
  }
  offload_rt_status streamWaitEvent(Stream s, Event e) override {
    if (auto st = injected("cudaStreamWaitEvent"))
      return st;
    if (auto marker = static_cast<SimEvent *>(e)->current())
      stream(s)->enqueue([marker] { marker->wait(); });
    return OFFLOAD_RT_SUCCESS;
  }
  offload_rt_status queryEvent(Event e, bool *done) override {
    if (auto st = injected("cudaEventQuery"))
      return st;
    auto marker = static_cast<SimEvent *>(e)->current();
    *done = !marker || marker->isDone();
    return OFFLOAD_RT_SUCCESS;
  }
  offload_rt_status synchronizeEvent(Event e) override {
    if (auto st = injected("cudaEventSynchronize"))
      return st;
    if (auto marker = static_cast<SimEvent *>(e)->current())
      marker->wait();
    return OFFLOAD_RT_SUCCESS;
  }
  offload_rt_status elapsedMs(Event start, Event end, float *ms) override {
    auto a = static_cast<SimEvent *>(start)->current();
    auto b = static_cast<SimEvent *>(end)->current();
    if (!a || !b || !a->isDone() || !b->isDone())
      return fail(OFFLOAD_RT_ERROR_BACKEND,
                  "cudaEventElapsedTime failed: device not ready");
    *ms = std::chrono::duration<float, std::milli>(b->time - a->time).count();
    return OFFLOAD_RT_SUCCESS;
  }

  offload_rt_status memcpyAsync(void *dst, const void *src, size_t bytes,
                                CopyKind, Stream s) override {
    if (auto st = injected("cudaMemcpyAsync"))
      return st;
    if (bytes && (!dst || !src))
      return fail(OFFLOAD_RT_ERROR_BACKEND,
                  "cudaMemcpyAsync failed: invalid argument");
    double gbps = gbps_, latencyUs = latencyUs_;
    stream(s)->enqueue([=] {
      // Latency before the bytes move, transfer time after: memory read late
      // and written late, like a real copy, so a missing wait on either side
      // shows up as wrong bytes.
      auto start = Clock::now();
      std::this_thread::sleep_until(start + seconds(latencyUs * 1e-6));
      std::memcpy(dst, src, bytes);
      double transfer = gbps > 0 ? bytes / (gbps * 1e9) : 0;
      std::this_thread::sleep_until(start +
                                    seconds(latencyUs * 1e-6 + transfer));
    });
    return OFFLOAD_RT_SUCCESS;
  }
  // One task for the whole batch: the latency is paid once (the batch is
  // one piece of stream work, as one cudaMemcpyBatchAsync is one submission),
  // the bandwidth over the batch's total bytes. All arguments are checked
  // before anything is enqueued, so a failed batch leaves nothing pending.
  offload_rt_status memcpyBatchAsync(void *const *dsts,
                                     const void *const *srcs,
                                     const size_t *sizes, size_t n, CopyKind,
                                     Stream s) override {
    if (auto st = injected("cudaMemcpyBatchAsync"))
      return st;
    size_t total = 0;
    for (size_t i = 0; i < n; ++i) {
      if (sizes[i] && (!dsts[i] || !srcs[i]))
        return fail(OFFLOAD_RT_ERROR_BACKEND,
                    "cudaMemcpyBatchAsync failed: invalid argument");
      total += sizes[i];
    }
    std::vector<void *> to(dsts, dsts + n);
    std::vector<const void *> from(srcs, srcs + n);
    std::vector<size_t> bytes(sizes, sizes + n);
    double gbps = gbps_, latencyUs = latencyUs_;
    stream(s)->enqueue([=] {
      // As memcpyAsync: latency first, then the bytes, then the transfer
      // time, so a missing wait on either side reads wrong bytes.
      auto start = Clock::now();
      std::this_thread::sleep_until(start + seconds(latencyUs * 1e-6));
      for (size_t i = 0; i < to.size(); ++i)
        std::memcpy(to[i], from[i], bytes[i]);
      double transfer = gbps > 0 ? total / (gbps * 1e9) : 0;
      std::this_thread::sleep_until(start +
                                    seconds(latencyUs * 1e-6 + transfer));
    });
    return OFFLOAD_RT_SUCCESS;
  }
  offload_rt_status mallocAsync(void **out, size_t bytes, Stream) override {
    if (auto st = injected("cudaMallocAsync"))
      return st;
    // Allocating eagerly is a valid stream-ordered allocation: the memory
    // merely becomes available earlier than the stream needs it.
    void *p = std::malloc(bytes ? bytes : 1);
    if (!p)
      return fail(OFFLOAD_RT_ERROR_BACKEND,
                  "cudaMallocAsync failed: out of memory");
    std::lock_guard<std::mutex> lock(allocMutex_);
    deviceAllocs_[p] = bytes;
    noteDeviceAlloc(bytes);
    *out = p;
    return OFFLOAD_RT_SUCCESS;
  }
  offload_rt_status freeAsync(void *ptr, Stream s) override {
    if (auto st = injected("cudaFreeAsync"))
      return st;
    size_t bytes;
    {
      std::lock_guard<std::mutex> lock(allocMutex_);
      auto it = deviceAllocs_.find(ptr);
      if (it == deviceAllocs_.end())
        return fail(OFFLOAD_RT_ERROR_BACKEND,
                    "cudaFreeAsync failed: invalid argument");
      bytes = it->second;
      deviceAllocs_.erase(it);
    }
    stream(s)->runNowIfIdle([this, ptr, bytes] {
      std::memset(ptr, kFreedPoison, bytes);
      std::free(ptr);
      noteDeviceFree(bytes);
    });
    return OFFLOAD_RT_SUCCESS;
  }

  offload_rt_status hostAlloc(void **out, size_t bytes) override {
    if (auto st = injected("cudaHostAlloc"))
      return st;
    constexpr size_t page = 4096;
    void *p = std::aligned_alloc(page, (bytes + page - 1) / page * page);
    if (!p)
      return fail(OFFLOAD_RT_ERROR_BACKEND,
                  "cudaHostAlloc failed: out of memory");
    *out = p;
    return OFFLOAD_RT_SUCCESS;
  }
  offload_rt_status hostFree(void *ptr) override {
    std::free(ptr);
    return OFFLOAD_RT_SUCCESS;
  }

  offload_rt_status injectFailure(const char *call, int nth) override {
    std::lock_guard<std::mutex> lock(injectMutex_);
    injections_[call] = nth;
    return OFFLOAD_RT_SUCCESS;
  }

private:
  SimStream *stream(Stream s) { return static_cast<SimStream *>(resolve(s)); }

  /// Counts down an injected failure for `call`; non-success when it fires.
  offload_rt_status injected(const char *call) {
    std::lock_guard<std::mutex> lock(injectMutex_);
    if (injections_.empty())
      return OFFLOAD_RT_SUCCESS;
    auto it = injections_.find(call);
    if (it == injections_.end() || --it->second > 0)
      return OFFLOAD_RT_SUCCESS;
    injections_.erase(it);
    return fail(OFFLOAD_RT_ERROR_BACKEND, "%s failed: injected failure (sim)",
                call);
  }

  double gbps_, latencyUs_;
  std::unique_ptr<SimStream> defaultStream_ = std::make_unique<SimStream>();
  std::mutex allocMutex_, injectMutex_;
  std::unordered_map<void *, size_t> deviceAllocs_;
  std::map<std::string, int> injections_;
};

} // namespace

offload_rt_status Backend::injectFailure(const char *, int) {
  return fail(OFFLOAD_RT_ERROR_UNAVAILABLE,
              "failure injection is only available on the sim backend");
}

offload_rt_status Backend::memcpyBatchAsync(void *const *dsts,
                                            const void *const *srcs,
                                            const size_t *sizes, size_t n,
                                            CopyKind kind, Stream s) {
  for (size_t i = 0; i < n; ++i) {
    offload_rt_status st = memcpyAsync(dsts[i], srcs[i], sizes[i], kind, s);
    if (st >= 0)
      continue;
    // The copies before this one are queued: let them finish, so a failed
    // batch leaves nothing running on memory the caller takes back. Keep
    // the failure's message, not the synchronisation's.
    if (i > 0) {
      std::string message = offload_rt_last_error();
      synchronizeStream(s);
      fail(st, "%s", message.c_str());
    }
    return st;
  }
  return OFFLOAD_RT_SUCCESS;
}

std::unique_ptr<Backend> createSimBackend(const offload_rt_options &opts) {
  return std::make_unique<SimBackend>(opts);
}

} // namespace offload_rt
