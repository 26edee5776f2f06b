/*===- offload-c/Pipeline.h - C API of the offload pipeline -------*- C -*-===*\
|*                                                                            *|
|* Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.  *|
|*                                                                            *|
|*===----------------------------------------------------------------------===*|
|*                                                                            *|
|* Runs the `offload-activations` pipeline in-process, for callers without    *|
|* MLIR (the PyTorch bridge, through ctypes). The library that implements it, *|
|* liboffload_mlir_capi.so, links MLIR, LLVM and libstdc++ statically and     *|
|* exports only the functions below. See docs/c-api.md.                       *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef OFFLOAD_C_PIPELINE_H
#define OFFLOAD_C_PIPELINE_H

#if defined(_WIN32)
#define OFFLOAD_MLIR_CAPI_EXPORT __declspec(dllexport)
#else
#define OFFLOAD_MLIR_CAPI_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Runs the `offload-activations` pipeline on the module in `input_ir` (MLIR
   text, NUL-terminated), with `pipeline_options` in the syntax of
   `offload-opt --offload-activations="<options>"`, e.g.
   "min-bytes=4096 plan=hidden schedule=true report=json"; NULL or "" means the
   defaults. The result is what
   `offload-opt in.mlir --offload-activations="<options>"` prints (the custom
   assembly form, ending in a newline).

   On success returns 0 and sets
     *out_ir     to the transformed module,
     *out_report to the report the pipeline produced with report=text|json
                 (which offload-opt prints on stderr, or on stdout with
                 report-file=-; an empty string with report=none, the
                 default, or when report-file= names a file, which is then
                 written as offload-opt would write it),
     *out_error  to the warnings and remarks emitted, if any (usually "").
   On failure (input that does not parse or verify, a module that breaks the
   training-step contract, a bad option string, a pass failure) returns
   non-zero, sets *out_error to every diagnostic, each with its location
   ("<input>:3:5: error: message", followed by the source line and notes; a
   problem in the option string is located as "<options>:1:COL"), and sets
   *out_ir and *out_report to NULL.

   Nothing is printed to the process's stdout or stderr, except that an option
   value of a type the library does not check itself may, like in offload-opt,
   also be diagnosed on stderr. Any of the out pointers may be NULL if the
   caller does not want that string. Every string returned is allocated with
   malloc; free it with offload_mlir_free.

   Thread safety: calls are independent (each one parses into its own MLIR
   context, threading disabled) and may run concurrently from several threads. */
OFFLOAD_MLIR_CAPI_EXPORT int
offload_mlir_run_pipeline(const char *input_ir, const char *pipeline_options,
                          char **out_ir, char **out_report, char **out_error);

/* Frees a string returned by this library; NULL is allowed. */
OFFLOAD_MLIR_CAPI_EXPORT void offload_mlir_free(char *str);

/* A static string naming the library and the MLIR it was built with, e.g.
   "offload-mlir 0.1.0 (MLIR 22.1.0)". Never freed. */
OFFLOAD_MLIR_CAPI_EXPORT const char *offload_mlir_version(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OFFLOAD_C_PIPELINE_H */
