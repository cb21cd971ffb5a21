/* fuzz_util.h: for the fuzz targets that run graphs: rlx's allocation limit, and running a graph
 * once on small zero inputs. */
#ifndef RLX_FUZZ_UTIL_H
#define RLX_FUZZ_UTIL_H

#include <stdlib.h>
#include <string.h>

#include "rlx/calibrate.h"
#include "rlx/rlx.h"

/* rlx's allocation limit in the targets (RLX_MAX_ALLOCATION, rlx/executable.h): 256 MiB, well
 * under the largest malloc scripts/fuzz.sh lets ASan serve (max_allocation_size_mb=2048; a larger
 * one returns NULL) and a sixteenth of its -rss_limit_mb / -malloc_limit_mb (4096), more arrays
 * than a program of a few steps keeps alive at once: a buffer over it is refused by rlx with
 * RESOURCE_EXHAUSTED before MLX allocates (values whose dims derive from symbolic ones escape
 * fuzz_small's 64 MiB bound, so this is what bounds them). */
#define FUZZ_MAX_ALLOCATION "256M"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  return setenv("RLX_MAX_ALLOCATION", FUZZ_MAX_ALLOCATION, 1);
}

/* Inputs larger than this many elements (after symbolic dims become 1) are not run, nor graphs
 * with a value larger than FUZZ_MAX_VALUE_BYTES or whose predicted work exceeds FUZZ_MAX_FLOPS
 * operations (valid but huge work: not what the targets look for; a Conv whose operands each fit
 * in 64 MiB can take many minutes, and so can a pooling window or a reduction visiting 1e10
 * elements of a byte tensor; rlx's own CPU kernels, instrumented here, run near 30 MFLOP/s, so a
 * ConvTranspose of 2 GFLOP took 74 s). What a run may allocate is bounded by rlx itself. */
#define FUZZ_MAX_INPUT_ELEMS ((int64_t)1 << 16)
#define FUZZ_MAX_VALUE_BYTES ((int64_t)1 << 26)
#define FUZZ_MAX_FLOPS 5e8

/* false when the cost model (rlx/calibrate.h) predicts more than FUZZ_MAX_FLOPS for one run of g;
 * true when it cannot say (symbolic input dims, an op it cannot price). */
static inline bool fuzz_cheap(const rlx_graph *g) {
  rlx_calibration cal;
  memset(&cal, 0, sizeof cal);
#define RLX_X(field, unit, what) cal.field = 1;
  RLX_CALIBRATION_FIGURES(RLX_X)
#undef RLX_X
  rlx_cost_estimate est;
  rlx_status *st = rlx_cost_predict(g, &cal, RLX_DEVICE_CPU, &est);
  bool cheap = st || est.flops <= FUZZ_MAX_FLOPS;
  rlx_status_free(st);
  return cheap;
}

/* true when every value of g (symbolic dims taken as 1) fits FUZZ_MAX_VALUE_BYTES. */
static inline bool fuzz_small(const rlx_graph *g) {
  for (size_t v = 0; v < rlx_graph_num_values(g); v++) {
    const rlx_type *t = rlx_graph_value_type(g, (rlx_value)v);
    int64_t n = (int64_t)rlx_dtype_size(t->dtype);
    for (int d = 0; d < t->rank && n <= FUZZ_MAX_VALUE_BYTES; d++) n = t->dims[d] < 0 ? n : t->dims[d] > FUZZ_MAX_VALUE_BYTES ? FUZZ_MAX_VALUE_BYTES + 1 : n * t->dims[d];
    if (n > FUZZ_MAX_VALUE_BYTES) return false;
  }
  return true;
}

/* Runs g once in `mode` on zero-filled inputs (symbolic dims bound to 1), with params from
 * set_params (may be NULL); every status is dropped: the target only looks for crashes. */
static inline void fuzz_run(const rlx_graph *g, rlx_mode mode, rlx_status *(*set_params)(void *, rlx_executable *), void *ud) {
  if (!fuzz_small(g) || !fuzz_cheap(g)) return;
  rlx_executable *ex = NULL;
  size_t ni = rlx_graph_num_inputs(g), no = rlx_graph_num_outputs(g);
  const char **names = calloc(ni + 1, sizeof *names);
  rlx_tensor **vals = calloc(ni + 1, sizeof *vals), **outs = calloc(no + 1, sizeof *outs);
  rlx_status *st = names && vals && outs ? rlx_executable_create(g, RLX_DEVICE_CPU, mode, &ex) : NULL;
  if (!st && ex && set_params) st = set_params(ud, ex);
  for (size_t i = 0; !st && ex && i < ni; i++) {
    rlx_type t = *rlx_graph_value_type(g, rlx_graph_input_value(g, i));
    int64_t n = 1;
    for (int d = 0; d < t.rank; d++) {
      if (t.dims[d] < 0) t.dims[d] = 1;
      n = t.dims[d] > FUZZ_MAX_INPUT_ELEMS ? FUZZ_MAX_INPUT_ELEMS + 1 : n * t.dims[d];
      if (n > FUZZ_MAX_INPUT_ELEMS) break;
    }
    if (n > FUZZ_MAX_INPUT_ELEMS) break;
    names[i] = rlx_graph_input_name(g, i);
    st = rlx_tensor_create(t.dtype, t.rank, t.dims, NULL, 0, &vals[i]);
    if (!st && i + 1 == ni) st = rlx_executable_run(ex, ni, names, vals, no, outs);
  }
  if (!st && ex && ni == 0) st = rlx_executable_run(ex, 0, NULL, NULL, no, outs);
  rlx_status_free(st);
  for (size_t i = 0; outs && i < no; i++) rlx_tensor_free(outs[i]);
  for (size_t i = 0; vals && i < ni; i++) rlx_tensor_free(vals[i]);
  rlx_executable_free(ex);
  free(names);
  free(vals);
  free(outs);
}

#endif
