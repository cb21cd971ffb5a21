/* bench_executable: per-run overhead and throughput of rlx executables against the same
 * computation written directly against MLX's C++ API (mlx_peer.cpp), in one binary, on MLX's CPU
 * backend: a tiny graph (y = x * 2 + 1 over 16 floats: the cost of a run) and one transformer
 * block (RmsNorm, q/k/v projections, rotary embedding, causal attention, output projection,
 * SwiGLU MLP, residuals), each in lazy and compiled mode; and an embedding lookup (Gather of
 * token ids from a [vocab, dim] table: rlx checks every id against the vocabulary in the same
 * evaluation, the hand-written MLX take does not check them, so the ratio bounds the check's cost).
 *
 * usage: bench_executable [--rounds R] [--seq S] [--clock wall|cpu] [--only tiny|block|embed]
 *
 * Each variant does host input -> run -> host output per iteration (rlx: rlx_executable_run,
 * which returns new tensors, and rlx_executable_run_slots, which writes into the arena; peer:
 * array from the host buffer, the function, eval, copy out). The block has two peers: MLX as a
 * user writes it (mx::fast::rope) and MLX with the same ops as rlx's lowering (rotation composed
 * of slices and elementwise ops). Each variant has its own weights (its own executable). Variants
 * take turns iteration by iteration, in a new order each of R rounds; a round's figure is a
 * variant's median iteration time, the reported figure the median over rounds. Outputs of rlx and
 * the peer are compared first. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mlx_peer.h"
#include "bench_util.h"
#include "rlx/rlx.h"

#define CHECK(expr)                                                                                       \
  do {                                                                                                    \
    rlx_status *st_ = (expr);                                                                             \
    if (st_) {                                                                                            \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, rlx_status_code_name(rlx_status_code_of(st_)), \
              rlx_status_message(st_));                                                                   \
      exit(2);                                                                                            \
    }                                                                                                     \
  } while (0)

/* --clock wall (default): elapsed time; --clock cpu: CPU time of the whole process (every MLX
 * thread included), which waiting for a busy machine's cores does not inflate. */
static clockid_t bench_clock = CLOCK_MONOTONIC;

static double now_us(void) {
  struct timespec ts;
  clock_gettime(bench_clock, &ts);
  return 1e6 * (double)ts.tv_sec + 1e-3 * (double)ts.tv_nsec;
}

/* ---- what one iteration does ---- */
typedef enum kind { RLX_RUN, RLX_SLOTS, PEER } kind;


typedef struct variant {
  kind k;
  rlx_executable *ex;
  mlx_peer *peer;
  const float *x;
  rlx_tensor *tx; /* wraps x */
  float *y;       /* peer output */
} variant;

static void iterate(variant *v) {
  switch (v->k) {
    case RLX_RUN: {
      rlx_tensor *out = NULL;
      CHECK(rlx_executable_run(v->ex, 1, (const char *const[]){"x"}, (rlx_tensor *const[]){v->tx}, 1, &out));
      rlx_tensor_free(out);
      break;
    }
    case RLX_SLOTS:
      CHECK(rlx_executable_run_slots(v->ex, 1, (const void *const[]){v->x}));
      break;
    case PEER:
      if (!peer_run(v->peer, v->x, v->y)) {
        fprintf(stderr, "peer run failed\n");
        exit(2);
      }
      break;
  }
}

/* Median over `rounds` of each variant's median iteration time in the round. Within a round the
 * variants take turns iteration by iteration, so that background load on a shared machine falls
 * on all of them alike. */
static void measure(variant *vs, int nv, int rounds, int iters, double *out_us) {
  double *t = malloc(sizeof(double) * (size_t)(iters * nv)), *r = malloc(sizeof(double) * (size_t)(rounds * nv));
  for (int i = 0; i < nv; i++)
    for (int k = 0; k < iters / 4 + 5; k++) iterate(&vs[i]); /* warm-up */
  uint32_t seed = 1;
  for (int round = 0; round < rounds; round++) {
    /* a new turn order each round, so that no variant always follows the same one */
    int order[8];
    for (int i = 0; i < nv; i++) order[i] = i;
    for (int i = nv - 1; i > 0; i--) {
      seed = seed * 1103515245u + 12345u;
      int j = (int)((seed >> 16) % (uint32_t)(i + 1)), tmp = order[i];
      order[i] = order[j], order[j] = tmp;
    }
    for (int k = 0; k < iters; k++)
      for (int o = 0; o < nv; o++) {
        int i = order[o];
        double t0 = now_us();
        iterate(&vs[i]);
        t[i * iters + k] = now_us() - t0;
      }
    for (int i = 0; i < nv; i++) r[i * rounds + round] = bench_median(&t[i * iters], iters);
  }
  for (int i = 0; i < nv; i++) out_us[i] = bench_median(&r[i * rounds], rounds);
  free(t);
  free(r);
}

