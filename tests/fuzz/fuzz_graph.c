/* fuzz_graph: libFuzzer target for the graph builder, shape inference and the lowering. The input
 * bytes are a program: up to 3 graph inputs (any dtype, rank 0-4, dims from {0..4, symbolic}),
 * then up to 8 steps, each a small integer Constant or a node of any op of the op table with
 * operands among the earlier values and every schema attribute set from adversarial
 * dictionaries (0, +-1, integer extremes, 2^40, INT32_MAX, -1e300, NaN, inf, the strings ops
 * use); then one run in the mode the program picks, on zero inputs, unless the cost model
 * prices it above FUZZ_MAX_FLOPS (fuzz_util.h). Every step must end in a value or a status,
 * never a crash, a leak or undefined behaviour. */
#include <math.h>

#include "fuzz_util.h"
#include "ir/ir.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct cursor {
  const uint8_t *p, *end;
} cursor;

static unsigned byte(cursor *c) { return c->p < c->end ? *c->p++ : 0; }
static unsigned pick(cursor *c, unsigned n) { return n ? byte(c) % n : 0; }

static const int64_t ints[] = {0, 1, -1, 2, 3, -2, 4, 7, 8, 64, INT64_MAX, INT64_MIN, (int64_t)1 << 40, -((int64_t)1 << 40),
                               INT32_MAX, INT32_MIN, (int64_t)1 << 31, 5};
static const double floats[] = {0, 1, -1, 0.5, 2, 1e300, -1e300, NAN, INFINITY, -INFINITY, 1e-30, 3.5, -7};
static const char *const strings[] = {"none", "add", "mul", "max", "min", "mean", "sum", "prod", "constant", "reflect", "edge",
                                      "symmetric", "nearest", "linear", "cubic", "bilinear", "left", "right", "causal", "relu",
                                      "tanh", "sigmoid", "gelu", "NOTSET", "SAME_UPPER", "VALID", "half_pixel", "asymmetric",
                                      "align_corners", "floor", "ceil", "round_prefer_floor", "int8_block", "int4_block",
                                      "float32", "int64", "backward", "ortho", "forward", "zeros", "border", "reflection", ""};

#define N_INTS (sizeof ints / sizeof ints[0])
#define N_FLOATS (sizeof floats / sizeof floats[0])
#define N_STRINGS (sizeof strings / sizeof strings[0])

static int64_t an_int(cursor *c) { return byte(c) & 1 ? (int64_t)pick(c, 6) : ints[pick(c, N_INTS)]; }

/* The attributes of one node: every schema attribute, each set or left to its default. */
typedef struct attrs {
  rlx_attr a[16];
  int64_t iv[16][RLX_MAX_RANK];
  double fv[16][RLX_MAX_RANK];
  size_t n;
} attrs;

static void fill_attrs(cursor *c, const rlx_op_info *info, attrs *at) {
  at->n = 0;
  for (size_t s = 0; s < info->n_specs && at->n < 16; s++) {
    const rlx_attr_spec *sp = &info->specs[s];
    if (sp->kind == RLX_ATTR_GRAPH || (sp->has_default && byte(c) % 3 == 0)) continue;
    size_t k = at->n, len = pick(c, 5);
    rlx_attr *a = &at->a[k];
    *a = (rlx_attr){.name = sp->name, .kind = sp->kind};
    switch (sp->kind) {
      case RLX_ATTR_INT: a->i = an_int(c); break;
      case RLX_ATTR_FLOAT: a->f = floats[pick(c, N_FLOATS)]; break;
      case RLX_ATTR_INTS:
        for (size_t j = 0; j < len; j++) at->iv[k][j] = an_int(c);
        a->n = len, a->ints = at->iv[k];
        break;
      case RLX_ATTR_FLOATS:
        for (size_t j = 0; j < len; j++) at->fv[k][j] = floats[pick(c, N_FLOATS)];
        a->n = len, a->floats = at->fv[k];
        break;
      case RLX_ATTR_STRING: a->s = strings[pick(c, N_STRINGS)]; break;
      default: continue;
    }
    at->n++;
  }
}

