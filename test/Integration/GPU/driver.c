/*===- driver.c - Runs a compiled training step against offload_rt --------===*
 *
 * Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
 *
 * The GPU machine has no MLIR, so the step is lowered and compiled to an
 * object file beforehand (build-step-objects.sh) and linked with this driver,
 * which stands in for MLIR's runner utilities: it provides printMemrefF32 and
 * calls the step's entry point, then prints the runtime's statistics.
 *===----------------------------------------------------------------------===*/

#include "offload_rt/offload_rt.h"

#include <stdint.h>
#include <stdio.h>

/* MLIR's ranked memref descriptor, for an f32 buffer of any rank. */
struct Descriptor {
  float *allocated;
  float *aligned;
  int64_t offset;
  int64_t sizesAndStrides[];
};

static void printRows(const float *base, const int64_t *sizes,
                      const int64_t *strides, int64_t rank) {
  if (rank == 0) {
    printf("%g", *base);
    return;
  }
  printf("[");
  for (int64_t i = 0; i < sizes[0]; ++i) {
    if (i)
      printf(rank > 1 ? ",\n " : ", ");
    printRows(base + i * strides[0], sizes + 1, strides + 1, rank - 1);
  }
  printf("]");
}

/* The unranked-memref ABI MLIR uses for printMemrefF32(tensor<*xf32>). */
void printMemrefF32(int64_t rank, void *descriptor) {
  struct Descriptor *d = (struct Descriptor *)descriptor;
  const int64_t *sizes = d->sizesAndStrides;
  const int64_t *strides = d->sizesAndStrides + rank;
  printf("rank = %lld sizes = [", (long long)rank);
  for (int64_t i = 0; i < rank; ++i)
    printf(i ? ", %lld" : "%lld", (long long)sizes[i]);
  printf("] data =\n");
  printRows(d->aligned + d->offset, sizes, strides, rank);
  printf("\n");
}

void step_main(void);

int main(void) {
  step_main();
  offload_rt_context *ctx = offload_rt_default_context();
  if (!ctx) {
    fprintf(stderr, "no offload_rt context: %s\n", offload_rt_last_error());
    return 1;
  }
  if (offload_rt_synchronize(ctx) != OFFLOAD_RT_SUCCESS)
    return 1;
  fprintf(stderr, "backend: %s\n", offload_rt_backend_name(ctx));
  offload_rt_print_summary(ctx, stderr);
  return 0;
}