/* ---- graphs ---- */
static rlx_value add1(rlx_graph *g, rlx_op op, size_t n, const rlx_value *in, size_t na, const rlx_attr *a) {
  rlx_value v;
  CHECK(rlx_graph_add1(g, op, NULL, n, in, na, a, &v));
  return v;
}

static rlx_value leaf(rlx_graph *g, bool param, const char *name, int rank, const int64_t *dims) {
  rlx_type t = {.dtype = RLX_DTYPE_F32, .rank = rank};
  memcpy(t.dims, dims, sizeof(int64_t) * (size_t)rank);
  rlx_value v;
  CHECK(param ? rlx_graph_add_param(g, name, &t, &v) : rlx_graph_add_input(g, name, &t, &v));
  return v;
}

static rlx_value cst(rlx_graph *g, int rank, const int64_t *dims, const float *data) {
  rlx_type t = {.dtype = RLX_DTYPE_F32, .rank = rank};
  size_t n = 1;
  for (int i = 0; i < rank; i++) t.dims[i] = dims[i], n *= (size_t)dims[i];
  rlx_value v;
  CHECK(rlx_graph_add_constant(g, &t, data, n * sizeof(float), &v));
  return v;
}

#define VS(...) ((const rlx_value[]){__VA_ARGS__})

static rlx_graph *tiny_graph(int64_t n) {
  rlx_graph *g;
  CHECK(rlx_graph_create(&g));
  rlx_value x = leaf(g, false, "x", 1, (const int64_t[]){n});
  rlx_value y = add1(g, RLX_OP_ADD, 2, VS(add1(g, RLX_OP_MUL, 2, VS(x, cst(g, 0, NULL, (const float[]){2})), 0, NULL), cst(g, 0, NULL, (const float[]){1})), 0, NULL);
  CHECK(rlx_graph_set_outputs(g, 1, &y));
  return g;
}

/* Embedding lookup: y = Gather(table[V, E] param, Cast(x[n] float, int32)) (mlx_peer's embed). */
typedef struct embed_setup {
  int64_t n, vocab, dim;
  const float *table;
} embed_setup;

static rlx_graph *embed_graph(const embed_setup *e) {
  rlx_graph *g;
  CHECK(rlx_graph_create(&g));
  rlx_value x = leaf(g, false, "x", 1, (const int64_t[]){e->n}), table = leaf(g, true, "table", 2, (const int64_t[]){e->vocab, e->dim});
  rlx_value ids = add1(g, RLX_OP_CAST, 1, VS(x), 1, (const rlx_attr[]){RLX_ATTR_I("to", RLX_DTYPE_I32)});
  rlx_value y = add1(g, RLX_OP_GATHER, 2, VS(table, ids), 0, NULL);
  CHECK(rlx_graph_set_outputs(g, 1, &y));
  return g;
}

