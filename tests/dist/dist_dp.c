/* dist_dp.c: data-parallel training of a small MLP with the IR's backward ops.
 *
 *   dist_dp [--steps S] [--dump DIR]     (under rlx launch / mpirun; every rank checks)
 *
 * Model: logits = tanh(x W1 + b1) W2 + b2, loss = mean over the batch of
 * SoftmaxCrossEntropyWithLogits(logits, labels); plain SGD (lr 0.5). One training-step graph
 * computes the loss, the gradients (SoftmaxCrossEntropyBackward, ActivationBackward Tanh,
 * MatMul/Transpose/Reduce) and the updated params; the params are device handles fed from the
 * updated outputs. With N ranks each rank runs the step on its B/N rows of the global batch
 * (B = 16) and averages its gradients over the group (AllReduce sum, times 1/N) before the update.
 *
 * Checks on every rank, every step: the averaged gradients and the mean loss equal those of the
 * single-process step on the whole batch (the same graph without AllReduce, run alone) within
 * 1e-6 + 1e-5 |g|; after the last step every param is bitwise identical across the ranks (all_max
 * == all_min == own). --dump DIR makes rank 0 write the data, the initial params and each step's
 * averaged gradients and the final params as .npy files for the numpy oracle
 * (tests/dist/dp_numpy.py). Exit status 0 when every check passed on this rank. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/rlx.h"

enum { B = 16, DIN = 6, HID = 8, NCLS = 4, NP = 4 };
static const char *const pnames[NP] = {"W1", "b1", "W2", "b2"};
static const int prank[NP] = {2, 1, 2, 1};
static const int64_t pdims[NP][2] = {{DIN, HID}, {HID}, {HID, NCLS}, {NCLS}};

typedef struct builder {
  rlx_graph *g;
  rlx_status *st;
} builder;

static rlx_value op(builder *b, rlx_op o, size_t n, const rlx_value *in, size_t na, const rlx_attr *a) {
  rlx_value v = 0;
  if (!b->st) b->st = rlx_graph_add1(b->g, o, NULL, n, in, na, a, &v);
  return v;
}
#define V2(a, b) ((const rlx_value[]){(a), (b)})

static rlx_value input(builder *b, const char *name, rlx_dtype dt, int rank, const int64_t *dims) {
  rlx_type t;
  rlx_value v = 0;
  if (!b->st) b->st = rlx_type_make(dt, rank, dims, &t);
  if (!b->st) b->st = rlx_graph_add_input(b->g, name, &t, &v);
  return v;
}

static rlx_value scalar(builder *b, float f) {
  rlx_type t = {.dtype = RLX_DTYPE_F32};
  rlx_value v = 0;
  if (!b->st) b->st = rlx_graph_add_constant(b->g, &t, &f, sizeof f, &v);
  return v;
}

static rlx_value transpose(builder *b, rlx_value x) { return op(b, RLX_OP_TRANSPOSE, 1, &x, 0, NULL); }
static rlx_value sum0(builder *b, rlx_value x) {
  return op(b, RLX_OP_REDUCE, 1, &x, 2, (rlx_attr[]){RLX_ATTR_S("kind", "sum"), RLX_ATTR_IS("axes", 1, ((const int64_t[]){0}))});
}
/* The group mean of a per-rank value (n > 1), or the value. */
static rlx_value group_mean(builder *b, rlx_value x, int n) {
  if (n == 1) return x;
  rlx_value s = op(b, RLX_OP_ALL_REDUCE, 1, &x, 2, (rlx_attr[]){RLX_ATTR_S("kind", "sum"), RLX_ATTR_I("group_size", n)});
  return op(b, RLX_OP_MUL, 2, V2(s, scalar(b, 1.0f / (float)n)), 0, NULL);
}

/* The training step on `rows` rows over a group of n ranks. Outputs: loss, new W1 b1 W2 b2, their
 * gradients. */
