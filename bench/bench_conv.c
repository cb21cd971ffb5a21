/* bench_conv: rlx's Conv / ConvTranspose lowering (src/mlx/conv_ops.c) against the plain
 * mx::conv_general lowering (channels-last transposes around one conv_general call, as rlx
 * lowered every convolution before), in the same binary on the same MLX arrays.
 *
 * usage: bench_conv [REPEATS]    (default 21)
 *
 * For each shape both versions are built from scratch each repetition (lower, eval, release the
 * arrays), interleaved, after 3 warm-up runs; the table shows the median times and plain/rlx
 * (> 1: rlx is faster) and the largest difference between the two outputs. Machines are noisy:
 * compare ratios from one run, not times across runs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "mlx/lower.h"

typedef struct shape {
  const char *what;
  bool transpose;
  int nsp;
  int64_t n, c, co, g, sp[2], k[2], s[2], p[2], d[2];
} shape;

static const shape shapes[] = {
    /* depthwise (group = C): PP-OCRv4's recognizer and the brief's range */
    {"dw C32 48x400 k3 s2", false, 2, 1, 32, 32, 32, {48, 400}, {3, 3}, {2, 2}, {1, 1}, {1, 1}},
    {"dw C64 24x399 k3 s1", false, 2, 1, 64, 64, 64, {24, 399}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},
    {"dw C64 24x399 k3 s2x1", false, 2, 1, 64, 64, 64, {24, 399}, {3, 3}, {2, 1}, {1, 1}, {1, 1}},
    {"dw C128 12x399 k3 s1x2", false, 2, 1, 128, 128, 128, {12, 399}, {3, 3}, {1, 2}, {1, 1}, {1, 1}},
    {"dw C128 48x200 k3 s1", false, 2, 1, 128, 128, 128, {48, 200}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},
    {"dw C240 12x200 k5 s1", false, 2, 1, 240, 240, 240, {12, 200}, {5, 5}, {1, 1}, {2, 2}, {1, 1}},
    {"dw C256 24x100 k5 s2", false, 2, 1, 256, 256, 256, {24, 100}, {5, 5}, {2, 2}, {2, 2}, {1, 1}},
    {"dw C480 6x200 k5 s2x1", false, 2, 1, 480, 480, 480, {6, 200}, {5, 5}, {2, 1}, {2, 2}, {1, 1}},
    {"dw x2 C64->128 24x200 k3", false, 2, 1, 64, 128, 64, {24, 200}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},
    /* grouped */
    {"g4 C64 24x200 k3 s1", false, 2, 1, 64, 64, 4, {24, 200}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},
    {"g8 C128 24x200 k3 s1", false, 2, 1, 128, 128, 8, {24, 200}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},
    {"g32 C256 24x100 k3 s2", false, 2, 1, 256, 256, 32, {24, 100}, {3, 3}, {2, 2}, {1, 1}, {1, 1}},
    {"g2 C64 48x200 k5 s1", false, 2, 1, 64, 64, 2, {48, 200}, {5, 5}, {1, 1}, {2, 2}, {1, 1}},
    /* 1D */
    {"1d dw C256 W400 k5", false, 1, 1, 256, 256, 256, {400}, {5}, {1}, {2}, {1}},
    {"1d g8 C128 W400 k3", false, 1, 1, 128, 128, 8, {400}, {3}, {1}, {1}, {1}},
    /* dense (group 1): rlx keeps conv_general unless dilated */
    {"dense C64 24x200 k3", false, 2, 1, 64, 64, 1, {24, 200}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},
    {"dense C64 24x200 k3 dil2", false, 2, 1, 64, 64, 1, {24, 200}, {3, 3}, {1, 1}, {2, 2}, {2, 2}},
    /* ConvTranspose (upsampling by 2) */
    {"convT C64 24x100 k4 s2", true, 2, 1, 64, 32, 1, {24, 100}, {4, 4}, {2, 2}, {1, 1}, {1, 1}},
    {"convT g4 C64 24x100 k4 s2", true, 2, 1, 64, 64, 4, {24, 100}, {4, 4}, {2, 2}, {1, 1}, {1, 1}},
    {"convT dw C64 24x100 k4 s2", true, 2, 1, 64, 64, 64, {24, 100}, {4, 4}, {2, 2}, {1, 1}, {1, 1}},
};