/* The block of mlx_peer.cpp in the rlx IR (packed heads, Rope on [1, S, H*D], causal Attention). */
static rlx_graph *block_graph(const peer_block_dims *d) {
  int64_t S = d->seq, E = d->dim, H = d->heads, D = d->head_dim, F = d->ffn, half = D / 2;
  rlx_graph *g;
  CHECK(rlx_graph_create(&g));
  rlx_value x = leaf(g, false, "x", 3, (const int64_t[]){1, S, E});
  float *cs = malloc(sizeof(float) * (size_t)(S * half)), *sn = malloc(sizeof(float) * (size_t)(S * half));
  for (int64_t p = 0; p < S; p++)
    for (int64_t i = 0; i < half; i++) {
      double a = (double)p * pow(d->theta, -2.0 * (double)i / (double)D);
      cs[p * half + i] = (float)cos(a), sn[p * half + i] = (float)sin(a);
    }
  rlx_value tc = cst(g, 2, (const int64_t[]){S, half}, cs), ts = cst(g, 2, (const int64_t[]){S, half}, sn);
  free(cs);
  free(sn);
  rlx_attr eps = RLX_ATTR_F("epsilon", d->eps), hd = RLX_ATTR_I("head_dim", D);
  rlx_attr att[2] = {RLX_ATTR_I("num_heads", H), RLX_ATTR_S("mask", "causal")};
  rlx_value n1 = add1(g, RLX_OP_RMS_NORM, 2, VS(x, leaf(g, true, "attn_norm", 1, (const int64_t[]){E})), 1, &eps);
  rlx_value q = add1(g, RLX_OP_MATMUL, 2, VS(n1, leaf(g, true, "wq", 2, (const int64_t[]){E, H * D})), 0, NULL);
  rlx_value k = add1(g, RLX_OP_MATMUL, 2, VS(n1, leaf(g, true, "wk", 2, (const int64_t[]){E, H * D})), 0, NULL);
  rlx_value v = add1(g, RLX_OP_MATMUL, 2, VS(n1, leaf(g, true, "wv", 2, (const int64_t[]){E, H * D})), 0, NULL);
  q = add1(g, RLX_OP_ROPE, 3, VS(q, tc, ts), 1, &hd);
  k = add1(g, RLX_OP_ROPE, 3, VS(k, tc, ts), 1, &hd);
  rlx_value a = add1(g, RLX_OP_ATTENTION, 3, VS(q, k, v), 2, att);
  rlx_value h = add1(g, RLX_OP_ADD, 2, VS(x, add1(g, RLX_OP_MATMUL, 2, VS(a, leaf(g, true, "wo", 2, (const int64_t[]){H * D, E})), 0, NULL)), 0, NULL);
  rlx_value n2 = add1(g, RLX_OP_RMS_NORM, 2, VS(h, leaf(g, true, "ffn_norm", 1, (const int64_t[]){E})), 1, &eps);
  rlx_value gate = add1(g, RLX_OP_MATMUL, 2, VS(n2, leaf(g, true, "w_gate", 2, (const int64_t[]){E, F})), 0, NULL);
  rlx_value up = add1(g, RLX_OP_MATMUL, 2, VS(n2, leaf(g, true, "w_up", 2, (const int64_t[]){E, F})), 0, NULL);
  rlx_value act = add1(g, RLX_OP_MUL, 2, VS(add1(g, RLX_OP_SILU, 1, &gate, 0, NULL), up), 0, NULL);
  rlx_value y = add1(g, RLX_OP_ADD, 2, VS(h, add1(g, RLX_OP_MATMUL, 2, VS(act, leaf(g, true, "w_down", 2, (const int64_t[]){F, E})), 0, NULL)), 0, NULL);
  CHECK(rlx_graph_set_outputs(g, 1, &y));
  return g;
}

static float *random_floats(size_t n, float scale, float offset, uint64_t *s) {
  float *x = malloc(sizeof(float) * n);
  for (size_t i = 0; i < n; i++) {
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    x[i] = offset + scale * (float)((double)(*s >> 11) / 9007199254740992.0 * 2 - 1);
  }
  return x;
}

static void set_param(rlx_executable *ex, const char *name, int rank, const int64_t *dims, const float *data) {
  rlx_tensor *t;
  size_t n = 1;
  for (int i = 0; i < rank; i++) n *= (size_t)dims[i];
  CHECK(rlx_tensor_create(RLX_DTYPE_F32, rank, dims, data, n * sizeof(float), &t));
  CHECK(rlx_executable_set_param(ex, name, t));
  rlx_tensor_free(t);
}

/* Benchmarks one graph in lazy and compiled mode against one or two peers (make_peer's variant
 * 0 and, when two_peers, variant 1); prints a table row per mode. */
