/* fuzz_npy: libFuzzer target for the .npy reader (rlx_npy_parse): any bytes must give a tensor or
 * a status, never a crash, a leak or undefined behaviour. */
#include <stddef.h>
#include <stdint.h>

#include "rlx/rlx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  rlx_tensor *t = NULL;
  rlx_status *st = rlx_npy_parse(data, size, "fuzz", &t);
  if (!st) {
    /* touch every byte the tensor claims to own */
    volatile uint8_t sink = 0;
    const uint8_t *b = rlx_tensor_cdata(t);
    for (size_t i = 0; i < rlx_tensor_nbytes(t); i++) sink ^= b[i];
    (void)sink;
  }
  rlx_status_free(st);
  rlx_tensor_free(t);
  return 0;
}
