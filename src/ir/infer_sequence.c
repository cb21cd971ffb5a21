/* infer_sequence.c: inference for the sequence family (SelectiveScan, GatedDeltaNet; see
 * rlx/op_table.h). */
#include "ir/infer_util.h"

/* Checks input i (named `what`) against the dims spelled by `dims` (rank entries) over the size
 * table sz ('B' -> sz['B'], ...): a size still unknown (-1) is taken from the input. */
static rlx_status *want_shape(const rlx_infer_ctx *c, int i, const char *what, const char *dims, int64_t *sz) {
  int r = (int)strlen(dims);
  if (IN(i)->rank != r) FAIL(INVALID_ARGUMENT, "input %d (%s) must have rank %d [%s], got %s", i, what, r, dims, TSTR(IN(i)));
  for (int d = 0; d < r; d++) {
    int64_t *s = &sz[(unsigned char)dims[d]], got = IN(i)->dims[d];
    if (*s == RLX_DIM_DYNAMIC || (*s < 0 && got >= 0)) *s = got;
    else if (!rlx_dim_compatible(*s, got))
      FAIL(INVALID_ARGUMENT, "input %d (%s) is %s but dim %d (%c) must be %lld as in the other inputs", i, what, TSTR(IN(i)), d, dims[d],
           (long long)*s);
  }
  if (i > 0) RLX_TRY(infer_same_dtype(c, 0, i));
  return NULL;
}

static void set_out(rlx_infer_ctx *c, int k, const char *dims, const int64_t *sz) {
  OUT(k)->dtype = IN(0)->dtype;
  OUT(k)->rank = (int32_t)strlen(dims);
  for (int d = 0; dims[d]; d++) OUT(k)->dims[d] = sz[(unsigned char)dims[d]];
}

/* Operand names and dims (one letter per dim) of each op, in input order. */
typedef struct operand {
  const char *name, *dims;
} operand;
static const operand selective_scan[] = {{"x", "BSH"}, {"delta", "BSH"}, {"A", "HN"}, {"Bm", "BSN"}, {"Cm", "BSN"}};
/* K = key/query head dim, V = value head dim */
static const operand gated_delta_net[] = {{"q", "BSHK"}, {"k", "BSHK"}, {"v", "BSHV"}, {"g", "BSH"}, {"beta", "BSH"}, {"state", "BHVK"}};

rlx_status *rlx_infer_sequence(rlx_infer_ctx *c) {
  const operand *ops = OP == RLX_OP_SELECTIVE_SCAN ? selective_scan : OP == RLX_OP_GATED_DELTA_NET ? gated_delta_net : NULL;
  if (!ops) FAIL(INTERNAL, "op %s is not in the sequence family", rlx_op_name(OP));
  int64_t sz[128];
  for (int i = 0; i < 128; i++) sz[i] = RLX_DIM_DYNAMIC;
  RLX_TRY(infer_need_float(c, 0));
  for (int i = 0; i < NIN; i++) RLX_TRY(want_shape(c, i, ops[i].name, ops[i].dims, sz));
  if (OP == RLX_OP_SELECTIVE_SCAN) {
    set_out(c, 0, "BSH", sz);
  } else {
    set_out(c, 0, "BSHV", sz);
    set_out(c, 1, "BHVK", sz);
    c->n_out = 2;
  }
  return NULL;
}