static rlx_status *build_step(int64_t rows, int n, rlx_graph **out) {
  builder b = {0};
  RLX_RETURN_IF_ERROR(rlx_graph_create(&b.g));
  rlx_value x = input(&b, "x", RLX_DTYPE_F32, 2, (const int64_t[]){rows, DIN});
  rlx_value labels = input(&b, "labels", RLX_DTYPE_I32, 1, (const int64_t[]){rows});
  rlx_value p[NP];
  for (int i = 0; i < NP; i++) p[i] = input(&b, pnames[i], RLX_DTYPE_F32, prank[i], pdims[i]);
  /* forward */
  rlx_value h = op(&b, RLX_OP_ADD, 2, V2(op(&b, RLX_OP_MATMUL, 2, V2(x, p[0]), 0, NULL), p[1]), 0, NULL);
  rlx_value a = op(&b, RLX_OP_TANH, 1, &h, 0, NULL);
  rlx_value logits = op(&b, RLX_OP_ADD, 2, V2(op(&b, RLX_OP_MATMUL, 2, V2(a, p[2]), 0, NULL), p[3]), 0, NULL);
  rlx_value loss = op(&b, RLX_OP_SOFTMAX_CROSS_ENTROPY, 2, V2(logits, labels), 0, NULL);
  rlx_value mean = op(&b, RLX_OP_REDUCE, 1, &loss, 1, (rlx_attr[]){RLX_ATTR_S("kind", "mean")});
  /* backward of the local mean loss */
  float *w = malloc(sizeof(float) * (size_t)rows);
  if (!w) b.st = b.st ? b.st : rlx_status_make(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  for (int64_t i = 0; w && i < rows; i++) w[i] = 1.0f / (float)rows;
  rlx_type tw = {.dtype = RLX_DTYPE_F32, .rank = 1, .dims = {rows}};
  rlx_value dloss = 0;
  if (!b.st) b.st = rlx_graph_add_constant(b.g, &tw, w, sizeof(float) * (size_t)rows, &dloss);
  free(w);
  rlx_value dlogits = op(&b, RLX_OP_SOFTMAX_CROSS_ENTROPY_BACKWARD, 3, ((const rlx_value[]){logits, labels, dloss}), 0, NULL);
  rlx_value g[NP];
  g[2] = op(&b, RLX_OP_MATMUL, 2, V2(transpose(&b, a), dlogits), 0, NULL);
  g[3] = sum0(&b, dlogits);
  rlx_value da = op(&b, RLX_OP_MATMUL, 2, V2(dlogits, transpose(&b, p[2])), 0, NULL);
  rlx_value dh = op(&b, RLX_OP_ACTIVATION_BACKWARD, 2, V2(h, da), 1, (rlx_attr[]){RLX_ATTR_S("kind", "Tanh")});
  g[0] = op(&b, RLX_OP_MATMUL, 2, V2(transpose(&b, x), dh), 0, NULL);
  g[1] = sum0(&b, dh);
  /* data parallel: the group's mean gradient; SGD */
  rlx_value outs[1 + 2 * NP];
  outs[0] = group_mean(&b, mean, n);
  rlx_value lr = scalar(&b, 0.5f);
  for (int i = 0; i < NP; i++) {
    outs[1 + NP + i] = group_mean(&b, g[i], n);
    outs[1 + i] = op(&b, RLX_OP_SUB, 2, V2(p[i], op(&b, RLX_OP_MUL, 2, V2(outs[1 + NP + i], lr), 0, NULL)), 0, NULL);
  }
  if (!b.st) b.st = rlx_graph_set_outputs(b.g, 1 + 2 * NP, outs);
  if (b.st) {
    rlx_graph_free(b.g);
    return b.st;
  }
  *out = b.g;
  return NULL;
}

static float uniform(uint64_t *s) {
  *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
  return (float)((double)(*s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* A trainer: the step executable with its params in device handles fed by the updates. */
typedef struct trainer {
  rlx_graph *g;
  rlx_executable *ex;
} trainer;

static rlx_status *trainer_make(trainer *t, int64_t rows, int n, rlx_dist_group *group, rlx_tensor *const *init) {
  RLX_RETURN_IF_ERROR(build_step(rows, n, &t->g));
  RLX_RETURN_IF_ERROR(rlx_executable_create(t->g, RLX_DEVICE_CPU, RLX_MODE_COMPILED, &t->ex));
  RLX_RETURN_IF_ERROR(rlx_executable_set_group(t->ex, group));
  for (int i = 0; i < NP; i++) {
    RLX_RETURN_IF_ERROR(rlx_executable_bind_device_handle(t->ex, pnames[i], init[i]));
    RLX_RETURN_IF_ERROR(rlx_executable_set_handle_feed(t->ex, pnames[i], (size_t)(1 + i)));
    RLX_RETURN_IF_ERROR(rlx_executable_set_output_readback(t->ex, (size_t)(1 + i), true)); /* compared below */
  }
  return NULL;
}

static void trainer_free(trainer *t) {
  rlx_executable_free(t->ex);
  rlx_graph_free(t->g);
}

static rlx_status *trainer_step(trainer *t, rlx_tensor *x, rlx_tensor *labels, rlx_tensor **outs) {
  return rlx_executable_run(t->ex, 2, (const char *const[]){"x", "labels"}, (rlx_tensor *const[]){x, labels}, 1 + 2 * NP, outs);
}

static int failures;

static double compare(const rlx_tensor *got, const rlx_tensor *want, const char *what, int step) {
  double worst = 0;
  for (int64_t i = 0; i < rlx_tensor_numel(want); i++) {
    double g = rlx_tensor_get_f64(got, i), w = rlx_tensor_get_f64(want, i), d = fabs(g - w);
    worst = fmax(worst, d);
    if (d > 1e-6 + 1e-5 * fabs(w)) {
      failures++;
      printf("FAIL step %d %s[%lld]: data parallel %.9g, whole batch %.9g\n", step, what, (long long)i, g, w);
      break;
    }
  }
  return worst;
}

static rlx_status *save(const char *dir, const char *name, int step, const rlx_tensor *t) {
  char path[512];
  if (step >= 0) snprintf(path, sizeof path, "%s/%s_%d.npy", dir, name, step);
  else snprintf(path, sizeof path, "%s/%s.npy", dir, name);
  return rlx_npy_save(path, t);
}

int main(int argc, char **argv) {
  int steps = 4;
  const char *dump = NULL;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--dump")) dump = argv[i + 1];
  }
  rlx_dist_group *group = NULL;
  rlx_status *st = rlx_dist_init(RLX_DIST_ANY, true, &group);
  if (st) {
    printf("init: %s\n", rlx_status_message(st));
    rlx_status_free(st);
    return 2;
  }
  int rank = rlx_dist_group_rank(group), n = rlx_dist_group_size(group);
  int64_t rows = B / n;
  /* the global batch and the initial params, the same on every rank */
  uint64_t rng = 12345;
  float xs[B * DIN];
  int32_t ls[B];
  for (int i = 0; i < B * DIN; i++) xs[i] = uniform(&rng);
  for (int i = 0; i < B; i++) ls[i] = (i * 3 + 1) % NCLS;
  rlx_tensor *init[NP] = {0}, *xall = NULL, *lall = NULL, *xloc = NULL, *lloc = NULL;
  for (int i = 0; i < NP && !st; i++) {
    st = rlx_tensor_create(RLX_DTYPE_F32, prank[i], pdims[i], NULL, 0, &init[i]);
    for (int64_t k = 0; !st && k < rlx_tensor_numel(init[i]); k++) ((float *)rlx_tensor_data(init[i]))[k] = 0.5f * uniform(&rng);
  }
  if (!st) st = rlx_tensor_create(RLX_DTYPE_F32, 2, (const int64_t[]){B, DIN}, xs, sizeof xs, &xall);
  if (!st) st = rlx_tensor_create(RLX_DTYPE_I32, 1, (const int64_t[]){B}, ls, sizeof ls, &lall);
  if (!st) st = rlx_tensor_create(RLX_DTYPE_F32, 2, (const int64_t[]){rows, DIN}, xs + rank * rows * DIN, sizeof(float) * (size_t)(rows * DIN), &xloc);
  if (!st) st = rlx_tensor_create(RLX_DTYPE_I32, 1, (const int64_t[]){rows}, ls + rank * rows, sizeof(int32_t) * (size_t)rows, &lloc);
  if (!st && dump && rank == 0) {
    st = save(dump, "x", -1, xall);
    if (!st) st = save(dump, "labels", -1, lall);
    for (int i = 0; i < NP && !st; i++) st = save(dump, pnames[i], -1, init[i]);
  }
  trainer dp = {0}, whole = {0};
  if (!st) st = trainer_make(&dp, rows, n, group, init);
  if (!st) st = trainer_make(&whole, B, 1, NULL, init);
  double worst = 0;
  rlx_tensor *od[1 + 2 * NP] = {0}, *ow[1 + 2 * NP] = {0};
  for (int s = 0; s < steps && !st; s++) {
    st = trainer_step(&dp, xloc, lloc, od);
    if (!st) st = trainer_step(&whole, xall, lall, ow);
    for (int i = 0; !st && i < 1 + 2 * NP; i++) {
      const char *what = i == 0 ? "loss" : i <= NP ? pnames[i - 1] : "grad";
      worst = fmax(worst, compare(od[i], ow[i], what, s));
      if (dump && rank == 0 && i > NP) st = save(dump, (const char *[]){"gW1", "gb1", "gW2", "gb2"}[i - 1 - NP], s, od[i]);
      if (dump && rank == 0 && i == 0) st = save(dump, "loss", s, od[i]);
    }
    if (!st && s == steps - 1) { /* the params are bitwise identical across the ranks */
      for (int i = 0; i < NP && !st; i++) {
        rlx_tensor *hi = NULL, *lo = NULL;
        st = rlx_dist_all_max(group, od[1 + i], &hi);
        if (!st) st = rlx_dist_all_min(group, od[1 + i], &lo);
        size_t nb = rlx_tensor_nbytes(od[1 + i]);
        if (!st && (memcmp(rlx_tensor_cdata(hi), rlx_tensor_cdata(od[1 + i]), nb) || memcmp(rlx_tensor_cdata(lo), rlx_tensor_cdata(od[1 + i]), nb))) {
          failures++;
          printf("FAIL: param %s differs across the ranks\n", pnames[i]);
        }
        if (!st && dump && rank == 0) st = save(dump, pnames[i], steps, od[1 + i]);
        rlx_tensor_free(hi), rlx_tensor_free(lo);
      }
    }
    if (!st) printf("step %d: loss %.6f\n", s, rlx_tensor_get_f64(od[0], 0));
    for (int i = 0; i < 1 + 2 * NP; i++) rlx_tensor_free(od[i]), rlx_tensor_free(ow[i]), od[i] = ow[i] = NULL;
  }
  trainer_free(&dp);
  trainer_free(&whole);
  for (int i = 0; i < NP; i++) rlx_tensor_free(init[i]);
  rlx_tensor_free(xall), rlx_tensor_free(lall), rlx_tensor_free(xloc), rlx_tensor_free(lloc);
  int rc = failures ? 1 : 0;
  if (st) {
    printf("error: %s: %s\n", rlx_status_code_name(rlx_status_code_of(st)), rlx_status_message(st));
    rlx_status_free(st);
    rc = 2;
  } else {
    printf("rank %d of %d (%s): %d data-parallel SGD steps vs whole batch: max |diff| %.3g, params identical across ranks: %s\n", rank, n,
           rlx_dist_backend_name(rlx_dist_group_backend(group)), steps, worst, failures ? "FAILED" : "passed");
  }
  rlx_dist_group_free(group);
  return rc;
}