static void bench_graph(const char *label, rlx_graph *g, int64_t n_in, const float *x, int64_t n_out,
                        void (*setup)(rlx_executable *, const void *), const void *setup_ud,
                        mlx_peer *(*make_peer)(bool, int, const void *), bool two_peers, int rounds, int iters) {
  const rlx_mode modes[2] = {RLX_MODE_LAZY, RLX_MODE_COMPILED};
  for (int m = 0; m < 2; m++) {
    /* one executable per rlx variant, as each peer has its own weights: every variant finds its
     * weights as cold (or warm) in the caches as the others do */
    rlx_executable *ex, *ex2;
    CHECK(rlx_executable_create(g, RLX_DEVICE_CPU, modes[m], &ex));
    CHECK(rlx_executable_create(g, RLX_DEVICE_CPU, modes[m], &ex2));
    if (setup) setup(ex, setup_ud), setup(ex2, setup_ud);
    mlx_peer *peer = make_peer(m == 1, 0, setup_ud), *peer2 = two_peers ? make_peer(m == 1, 1, setup_ud) : NULL;
    rlx_tensor *tx;
    const rlx_type *ti = rlx_graph_value_type(g, rlx_graph_input_value(g, 0));
    CHECK(rlx_tensor_wrap(RLX_DTYPE_F32, ti->rank, ti->dims, (void *)x, (size_t)n_in * sizeof(float), &tx));
    float *y = malloc(sizeof(float) * (size_t)n_out);
    variant vs[4] = {{PEER, ex, peer, x, tx, y}, {RLX_RUN, ex, peer, x, tx, y}, {RLX_SLOTS, ex2, peer, x, tx, y}, {PEER, ex, peer2, x, tx, y}};
    /* agreement first */
    rlx_tensor *out = NULL;
    iterate(&vs[0]);
    CHECK(rlx_executable_run(ex, 1, (const char *const[]){"x"}, (rlx_tensor *const[]){tx}, 1, &out));
    double worst = 0;
    for (int64_t i = 0; i < n_out; i++) worst = fmax(worst, fabs((double)((const float *)rlx_tensor_cdata(out))[i] - y[i]));
    rlx_tensor_free(out);
    double us[4];
    measure(vs, two_peers ? 4 : 3, rounds, iters, us);
    printf("| %-5s | %-8s | %9.2f | %9.2f | %6.3f | %+8.2f | %9.2f | %6.3f | %+8.2f |", label, rlx_mode_name(modes[m]), us[0], us[1],
           us[1] / us[0], us[1] - us[0], us[2], us[2] / us[0], us[2] - us[0]);
    if (two_peers) printf(" %9.2f | %6.3f |", us[3], us[1] / us[3]);
    else printf("           |        |");
    printf(" %8.1e |\n", worst);
    fflush(stdout);
    free(y);
    rlx_tensor_free(tx);
    peer_free(peer);
    peer_free(peer2);
    rlx_executable_free(ex);
    rlx_executable_free(ex2);
  }
}

static mlx_peer *tiny_peer(bool compiled, int which, const void *ud) {
  (void)which;
  return peer_tiny_create(compiled, *(const int64_t *)ud);
}

static void embed_params(rlx_executable *ex, const void *ud) {
  const embed_setup *e = ud;
  set_param(ex, "table", 2, (const int64_t[]){e->vocab, e->dim}, e->table);
}

static mlx_peer *embed_peer(bool compiled, int which, const void *ud) {
  (void)which;
  const embed_setup *e = ud;
  return peer_embed_create(compiled, e->n, e->vocab, e->dim, e->table);
}

typedef struct block_setup {
  peer_block_dims d;
  peer_block_weights w;
} block_setup;

static void block_params(rlx_executable *ex, const void *ud) {
  const block_setup *b = ud;
  int64_t E = b->d.dim, HD = b->d.heads * b->d.head_dim, F = b->d.ffn;
  set_param(ex, "attn_norm", 1, (const int64_t[]){E}, b->w.attn_norm);
  set_param(ex, "ffn_norm", 1, (const int64_t[]){E}, b->w.ffn_norm);
  set_param(ex, "wq", 2, (const int64_t[]){E, HD}, b->w.wq);
  set_param(ex, "wk", 2, (const int64_t[]){E, HD}, b->w.wk);
  set_param(ex, "wv", 2, (const int64_t[]){E, HD}, b->w.wv);
  set_param(ex, "wo", 2, (const int64_t[]){HD, E}, b->w.wo);
  set_param(ex, "w_gate", 2, (const int64_t[]){E, F}, b->w.w_gate);
  set_param(ex, "w_up", 2, (const int64_t[]){E, F}, b->w.w_up);
  set_param(ex, "w_down", 2, (const int64_t[]){F, E}, b->w.w_down);
}

