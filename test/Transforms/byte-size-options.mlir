// Byte-size options (min-bytes=, budget=, max-inflight-bytes=,
// coalesce-below=, prefetch-bytes=) parse with the project's one byte-size
// parser (offload_support::parseByteSize, also used by offload_rt's
// OFFLOAD_RT_POOL_BYTES): binary and decimal units in any case, dd's lone
// K/M/G/T (binary), fractions with a unit. The value is parsed when the
// option is (its llvm::cl::parser), so a bad one is an error that names the
// option, before any pass runs.

// RUN: offload-opt %s --offload-activations="budget=64M report=text" -o /dev/null 2>&1 | FileCheck %s --check-prefix=FITS
// RUN: offload-opt %s --offload-activations="budget=0.5mib report=text" -o /dev/null 2>&1 | FileCheck %s --check-prefix=FITS
// RUN: offload-opt %s -offload-find-saved-activations -offload-insert-offloads -offload-insert-loads -offload-schedule-copies="max-inflight-bytes=1.5G" | FileCheck %s --check-prefix=INFLIGHT
// FITS-LABEL: offload report: @byte_size_options_forward -> @byte_size_options_backward
// FITS: 0 of 1 saved results offloaded
// INFLIGHT-LABEL: func.func @byte_size_options_forward
// INFLIGHT: offload.load_start

// min-bytes is a byte size too: 4 KiB keeps the 4000-byte value.
// RUN: offload-opt %s --offload-activations="plan=all min-bytes=4KiB report=text" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MIN
// MIN: kept: below min-bytes (4000 < 4096)

// RUN: not offload-opt %s --offload-activations="budget=lots" -o /dev/null 2>&1 | FileCheck %s --check-prefix=LOTS
// RUN: not offload-opt %s --offload-activations="budget=12XB" -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNIT
// RUN: not offload-opt %s --offload-activations="budget=1.5" -o /dev/null 2>&1 | FileCheck %s --check-prefix=WHOLE
// RUN: not offload-opt %s --offload-activations="budget=99999999TiB" -o /dev/null 2>&1 | FileCheck %s --check-prefix=LARGE
// RUN: not offload-opt %s -offload-schedule-copies="max-inflight-bytes=-1GiB" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not offload-opt %s --offload-activations="min-bytes=abc" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MIN-BAD
// RUN: not offload-opt %s --offload-activations="prefetch-bytes=lots" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PREFETCH
// RUN: not offload-opt %s --pass-pipeline="builtin.module(offload-plan{coalesce-below=1.5})" -o /dev/null 2>&1 | FileCheck %s --check-prefix=COALESCE
// A bad value is an error even where no pass would read it (no plan, no
// schedule=true).
// RUN: not offload-opt %s --offload-activations="plan=all schedule=false max-inflight-bytes=lots" -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNUSED
// UNUSED: for the --max-inflight-bytes option: 'lots' is not a byte size
// LOTS: for the --budget option: 'lots' is not a byte size (expected a number with an optional unit, e.g. 64MiB, 1.5GB or 4096)
// UNIT: for the --budget option: unknown unit 'XB' in '12XB' (expected B, KB, MB, GB, TB, KiB, MiB, GiB, TiB, K, M, G or T)
// WHOLE: for the --budget option: byte size '1.5' is not a whole number of bytes (a fraction needs a unit, e.g. 1.5KiB); a fraction of the predicted peak without offload is in (0, 1]
// LARGE: for the --budget option: byte size '99999999TiB' is too large (at most 8.0 EiB)
// NEGATIVE: for the --max-inflight-bytes option: byte size '-1GiB' is negative
// MIN-BAD: for the --min-bytes option: 'abc' is not a byte size
// PREFETCH: for the --prefetch-bytes option: 'lots' is not a byte size (expected a number with an optional unit, e.g. 64MiB, 1.5GB or 4096) (or auto)
// COALESCE: for the --coalesce-below option: byte size '1.5' is not a whole number of bytes

// The pipeline prints each value so that it parses back the same: bytes as
// a number, a fraction as the shortest decimal, auto as auto (on an empty
// module, which every budget fits).
// RUN: echo "" | offload-opt --offload-activations="budget=0.6 min-bytes=1MiB max-inflight-bytes=1.5GiB prefetch-bytes=64K" --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=PRINT
// PRINT: offload-find-saved-activations{{.*}}min-bytes=1048576
// PRINT: offload-plan{{.*}} budget=0.6 coalesce-below=0
// PRINT-SAME: max-inflight-bytes=1610612736
// PRINT-SAME: prefetch-bytes=65536
// RUN: offload-opt %s --offload-activations --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=DEFAULTS
// DEFAULTS: offload-plan{{.*}} budget= coalesce-below=0
// DEFAULTS-SAME: max-inflight-bytes=2147483648
// DEFAULTS-SAME: prefetch-bytes=auto

// One 4000-byte saved value; the step's predicted peak is 15.6 KiB.
func.func @byte_size_options_forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32>)
    attributes {offload.backward = @byte_size_options_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1000xf32>
  %y = math.sin %e : tensor<1000xf32>
  %z = math.sin %y : tensor<1000xf32>
  return %z, %e : tensor<1000xf32>, tensor<1000xf32>
}
func.func @byte_size_options_backward(%s: tensor<1000xf32>, %g: tensor<1000xf32>) -> tensor<1000xf32> {
  %a = math.exp %g : tensor<1000xf32>
  %b = math.exp %a : tensor<1000xf32>
  %c = math.exp %b : tensor<1000xf32>
  %o = arith.mulf %c, %s : tensor<1000xf32>
  return %o : tensor<1000xf32>
}
