/* infer_quant.c: inference for FakeQuantize (its ema mode adds the running-scale output) and
 * FakeQuantizeBackward (see rlx/op_table.h). */
#include "ir/infer_util.h"

static rlx_status *check_ste(const char *ste) {
  static const char *const stes[] = {"identity", "clipped_identity", "tanh", "hard_tanh"};
  for (size_t i = 0; i < RLX_ARRAY_LEN(stes); i++)
    if (!strcmp(ste, stes[i])) return NULL;
  FAIL(INVALID_ARGUMENT, "ste '%s' (expected identity, clipped_identity, tanh or hard_tanh)", ste);
}

/* The scale input (index si) of scale_mode fixed: one value, or one per channel of x along axis. */
static rlx_status *check_scale(const rlx_infer_ctx *c, int si, bool per_channel, int64_t axis) {
  const rlx_type *s = IN(si), *x = IN(0);
  if (!rlx_dtype_is_float(s->dtype)) FAIL(INVALID_ARGUMENT, "input %d (scale) must be a float type, got %s", si, TSTR(s));
  int64_t n = 1;
  for (int i = 0; i < s->rank; i++) n = s->dims[i] < 0 || n < 0 ? -1 : n * s->dims[i];
  bool ok = s->rank <= 1 && (n == 1 || n < 0 || (per_channel && rlx_dim_compatible(n, x->dims[axis])));
  if (!ok)
    FAIL(INVALID_ARGUMENT, "input %d (scale) %s must hold one value%s", si, TSTR(s), per_channel ? " or one per channel along axis" : "");
  return NULL;
}

rlx_status *rlx_infer_quant(rlx_infer_ctx *c) {
  const rlx_type *x = IN(0);
  const char *mode = AS("scale_mode");
  bool ema = !strcmp(mode, "ema"), fixed = !strcmp(mode, "fixed") || ema, per_channel = AI("per_channel") != 0;
  int si = OP == RLX_OP_FAKE_QUANTIZE ? 1 : 2; /* where a fixed scale comes in */
  RLX_TRY(infer_need_float(c, 0));
  int64_t bits = AI("bits");
  if (bits != 8 && bits != 4 && bits != 2) FAIL(INVALID_ARGUMENT, "bits must be 8, 4 or 2, got %lld", (long long)bits);
  RLX_TRY(check_ste(AS("ste")));
  if (!fixed && strcmp(mode, "per_batch")) FAIL(INVALID_ARGUMENT, "scale_mode '%s' (expected per_batch, fixed or ema)", mode);
  double decay = AF("decay");
  if (ema && !(decay >= 0 && decay <= 1)) FAIL(INVALID_ARGUMENT, "decay %g is outside [0, 1]", decay);
  if (fixed != (NIN == si + 1))
    FAIL(INVALID_ARGUMENT, "scale_mode %s takes %d inputs, got %d", mode, fixed ? si + 1 : si, NIN);
  int64_t axis = 0;
  if (per_channel) {
    if (x->rank == 0) FAIL(INVALID_ARGUMENT, "per_channel needs an input of rank >= 1");
    NORM_AXIS(a, AI("axis"), x->rank, "axis");
    axis = a;
  }
  if (fixed) RLX_TRY(check_scale(c, si, per_channel, axis));
  if (ema && OP == RLX_OP_FAKE_QUANTIZE && per_channel && (IN(si)->rank != 1 || !rlx_dim_compatible(IN(si)->dims[0], x->dims[axis])))
    FAIL(INVALID_ARGUMENT, "input %d (running scale) %s must hold one value per channel along axis", si, TSTR(IN(si)));
  if (OP == RLX_OP_FAKE_QUANTIZE_BACKWARD) {
    RLX_TRY(infer_same_dtype(c, 0, 1));
    bool same = IN(1)->rank == x->rank;
    for (int i = 0; same && i < x->rank; i++) same = rlx_dim_compatible(x->dims[i], IN(1)->dims[i]);
    if (!same) FAIL(INVALID_ARGUMENT, "dy %s must have the shape of x %s", TSTR(IN(1)), TSTR(x));
  }
  *OUT(0) = *x;
  if (ema && OP == RLX_OP_FAKE_QUANTIZE) { /* the updated running scale */
    *OUT(1) = *IN(si);
    c->n_out = 2;
  }
  return NULL;
}