/* fixed: symbolic dims become 1 (the replay that prices the program, see LLVMFuzzerTestOneInput). */
static void add_input(cursor *c, rlx_graph *g, int k, bool fixed, rlx_value *vals, size_t *nv) {
  rlx_type t = {.dtype = (rlx_dtype)pick(c, RLX_DTYPE_COUNT), .rank = (int32_t)pick(c, 5)};
  for (int d = 0; d < t.rank; d++) {
    unsigned x = pick(c, 7);
    t.dims[d] = x < 5 ? (int64_t)x : fixed ? 1 : RLX_DIM_SYMBOL(x - 5);
  }
  char name[8] = {'i', (char)('0' + k), 0};
  rlx_status *st = rlx_graph_add_input(g, name, &t, &vals[*nv]);
  if (!st) (*nv)++;
  rlx_status_free(st);
}

static void add_constant(cursor *c, rlx_graph *g, rlx_value *vals, size_t *nv) {
  int64_t v[4];
  int64_t n = (int64_t)pick(c, 5);
  for (int64_t i = 0; i < n; i++) v[i] = an_int(c);
  rlx_type t = {.dtype = RLX_DTYPE_I64, .rank = 1, .dims = {n}};
  rlx_status *st = rlx_graph_add_constant(g, &t, v, (size_t)n * sizeof(int64_t), &vals[*nv]);
  if (!st) (*nv)++;
  rlx_status_free(st);
}

static void add_node(cursor *c, rlx_graph *g, rlx_value *vals, size_t *nv) {
  unsigned op_hi = byte(c); /* two reads in sequence (in one expression their order is unspecified) */
  rlx_op op = (rlx_op)((op_hi << 8 | byte(c)) % RLX_OP_COUNT);
  if (op == RLX_OP_INPUT || op == RLX_OP_PARAM || op == RLX_OP_CONSTANT || !*nv) return;
  const rlx_op_info *info = rlx_op_info_get(op);
  int lo = info->min_in, hi = info->max_in < 4 ? info->max_in : 4;
  int n_in = lo + (int)pick(c, (unsigned)(hi >= lo ? hi - lo + 1 : 1));
  rlx_value in[4];
  for (int i = 0; i < n_in && i < 4; i++) in[i] = vals[pick(c, (unsigned)*nv)];
  attrs at;
  fill_attrs(c, info, &at);
  rlx_value out[RLX_MAX_NODE_OUTPUTS];
  size_t n_out = 0;
  rlx_status *st = rlx_graph_add(g, op, NULL, (size_t)(n_in < 4 ? n_in : 4), in, at.n, at.a, RLX_MAX_NODE_OUTPUTS, out, &n_out);
  for (size_t i = 0; !st && i < n_out && *nv < 32; i++) vals[(*nv)++] = out[i];
  rlx_status_free(st);
}

/* The program in data as a graph with one output (NULL when it has none), and its mode. */
static rlx_graph *program(const uint8_t *data, size_t size, bool fixed, rlx_mode *mode) {
  cursor c = {data, data + size};
  rlx_graph *g = NULL;
  if (rlx_graph_create(&g)) return NULL;
  rlx_value vals[32];
  size_t nv = 0;
  int n_inputs = (int)pick(&c, 4);
  for (int k = 0; k < n_inputs; k++) add_input(&c, g, k, fixed, vals, &nv);
  for (int step = 0, n = 1 + (int)pick(&c, 8); step < n && nv < 32; step++) {
    if (byte(&c) % 4 == 0) add_constant(&c, g, vals, &nv);
    else add_node(&c, g, vals, &nv);
  }
  static const rlx_mode modes[] = {RLX_MODE_LAZY, RLX_MODE_EAGER, RLX_MODE_COMPILED};
  *mode = modes[pick(&c, 3)];
  rlx_status *st = nv ? rlx_graph_set_outputs(g, 1, &vals[nv - 1]) : NULL;
  if (!nv || st) {
    rlx_status_free(st);
    rlx_graph_free(g);
    return NULL;
  }
  return g;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  rlx_mode mode;
  rlx_graph *g = program(data, size, false, &mode);
  if (!g) return 0;
  /* The cost model needs static inputs: a program with symbolic ones is priced by its replay
   * with those dims 1, which is what fuzz_run binds them to. */
  bool symbolic = false;
  for (size_t i = 0; i < rlx_graph_num_inputs(g); i++) symbolic |= !rlx_type_is_static(rlx_graph_value_type(g, rlx_graph_input_value(g, i)));
  rlx_graph *fixed = symbolic ? program(data, size, true, &mode) : NULL;
  if (!fixed || fuzz_cheap(fixed)) fuzz_run(g, mode, NULL, NULL);
  rlx_graph_free(fixed);
  rlx_graph_free(g);
  return 0;
}