static double now_ms(void) { return (double)rlx_now_ns() / 1e6; }

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* [N,C,d..] <-> [N,d..,C] permutations for rank r. */
static void perms(int r, int64_t *last, int64_t *first) {
  last[0] = first[0] = 0;
  for (int i = 1; i < r - 1; i++) last[i] = i + 1;
  last[r - 1] = 1;
  first[1] = r - 1;
  for (int i = 2; i < r; i++) first[i] = i - 1;
}

/* The plain lowering: conv_general on channels-last data (ConvTranspose: input dilation by the
 * stride, flipped kernel, full-correlation padding less the pads). */
static rlx_mx_arr *plain(rlx_mx *c, const shape *s, rlx_mx_arr *x, rlx_mx_arr *w) {
  int r = s->nsp + 2;
  int64_t last[4], first[4], one[2] = {1, 1};
  perms(r, last, first);
  x = rlx_mx_transpose(c, x, r, last);
  if (!s->transpose) {
    rlx_mx_arr *y = rlx_mx_conv_general(c, x, rlx_mx_transpose(c, w, r, last), s->nsp, s->s, s->p, s->p, s->d, one, (int)s->g, false);
    return rlx_mx_transpose(c, y, r, first);
  }
  /* w [Ci, Co/g, k..] -> [g, Ci/g, Co/g, k..] -> [g, Co/g, k.., Ci/g] -> [Co, k.., Ci/g] */
  int64_t cg = s->c / s->g, og = s->co / s->g, d5[5] = {s->g, cg, og}, p5[5] = {0, 2}, dw[4] = {s->co};
  for (int i = 0; i < s->nsp; i++) d5[3 + i] = s->k[i], p5[2 + i] = 3 + i, dw[1 + i] = s->k[i];
  p5[2 + s->nsp] = 1;
  dw[1 + s->nsp] = cg;
  w = rlx_mx_reshape(c, rlx_mx_transpose(c, rlx_mx_reshape(c, w, r + 1, d5), r + 1, p5), r, dw);
  int64_t lo[2];
  for (int i = 0; i < s->nsp; i++) lo[i] = s->d[i] * (s->k[i] - 1) - s->p[i];
  rlx_mx_arr *y = rlx_mx_conv_general(c, x, w, s->nsp, one, lo, lo, s->d, s->s, (int)s->g, true);
  return rlx_mx_transpose(c, y, r, first);
}

typedef struct bench_graph {
  rlx_graph *g;
  rlx_value x, w, y;
} bench_graph;

static rlx_status *build(const shape *s, bench_graph *b) {
  int r = s->nsp + 2;
  rlx_type tx = {.dtype = RLX_DTYPE_F32, .rank = r, .dims = {s->n, s->c}};
  rlx_type tw = {.dtype = RLX_DTYPE_F32, .rank = r,
                 .dims = {s->transpose ? s->c : s->co, s->transpose ? s->co / s->g : s->c / s->g}};
  int64_t pads[4];
  for (int i = 0; i < s->nsp; i++) tx.dims[2 + i] = s->sp[i], tw.dims[2 + i] = s->k[i], pads[i] = pads[i + s->nsp] = s->p[i];
  rlx_attr a[4] = {RLX_ATTR_IS("strides", (size_t)s->nsp, s->s), RLX_ATTR_IS("pads", (size_t)(2 * s->nsp), pads),
                   RLX_ATTR_IS("dilations", (size_t)s->nsp, s->d), RLX_ATTR_I("group", s->g)};
  RLX_TRY(rlx_graph_create(&b->g));
  rlx_status *st = rlx_graph_add_input(b->g, "x", &tx, &b->x);
  if (!st) st = rlx_graph_add_param(b->g, "w", &tw, &b->w);
  rlx_value in[2] = {b->x, b->w};
  if (!st) st = rlx_graph_add1(b->g, s->transpose ? RLX_OP_CONV_TRANSPOSE : RLX_OP_CONV, "conv", 2, in, 4, a, &b->y);
  if (st) rlx_graph_free(b->g);
  return st;
}

