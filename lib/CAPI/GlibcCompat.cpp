//===- GlibcCompat.cpp - Keep liboffload_mlir_capi.so loadable on glibc 2.35 =//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// The library must load on the GPU machines' glibc (2.35, Ubuntu 22.04),
// older than the build machine's. The static LLVMSupport (Process.cpp,
// sys::Process::GetRandomNumber) calls arc4random, new in glibc 2.36; this
// definition satisfies it inside the library (the version script keeps it
// local), so the library needs no GLIBC_2.36 symbol. Check with
//   objdump -T build/lib/liboffload_mlir_capi.so | grep GLIBC_2.3[6-9]
//
//===----------------------------------------------------------------------===//

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <sys/random.h>

extern "C" uint32_t arc4random(void) noexcept {
  uint32_t value;
  for (;;) {
    ssize_t got = getrandom(&value, sizeof value, 0);
    if (got == static_cast<ssize_t>(sizeof value))
      return value;
    if (got < 0 && errno == EINTR)
      continue;
    break;
  }
  // getrandom unavailable (a kernel before 3.17): not cryptographic, which
  // LLVM's uses (unique file names, seeds) do not need.
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  static thread_local uint32_t state = 0x9e3779b9u;
  state ^= static_cast<uint32_t>(now.tv_nsec) ^
           static_cast<uint32_t>(now.tv_sec) ^
           static_cast<uint32_t>(reinterpret_cast<uintptr_t>(&now));
  state ^= state << 13;
  state ^= state >> 17;
  state ^= state << 5;
  return state;
}
