/* bench_import: the time rlx_onnx_import takes for a model when the input values are given
 * (rlx_onnx_options_set_input_value, as `rlx run` does) against the same import with the input
 * shapes only (rlx_onnx_options_set_shape, as `rlx info --shape` does). The importer uses input
 * values only where a shape or an attribute needs one, so the two should cost about the same
 * (issue 7's goal: with values <= 1.1x shapes only).
 *
 * usage: bench_import MODEL.onnx NAME=FILE.npy... [--repeat N]    (default 7)
 *
 * The two imports alternate, after one warm-up of each; it prints the median of each, their
 * ratio, and the graph's node count. Machines are noisy: compare the ratio, not times across
 * runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "rlx/rlx.h"

/* Imports once and returns the time in ms (-1 on error, reported when `report`). */
static double time_import(const char *path, const rlx_onnx_options *o, size_t *nodes, bool report) {
  rlx_onnx_model *m = NULL;
  double t0 = bench_now_ms();
  rlx_status *st = rlx_onnx_import(path, o, &m);
  double ms = bench_now_ms() - t0;
  if (st && !report) rlx_status_free(st);
  if (st) return report ? bench_fail("bench_import", st) : 0, -1;
  *nodes = rlx_graph_num_nodes(rlx_onnx_model_graph(m));
  rlx_onnx_model_free(m);
  return ms;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench_import MODEL.onnx NAME=FILE.npy... [--repeat N]\n");
    return 2;
  }
  int repeat = 7, n_in = 0;
  rlx_tensor *vals[64] = {0};
  rlx_onnx_options *ov = NULL, *os = NULL;
  rlx_status *st = rlx_onnx_options_create(&ov);
  if (!st) st = rlx_onnx_options_create(&os);
  for (int i = 2; !st && i < argc; i++) {
    if (!strcmp(argv[i], "--repeat") && i + 1 < argc) {
      repeat = atoi(argv[++i]);
      continue;
    }
    char *eq = strrchr(argv[i], '=');
    if (!eq || n_in == 64) {
      fprintf(stderr, "bench_import: expected NAME=FILE.npy, got '%s'\n", argv[i]);
      return 2;
    }
    *eq = '\0';
    st = rlx_npy_load(eq + 1, &vals[n_in]);
    if (!st) st = rlx_onnx_options_set_input_value(ov, argv[i], vals[n_in]);
    if (!st) st = rlx_onnx_options_set_shape(os, argv[i], rlx_tensor_rank(vals[n_in]), rlx_tensor_dims(vals[n_in]));
    n_in++;
  }
  if (repeat < 1) repeat = 1;
  double *tv = calloc((size_t)repeat, sizeof *tv), *ts = calloc((size_t)repeat, sizeof *ts);
  size_t nv = 0, ns = 0;
  int rc = st ? bench_fail("bench_import", st) : (!tv || !ts) ? 1 : 0;
  /* Some models import only with values (an If whose branches cannot both be typed): shapes
   * only is then reported as failing. */
  bool shapes_ok = true;
  for (int r = -1; !rc && r < repeat; r++) {
    double a = time_import(argv[1], ov, &nv, true), b = shapes_ok ? time_import(argv[1], os, &ns, r < 0) : -1;
    if (a < 0) rc = 1;
    shapes_ok = b >= 0;
    if (r >= 0) tv[r] = a, ts[r] = b;
  }
  if (!rc) {
    qsort(tv, (size_t)repeat, sizeof *tv, bench_cmp_double);
    qsort(ts, (size_t)repeat, sizeof *ts, bench_cmp_double);
    double mv = tv[repeat / 2], ms = ts[repeat / 2];
    if (!shapes_ok)
      printf("%s: import with values %.1f ms (%zu nodes), shapes only fails (median of %d)\n", argv[1], mv, nv, repeat);
    else printf("%s: import with values %.1f ms (%zu nodes), shapes only %.1f ms (%zu nodes), ratio %.2f (median of %d)\n", argv[1],
           mv, nv, ms, ns, mv / ms, repeat);
  }
  free(tv);
  free(ts);
  for (int i = 0; i < n_in; i++) rlx_tensor_free(vals[i]);
  rlx_onnx_options_free(ov);
  rlx_onnx_options_free(os);
  return rc;
}