/* The rlx lowering of the one-node graph. */
static rlx_mx_arr *lower_rlx(rlx_mx *c, const bench_graph *b, rlx_mx_arr *x, rlx_mx_arr *w, rlx_mx_arr **vals) {
  memset(vals, 0, sizeof(*vals) * b->g->n_vals);
  vals[b->x] = x;
  vals[b->w] = w;
  rlx_lower L = {.mx = c, .g = b->g, .types = b->g->types, .vals = vals};
  rlx_status *st = rlx_lower_graph(&L);
  if (st) {
    rlx_mx_fail(c, st);
    return NULL;
  }
  return vals[b->y];
}

static double run_once(rlx_mx *c, rlx_mx_arr *y, float *host, size_t nbytes, double t0) {
  rlx_mx_eval(c, &y, 1);
  double t = now_ms() - t0;
  if (host) rlx_mx_to_host(c, y, host, nbytes);
  rlx_mx_clear(c);
  return t;
}

static void fill(float *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) p[i] = (float)((i * 2654435761u + seed) % 2001) / 1000.f - 1.f;
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 21;
  if (reps < 1) reps = 1;
  rlx_mx *c;
  rlx_status *st = rlx_mx_create(RLX_MX_CPU, &c);
  if (st) {
    fprintf(stderr, "%s\n", rlx_status_message(st));
    return 1;
  }
  printf("MLX %s, CPU, float32, median of %d runs\n", rlx_mx_version(), reps);
  printf("%-28s %10s %10s %8s %10s\n", "shape", "plain ms", "rlx ms", "ratio", "max diff");
  double *tp = malloc(sizeof(double) * (size_t)reps), *tr = malloc(sizeof(double) * (size_t)reps);
  int bad = 0;
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0] && !bad; i++) {
    const shape *s = &shapes[i];
    bench_graph b;
    if ((st = build(s, &b))) break;
    const rlx_type *tx = &b.g->types[b.x], *tw = &b.g->types[b.w], *ty = &b.g->types[b.y];
    int64_t nx, nw, ny;
    if ((st = rlx_type_numel(tx, &nx)) || (st = rlx_type_numel(tw, &nw)) || (st = rlx_type_numel(ty, &ny))) {
      rlx_graph_free(b.g);
      break;
    }
    float *hx = malloc(4 * (size_t)nx), *hw = malloc(4 * (size_t)nw), *ya = malloc(4 * (size_t)ny), *yb = malloc(4 * (size_t)ny);
    rlx_mx_arr **vals = calloc(b.g->n_vals, sizeof *vals);
    fill(hx, (size_t)nx, 1), fill(hw, (size_t)nw, 2);
    rlx_mx_arr *x = rlx_mx_from_bytes(c, hx, tx), *w = rlx_mx_from_bytes(c, hw, tw);
    rlx_mx_eval(c, (rlx_mx_arr *[]){x, w}, 2);
    x = rlx_mx_keep(c, x), w = rlx_mx_keep(c, w);
    rlx_mx_clear(c);
    for (int k = -3; k < reps && !rlx_mx_failed(c); k++) {
      double t0 = now_ms();
      double a = run_once(c, plain(c, s, x, w), k == -3 ? ya : NULL, 4 * (size_t)ny, t0);
      t0 = now_ms();
      double r = run_once(c, lower_rlx(c, &b, x, w, vals), k == -3 ? yb : NULL, 4 * (size_t)ny, t0);
      if (k >= 0) tp[k] = a, tr[k] = r;
    }
    if ((st = rlx_mx_take_error(c))) {
      fprintf(stderr, "%s: %s\n", s->what, rlx_status_message(st));
      rlx_status_free(st);
      bad = 1;
    } else {
      double md = 0;
      for (int64_t j = 0; j < ny; j++) md = fmax(md, fabs((double)ya[j] - (double)yb[j]));
      qsort(tp, (size_t)reps, sizeof *tp, cmp_d);
      qsort(tr, (size_t)reps, sizeof *tr, cmp_d);
      double mp = tp[reps / 2], mr = tr[reps / 2];
      printf("%-28s %10.3f %10.3f %8.2f %10.2e\n", s->what, mp, mr, mp / mr, md);
      fflush(stdout);
    }
    rlx_mx_release(x), rlx_mx_release(w);
    free(hx), free(hw), free(ya), free(yb), free(vals);
    rlx_graph_free(b.g);
  }
  if (st) fprintf(stderr, "%s\n", rlx_status_message(st)), rlx_status_free(st), bad = 1;
  free(tp), free(tr);
  rlx_mx_free(c);
  return bad;
}