/* variant 0: MLX written idiomatically (fast::rope); 1: the same ops as rlx's lowering. */
static mlx_peer *block_peer(bool compiled, int which, const void *ud) {
  const block_setup *b = ud;
  return peer_block_create(compiled, which == 0, &b->d, &b->w);
}

int main(int argc, char **argv) {
  int rounds = 7;
  int64_t seq = 16;
  const char *only = NULL;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--rounds")) rounds = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--seq")) seq = atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--only")) only = argv[i + 1];
    else if (!strcmp(argv[i], "--clock")) bench_clock = strcmp(argv[i + 1], "cpu") ? CLOCK_MONOTONIC : CLOCK_PROCESS_CPUTIME_ID;
  }
  printf("rlx %s, MLX %s, CPU backend; median per-run %s time in microseconds; ratio = rlx / direct MLX\n\n", RLX_VERSION,
         rlx_mlx_version(), bench_clock == CLOCK_MONOTONIC ? "wall" : "process CPU");
  printf("| graph | mode     | MLX (us)  | rlx run   | ratio  | overhead | rlx slots | ratio  | overhead | MLX, rlx's ops | ratio  | max diff |\n");
  printf("|-------|----------|-----------|-----------|--------|----------|-----------|--------|----------|-----------|--------|----------|\n");
  uint64_t s = 12345;
  int64_t n = 16;
  float *xt = random_floats((size_t)n, 1, 0, &s);
  rlx_graph *tiny = tiny_graph(n);
  if (!only || !strcmp(only, "tiny")) bench_graph("tiny", tiny, n, xt, n, NULL, &n, tiny_peer, false, rounds, 2000);
  block_setup b = {.d = {.seq = seq, .dim = 256, .heads = 8, .head_dim = 32, .ffn = 768, .eps = 1e-5f, .theta = 10000}};
  int64_t E = b.d.dim, HD = b.d.heads * b.d.head_dim, F = b.d.ffn;
  float se = 1 / sqrtf((float)E);
  float *ws[9] = {random_floats((size_t)E, 0.1f, 1, &s), random_floats((size_t)E, 0.1f, 1, &s),
                  random_floats((size_t)(E * HD), se, 0, &s), random_floats((size_t)(E * HD), se, 0, &s),
                  random_floats((size_t)(E * HD), se, 0, &s), random_floats((size_t)(HD * E), se, 0, &s),
                  random_floats((size_t)(E * F), se, 0, &s), random_floats((size_t)(E * F), se, 0, &s),
                  random_floats((size_t)(F * E), 1 / sqrtf((float)F), 0, &s)};
  b.w = (peer_block_weights){ws[0], ws[2], ws[3], ws[4], ws[5], ws[1], ws[6], ws[7], ws[8]};
  float *xb = random_floats((size_t)(seq * E), 1, 0, &s);
  rlx_graph *block = block_graph(&b.d);
  if (!only || !strcmp(only, "block")) bench_graph("block", block, seq * E, xb, seq * E, block_params, &b, block_peer, true, rounds, 200);
  embed_setup es = {.n = seq, .vocab = 32000, .dim = 256};
  float *table = random_floats((size_t)(es.vocab * es.dim), 1, 0, &s), *ids = malloc(sizeof(float) * (size_t)es.n);
  for (int64_t i = 0; i < es.n; i++) ids[i] = (float)((i * 7919) % es.vocab);
  es.table = table;
  rlx_graph *embed = embed_graph(&es);
  if (!only || !strcmp(only, "embed")) bench_graph("embed", embed, es.n, ids, es.n * es.dim, embed_params, &es, embed_peer, false, rounds, 2000);
  rlx_graph_free(embed);
  free(table);
  free(ids);
  rlx_graph_free(tiny);
  rlx_graph_free(block);
  for (int i = 0; i < 9; i++) free(ws[i]);
  free(xt);
  free(xb);
  return 0;
}
