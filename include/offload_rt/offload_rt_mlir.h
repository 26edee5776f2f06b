/*===- offload_rt_mlir.h - Entry points for compiled code ---------*- C -*-===*
 *
 * Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
 *
 *===----------------------------------------------------------------------===*
 *
 * What -convert-offload-to-llvm emits calls to. They use the process-default
 * context (offload_rt_default_context) and report a failing call on stderr and
 * abort: compiled code has no way to handle an error. A host buffer is passed
 * around as its handle (offload_rt_host_buffer*).
 *
 * The compute stream: a framework that runs the compiled step on a stream sets
 * it for the calling thread with offload_rt_mlir_set_compute_stream. If none
 * is set, the calling thread itself is the compute stream (CPU-executed code,
 * as in the JIT tests): offload_rt_mlir_wait then blocks the thread until the
 * copy is done, since the thread reads the buffer right after.
 *
 *===----------------------------------------------------------------------===*/

#ifndef OFFLOAD_RT_OFFLOAD_RT_MLIR_H
#define OFFLOAD_RT_OFFLOAD_RT_MLIR_H

#include "offload_rt/offload_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

OFFLOAD_RT_EXPORT void offload_rt_mlir_set_compute_stream(void *stream);
/* The stream set for this thread, or NULL (the thread computes itself). */
OFFLOAD_RT_EXPORT void *offload_rt_mlir_compute_stream(void);

/* Starts the D2H copy of `bytes` at device_ptr behind the work on `stream`;
 * returns the host buffer's handle. The stream never waits for it. */
OFFLOAD_RT_EXPORT void *offload_rt_mlir_offload_start(void *device_ptr,
                                                      int64_t bytes,
                                                      void *stream);
/* Hands the offloaded source to the runtime (an offload with
 * release_source): `allocated` is the allocation from
 * _mlir_memref_to_llvm_alloc, `copied` the pointer the copy started at. The
 * runtime frees it once the copy is done (for data kept on the device: once
 * the handle is freed and its loads are done): stream-ordered on the D2H
 * stream when both are the same (offload_rt_free_device_after_copy), from a
 * release callback otherwise (offload_rt_release_device_after_copy). */
OFFLOAD_RT_EXPORT void offload_rt_mlir_release_source(void *handle,
                                                      void *allocated,
                                                      void *copied);
/* The pinned copy's address (NULL while it is kept on the device). */
OFFLOAD_RT_EXPORT void *offload_rt_mlir_host_data(void *handle);
/* Starts the H2D copy into new stream-ordered device memory; returns a token
 * for offload_rt_mlir_wait. */
OFFLOAD_RT_EXPORT void *offload_rt_mlir_load_start(void *handle, int64_t bytes,
                                                   void *stream);
/* Makes `stream` wait for the load (device side; the thread itself when
 * stream is NULL) and returns the loaded device buffer. */
OFFLOAD_RT_EXPORT void *offload_rt_mlir_wait(void *token, void *stream);

/* Copy groups (offload_rt.h): n small copies issued at one point of the
 * step, moved as one transfer; each handle and token is then used on its
 * own, exactly as one from the single calls above.
 * offload_rt_offload_group on the default context: out_handles[i] is the
 * host buffer handle of device_ptrs[i], as offload_rt_mlir_offload_start
 * returns for one. */
OFFLOAD_RT_EXPORT void offload_rt_mlir_offload_group_start(
    int64_t n, void **device_ptrs, int64_t *bytes, void *stream,
    void **out_handles);
/* offload_rt_load_group_start on the default context: out_tokens[i] is a
 * token for offload_rt_mlir_wait, as offload_rt_mlir_load_start returns for
 * one. */
OFFLOAD_RT_EXPORT void offload_rt_mlir_load_group_start(
    int64_t n, void **handles, int64_t *bytes, void *stream,
    void **out_tokens);
/* Returns the host buffer to the pinned pool once its copies are done. */
OFFLOAD_RT_EXPORT void offload_rt_mlir_free_host(void *handle);
/* Waits for every copy and release of the default context, then prints its
 * offload_rt_print_summary to stdout (for tests of compiled code). */
OFFLOAD_RT_EXPORT void offload_rt_mlir_print_summary(void);
/* Waits for every copy and release of the default context: a step boundary
 * for drivers and tests that must not depend on how soon the copy streams
 * run (the host-simulation backend's streams are threads that compete with
 * the compiled code for the host's cores). */
OFFLOAD_RT_EXPORT void offload_rt_mlir_synchronize(void);

/* The allocation functions of MLIR's memref lowering with
 * use-generic-functions: the compiled step's device buffers come from the
 * runtime's device allocator (stream-ordered on the compute stream). */
OFFLOAD_RT_EXPORT void *_mlir_memref_to_llvm_alloc(size_t bytes);
OFFLOAD_RT_EXPORT void _mlir_memref_to_llvm_free(void *ptr);

#ifdef __cplusplus
}
#endif

#endif /* OFFLOAD_RT_OFFLOAD_RT_MLIR_H */
