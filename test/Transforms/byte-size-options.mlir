// Byte-size options (budget=, max-inflight-bytes=) parse with the project's
// one byte-size parser (offload_support::parseByteSize, also used by
// offload_rt's OFFLOAD_RT_POOL_BYTES): binary and decimal units in any case,
// dd's lone K/M/G/T (binary), fractions with a unit. Bad values say why.

// RUN: offload-opt %s --offload-activations="budget=64M report=text" -o /dev/null 2>&1 | FileCheck %s --check-prefix=FITS
// RUN: offload-opt %s --offload-activations="budget=0.5mib report=text" -o /dev/null 2>&1 | FileCheck %s --check-prefix=FITS
// RUN: offload-opt %s -offload-find-saved-activations -offload-insert-offloads -offload-insert-loads -offload-schedule-copies="max-inflight-bytes=1.5G" | FileCheck %s --check-prefix=INFLIGHT
// FITS: 0 of 1 saved results offloaded
// INFLIGHT: offload.load_start

// RUN: not offload-opt %s --offload-activations="budget=lots" -mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s --check-prefix=LOTS
// RUN: not offload-opt %s --offload-activations="budget=12XB" -mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNIT
// RUN: not offload-opt %s --offload-activations="budget=1.5" -mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s --check-prefix=WHOLE
// RUN: not offload-opt %s --offload-activations="budget=99999999TiB" -mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s --check-prefix=LARGE
// RUN: not offload-opt %s -offload-schedule-copies="max-inflight-bytes=-1GiB" -mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// A bad value is an error even where no pass would read it (no plan, no
// schedule=true): the pipeline checks its options before it is built.
// RUN: not offload-opt %s --offload-activations="max-inflight-bytes=lots" -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNUSED
// UNUSED: error: option max-inflight-bytes: 'lots' is not a byte size
// LOTS: error: option budget: 'lots' is not a byte size (expected a number with an optional unit, e.g. 64MiB, 1.5GB or 4096)
// UNIT: error: option budget: unknown unit 'XB' in '12XB' (expected B, KB, MB, GB, TB, KiB, MiB, GiB, TiB, K, M, G or T)
// WHOLE: error: option budget: byte size '1.5' is not a whole number of bytes (a fraction needs a unit, e.g. 1.5KiB); a fraction of the predicted peak without offload is in (0, 1]
// LARGE: error: option budget: byte size '99999999TiB' is too large (at most 8.0 EiB)
// NEGATIVE: error: option max-inflight-bytes: byte size '-1GiB' is negative

// One 4000-byte saved value; the step's predicted peak is 15.6 KiB.
func.func @forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32>)
    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1000xf32>
  %y = math.sin %e : tensor<1000xf32>
  %z = math.sin %y : tensor<1000xf32>
  return %z, %e : tensor<1000xf32>, tensor<1000xf32>
}
func.func @backward(%s: tensor<1000xf32>, %g: tensor<1000xf32>) -> tensor<1000xf32> {
  %a = math.exp %g : tensor<1000xf32>
  %b = math.exp %a : tensor<1000xf32>
  %c = math.exp %b : tensor<1000xf32>
  %o = arith.mulf %c, %s : tensor<1000xf32>
  return %o : tensor<1000xf32>
}
