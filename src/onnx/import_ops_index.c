/* import_ops_index.c: ONNX indexing and data-movement ops mapped onto rlx gathers, scatters,
 * slices and masks: CumProd, Compress, CenterCropPad, Col2Im, ReverseSequence, MaxUnpool,
 * TensorScatter, and NonZero / Unique / NonMaxSuppression of inputs known at import time (their
 * output shapes depend on the data). Semantics from the ONNX operator docs. */
#include <stdlib.h>
#include <string.h>

#include "onnx/import_ops_importer.h"

static rlx_status *known_axis(rlx_imp *I, const Onnx__NodeProto *n, size_t k, int rank, int64_t *axis) {
  const rlx_tensor *t = imp_const(I, n, k);
  if (!t || rlx_tensor_numel(t) != 1) IMP_FAIL(UNIMPLEMENTED, "the axis input must be a scalar known at import time");
  int64_t a = imp_tensor_i64(t, 0);
  *axis = imp_axis(a, rank);
  if (*axis < 0 || *axis >= rank) IMP_FAIL(OUT_OF_RANGE, "axis %lld for rank %d", (long long)a, rank);
  return NULL;
}

/* CumProd(x, axis): y[i] = prod over j of x[j] with j <= i (exclusive: j < i; reverse: j >= i or
 * j > i), as a masked product over a broadcast [.., L(i), L(j), ..] view: O(L^2) work along axis. */
rlx_status *rlx_onnx_map_cumprod(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_type tx;
  RLX_TRY(imp_in_type(I, n, 0, true, &tx));
  if (tx.rank < 1 || tx.rank >= RLX_MAX_RANK) IMP_FAIL(UNIMPLEMENTED, "CumProd of rank %d (1..%d)", tx.rank, RLX_MAX_RANK - 1);
  int64_t a = 0;
  RLX_TRY(known_axis(I, n, 1, tx.rank, &a));
  bool excl = imp_attr_i(n, "exclusive", 0) != 0, rev = imp_attr_i(n, "reverse", 0) != 0;
  int64_t L = tx.dims[a], LL;
  RLX_TRY(imp_table_size("the CumProd mask", 1, 2, (int64_t[]){L, L}, &LL));
  unsigned char *m = malloc((size_t)(LL ? LL : 1));
  if (!m) return RLX_OOM();
  for (int64_t i = 0; i < L; i++)
    for (int64_t j = 0; j < L; j++) m[i * L + j] = rev ? (excl ? j > i : j >= i) : (excl ? j < i : j <= i);
  rlx_value mask, x, one, y;
  rlx_status *st = imp_host_const(I, RLX_DTYPE_BOOL, 2, (int64_t[]){L, L}, m, &mask);
  free(m);
  RLX_TRY(st);
  int64_t md[RLX_MAX_RANK], xd[RLX_MAX_RANK];
  for (int i = 0, k = 0; i <= tx.rank; i++) {
    md[i] = i == a ? L : i == a + 1 ? L : 1;
    xd[i] = i == a ? 1 : i == a + 1 ? L : tx.dims[k];
    if (i != a) k++;
  }
  RLX_TRY(imp_reshape(I, n, mask, tx.rank + 1, md, &mask));
  RLX_TRY(imp_in(I, n, 0, &x));
  RLX_TRY(imp_reshape(I, n, x, tx.rank + 1, xd, &x));
  RLX_TRY(imp_scalar(I, 1, tx.dtype, &one));
  RLX_TRY(imp_select(I, n, mask, x, one, &y));
  int64_t ax = a + 1;
  RLX_TRY(imp_reduce(I, n, "prod", y, 1, &ax, false, &y));
  return imp_out(I, n, 0, y);
}

/* Compress(x, condition known at import time): the slices (or, without axis, the flattened
 * elements) where condition is true; condition may be shorter than the axis. */
rlx_status *rlx_onnx_map_compress(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_type tx;
  RLX_TRY(imp_in_type(I, n, 0, true, &tx));
  const rlx_tensor *c = imp_const(I, n, 1);
  if (!c) IMP_FAIL(UNIMPLEMENTED, "Compress with a run-time condition has a data-dependent shape");
  bool has_axis = imp_attr(n, "axis") != NULL;
  int64_t a = has_axis ? imp_axis(imp_attr_i(n, "axis", 0), tx.rank) : 0, L;
  if (has_axis && (a < 0 || a >= tx.rank)) IMP_FAIL(OUT_OF_RANGE, "axis %lld for rank %d", (long long)imp_attr_i(n, "axis", 0), tx.rank);
  RLX_TRY(rlx_type_numel(&tx, &L));
  if (has_axis) L = tx.dims[a];
  int64_t nc = rlx_tensor_numel(c), k = 0;
  if (nc > L) IMP_FAIL(INVALID_ARGUMENT, "condition has %lld entries for %lld slices", (long long)nc, (long long)L);
  int64_t *idx = malloc(sizeof(int64_t) * (size_t)(nc ? nc : 1));
  if (!idx) return RLX_OOM();
  for (int64_t i = 0; i < nc; i++)
    if (rlx_tensor_get_f64(c, i) != 0) idx[k++] = i;
  rlx_value x, iv, y;
  rlx_status *st = imp_host_const(I, RLX_DTYPE_I64, 1, &k, idx, &iv);
  free(idx);
  RLX_TRY(st);
  RLX_TRY(imp_in(I, n, 0, &x));
  if (!has_axis) RLX_TRY(imp_reshape(I, n, x, 1, &L, &x));
  RLX_TRY(imp_gather(I, n, RLX_OP_GATHER, x, iv, a, &y));
  return imp_out(I, n, 0, y);
}

/* CenterCropPad(x, shape known): per listed axis, crop the centered window (the extra element of
 * an odd difference at the end) or zero-pad around the input (the extra element at the end). */
rlx_status *rlx_onnx_map_center_crop_pad(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_type tx;
  RLX_TRY(imp_in_type(I, n, 0, true, &tx));
  int64_t *shape;
  size_t ns, na;
  RLX_TRY(imp_const_ints(I, n, 1, "shape", &shape, &ns));
  const int64_t *axa = imp_attr_ints(n, "axes", &na);
  int64_t want[RLX_MAX_RANK], pads[2 * RLX_MAX_RANK] = {0};
  for (int i = 0; i < tx.rank; i++) want[i] = tx.dims[i];
  rlx_status *st = (na ? na : (size_t)tx.rank) != ns ? RLX_ERR(INVALID_ARGUMENT, "shape has %zu entries for %zu axes", ns, na ? na : (size_t)tx.rank) : NULL;
  for (size_t i = 0; !st && i < ns; i++) {
    int64_t a = na ? imp_axis(axa[i], tx.rank) : (int64_t)i;
    if (a < 0 || a >= tx.rank || shape[i] < 0) st = RLX_ERR(INVALID_ARGUMENT, "bad axis or size at entry %zu", i);
    else want[a] = shape[i];
  }
  free(shape);
  RLX_TRY(st);
  rlx_value x;
  RLX_TRY(imp_in(I, n, 0, &x));
  bool pad = false;
  for (int a = 0; a < tx.rank; a++) {
    int64_t d = tx.dims[a], w = want[a];
    if (w < d) RLX_TRY(imp_narrow(I, n, x, a, (d - w) / 2, w, &x));
    if (w > d) pads[a] = (w - d) / 2, pads[a + tx.rank] = w - d - (w - d) / 2, pad = true;
  }
  if (pad) {
    rlx_attr at[3] = {RLX_ATTR_IS("pads", 2 * (size_t)tx.rank, pads), RLX_ATTR_S("mode", "constant"), RLX_ATTR_F("value", 0)};
    RLX_TRY(imp_add(I, n, RLX_OP_PAD, 1, &x, 3, at, &x));
  }
  return imp_out(I, n, 0, x);
}

/* Col2Im(x [N, C*prod(block), L], image_shape, block_shape): sums every column entry into the
 * image pixel its block position covers (strides, dilations, pads as Conv): a scatter-add into a
 * flattened image with one extra slot for the entries that fall into the padding. */
rlx_status *rlx_onnx_map_col2im(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_type tx;
  RLX_TRY(imp_in_type(I, n, 0, true, &tx));
  int64_t *img = NULL, *blk = NULL;
  size_t ni, nb;
  RLX_TRY(imp_const_ints(I, n, 1, "image_shape", &img, &ni));
  rlx_status *st = imp_const_ints(I, n, 2, "block_shape", &blk, &nb);
  int r = (int)ni;
  size_t nd, nst, np;
  const int64_t *dil = imp_attr_ints(n, "dilations", &nd), *str = imp_attr_ints(n, "strides", &nst), *pd = imp_attr_ints(n, "pads", &np);
  if (!st && (r < 1 || r > 5 || nb != ni || (nd && nd != ni) || (nst && nst != ni) || (np && np != 2 * ni) || tx.rank != 3))
    st = RLX_ERR(INVALID_ARGUMENT, "image_shape/block_shape/attributes disagree for x %s", RLX_TYPE_STR(&tx));
  int64_t K = 1, P = 1, nblk[8], L = 1, KL = 0;
  for (int i = 0; !st && i < r; i++) {
    int64_t d = nd ? dil[i] : 1, s = nst ? str[i] : 1, pb = np ? pd[i] : 0, pe = np ? pd[i + r] : 0, span, reach;
    if (img[i] < 0 || blk[i] < 1 || d < 1 || s < 1 || pb < 0 || pe < 0)
      st = RLX_ERR(INVALID_ARGUMENT, "dim %d: image %lld, block %lld, dilation %lld, stride %lld, pads %lld and %lld (image and pads >= 0, the rest >= 1)",
                   i, (long long)img[i], (long long)blk[i], (long long)d, (long long)s, (long long)pb, (long long)pe);
    else if (!rlx_add_i64(img[i], pb, &span) || !rlx_add_i64(span, pe, &span) || !rlx_mul_i64(d, blk[i] - 1, &reach) ||
             !rlx_mul_i64(K, blk[i], &K) || !rlx_mul_i64(P, img[i], &P) || P == INT64_MAX)
      st = RLX_ERR(INVALID_ARGUMENT, "dim %d: the image, block, dilation and pads overflow int64", i);
    else {
      nblk[i] = span > reach ? (span - reach - 1) / s + 1 : 0;
      if (!rlx_mul_i64(L, nblk[i], &L)) st = RLX_ERR(INVALID_ARGUMENT, "the block count overflows int64");
    }
  }
  if (!st && (tx.dims[1] % K || tx.dims[2] != L))
    st = RLX_ERR(INVALID_ARGUMENT, "x %s does not hold C*%lld columns of %lld blocks", RLX_TYPE_STR(&tx), (long long)K, (long long)L);
  if (!st) st = imp_table_size("the Col2Im index table", sizeof(int64_t), 2, (int64_t[]){K, L}, &KL);
  int64_t *pos = st ? NULL : malloc(sizeof(int64_t) * (size_t)(KL ? KL : 1));
  if (!st && !pos) st = RLX_OOM();
  for (int64_t k = 0; !st && k < K; k++) {
    for (int64_t l = 0; l < L; l++) {
      int64_t kr = k, lr = l, p = 0;
      bool in = true;
      for (int i = r - 1; i >= 0; i--) { /* kernel and block positions, last dim fastest */
        int64_t ki = kr % blk[i], bi = lr % nblk[i];
        kr /= blk[i], lr /= nblk[i];
        int64_t c = bi * (nst ? str[i] : 1) - (np ? pd[i] : 0) + ki * (nd ? dil[i] : 1);
        int64_t stride = 1; /* c * stride < P: no overflow */
        for (int j = i + 1; j < r; j++) stride *= img[j];
        in &= c >= 0 && c < img[i];
        if (in) p += c * stride;
      }
      pos[k * L + l] = in ? p : P;
    }
  }
  int64_t N = tx.dims[0], C = st ? 0 : tx.dims[1] / K;
  rlx_value x, iv, z, y;
  int64_t od[RLX_MAX_RANK] = {N, C};
  for (int i = 0; !st && i < r; i++) od[2 + i] = img[i];
  if (!st) st = imp_host_const(I, RLX_DTYPE_I64, 3, (int64_t[]){1, 1, KL}, pos, &iv);
  free(pos), free(img), free(blk);
  RLX_TRY(st);
  rlx_type tu = {.dtype = tx.dtype, .rank = 3, .dims = {N, C, KL}};
  RLX_TRY(imp_expand(I, n, iv, 3, (int64_t[]){N, C, KL}, &iv));
  RLX_TRY(imp_in(I, n, 0, &x));
  RLX_TRY(imp_reshape(I, n, x, 3, tu.dims, &x));
  RLX_TRY(imp_filled(I, n, 0, tx.dtype, 3, (int64_t[]){N, C, P + 1}, &z));
  rlx_attr at[2] = {RLX_ATTR_I("axis", 2), RLX_ATTR_S("reduction", "add")};
  rlx_value in[3] = {z, iv, x};
  RLX_TRY(imp_add(I, n, RLX_OP_SCATTER_ELEMENTS, 3, in, 2, at, &y));
  RLX_TRY(imp_narrow(I, n, y, 2, 0, P, &y));
  RLX_TRY(imp_reshape(I, n, y, r + 2, od, &y));
  return imp_out(I, n, 0, y);
}

/* ReverseSequence(x, sequence_lens): along time_axis, the first lens[b] entries of batch entry b
 * reversed, the rest kept: a GatherElements with index t < len ? len - 1 - t : t. */
rlx_status *rlx_onnx_map_reverse_sequence(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_type tx;
  RLX_TRY(imp_in_type(I, n, 0, true, &tx));
  int64_t ba = imp_axis(imp_attr_i(n, "batch_axis", 1), tx.rank), ta = imp_axis(imp_attr_i(n, "time_axis", 0), tx.rank);
  if (tx.rank < 2 || ba < 0 || ta < 0 || ba >= tx.rank || ta >= tx.rank || ba == ta)
    IMP_FAIL(INVALID_ARGUMENT, "batch_axis and time_axis must be distinct axes of %s", RLX_TYPE_STR(&tx));
  rlx_value lens, t, lt, rv, idx, x, y;
  RLX_TRY(imp_in(I, n, 1, &lens));
  RLX_TRY(imp_cast(I, n, lens, RLX_DTYPE_I64, &lens));
  RLX_TRY(imp_along(I, n, lens, tx.rank, ba, tx.dims[ba], &lens));
  RLX_TRY(imp_arange(I, tx.dims[ta], &t));
  RLX_TRY(imp_along(I, n, t, tx.rank, ta, tx.dims[ta], &t));
  RLX_TRY(imp_bin(I, n, RLX_OP_LESS, t, lens, &lt));
  RLX_TRY(imp_bin(I, n, RLX_OP_SUB, lens, t, &rv));
  RLX_TRY(imp_with_scalar(I, n, RLX_OP_SUB, rv, 1, &rv));
  RLX_TRY(imp_select(I, n, lt, rv, t, &idx));
  RLX_TRY(imp_expand(I, n, idx, tx.rank, tx.dims, &idx));
  RLX_TRY(imp_in(I, n, 0, &x));
  RLX_TRY(imp_gather(I, n, RLX_OP_GATHER_ELEMENTS, x, idx, ta, &y));
  return imp_out(I, n, 0, y);
}

/* MaxUnpool(x, indices, [output_shape]): zeros of MaxPool's input shape, (in - 1) stride - pads +
 * kernel, with x written at the flat (whole-tensor, row-major) indices; an output_shape larger
 * than that shape pads it with zeros at the end (the ONNX reference's reading). */
rlx_status *rlx_onnx_map_max_unpool(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_type tx;
  RLX_TRY(imp_in_type(I, n, 0, true, &tx));
  int nsp = tx.rank - 2;
  if (nsp < 1) IMP_FAIL(INVALID_ARGUMENT, "x must be [N,C,d..], got %s", RLX_TYPE_STR(&tx));
  size_t nk, ns, np;
  const int64_t *k = imp_attr_ints(n, "kernel_shape", &nk), *s = imp_attr_ints(n, "strides", &ns), *p = imp_attr_ints(n, "pads", &np);
  if (nk != (size_t)nsp) IMP_FAIL(INVALID_ARGUMENT, "kernel_shape has %zu entries for %d spatial dims", nk, nsp);
  rlx_type to = {.dtype = tx.dtype, .rank = tx.rank, .dims = {tx.dims[0], tx.dims[1]}};
  for (int i = 0; i < nsp; i++)
    to.dims[2 + i] = (tx.dims[2 + i] - 1) * (ns == (size_t)nsp ? s[i] : 1) - (np == 2 * (size_t)nsp ? p[i] + p[i + nsp] : 0) + k[i];
  int64_t pads[2 * RLX_MAX_RANK] = {0};
  bool pad = false;
  if (imp_has(n, 2)) {
    int64_t *os;
    size_t no;
    RLX_TRY(imp_const_ints(I, n, 2, "output_shape", &os, &no));
    rlx_status *st = no != (size_t)tx.rank ? RLX_ERR(INVALID_ARGUMENT, "output_shape has %zu entries for rank %d", no, tx.rank) : NULL;
    for (int i = 0; !st && i < tx.rank; i++) {
      if (os[i] < to.dims[i]) st = RLX_ERR(INVALID_ARGUMENT, "output_shape[%d] = %lld is below the unpooled size %lld", i, (long long)os[i], (long long)to.dims[i]);
      else pads[tx.rank + i] = os[i] - to.dims[i], pad |= os[i] != to.dims[i];
    }
    free(os);
    RLX_TRY(st);
  }
  int64_t total, cnt;
  RLX_TRY(rlx_type_numel(&to, &total));
  RLX_TRY(rlx_type_numel(&tx, &cnt));
  rlx_value x, idx, z, y;
  RLX_TRY(imp_in(I, n, 0, &x));
  RLX_TRY(imp_in(I, n, 1, &idx));
  RLX_TRY(imp_reshape(I, n, x, 1, &cnt, &x));
  RLX_TRY(imp_reshape(I, n, idx, 1, &cnt, &idx));
  RLX_TRY(imp_filled(I, n, 0, tx.dtype, 1, &total, &z));
  rlx_attr at[2] = {RLX_ATTR_I("axis", 0), RLX_ATTR_S("reduction", "none")};
  rlx_value in[3] = {z, idx, x};
  RLX_TRY(imp_add(I, n, RLX_OP_SCATTER_ELEMENTS, 3, in, 2, at, &y));
  RLX_TRY(imp_reshape(I, n, y, to.rank, to.dims, &y));
  if (pad) {
    rlx_attr pa[3] = {RLX_ATTR_IS("pads", 2 * (size_t)tx.rank, pads), RLX_ATTR_S("mode", "constant"), RLX_ATTR_F("value", 0)};
    RLX_TRY(imp_add(I, n, RLX_OP_PAD, 1, &y, 3, pa, &y));
  }
  return imp_out(I, n, 0, y);
}

/* TensorScatter(past, update, [write_indices]): past with update written along axis from
 * write_indices[b] (0 when absent) on; mode circular wraps modulo the cache length. */
rlx_status *rlx_onnx_map_tensor_scatter(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_type tp, tu;
  RLX_TRY(imp_in_type(I, n, 0, true, &tp));
  RLX_TRY(imp_in_type(I, n, 1, true, &tu));
  int64_t a = imp_axis(imp_attr_i(n, "axis", -2), tp.rank);
  if (a <= 0 || a >= tp.rank || tu.rank != tp.rank) IMP_FAIL(INVALID_ARGUMENT, "axis %lld for past %s and update %s", (long long)a, RLX_TYPE_STR(&tp), RLX_TYPE_STR(&tu));
  char mb[16];
  const char *mode = imp_attr_s(n, "mode", "linear", mb, sizeof mb);
  if (strcmp(mode, "linear") && strcmp(mode, "circular")) IMP_FAIL(INVALID_ARGUMENT, "mode '%s'", mode);
  rlx_value t, idx, past, upd, y;
  RLX_TRY(imp_arange(I, tu.dims[a], &t));
  RLX_TRY(imp_along(I, n, t, tp.rank, a, tu.dims[a], &idx));
  if (imp_has(n, 2)) {
    rlx_value wi;
    RLX_TRY(imp_in(I, n, 2, &wi));
    RLX_TRY(imp_cast(I, n, wi, RLX_DTYPE_I64, &wi));
    RLX_TRY(imp_along(I, n, wi, tp.rank, 0, tp.dims[0], &wi));
    RLX_TRY(imp_bin(I, n, RLX_OP_ADD, idx, wi, &idx));
  }
  if (!strcmp(mode, "circular")) RLX_TRY(imp_with_scalar(I, n, RLX_OP_MOD, idx, (double)tp.dims[a], &idx));
  RLX_TRY(imp_expand(I, n, idx, tu.rank, tu.dims, &idx));
  RLX_TRY(imp_in(I, n, 0, &past));
  RLX_TRY(imp_in(I, n, 1, &upd));
  rlx_attr at[2] = {RLX_ATTR_I("axis", a), RLX_ATTR_S("reduction", "none")};
  rlx_value in[3] = {past, idx, upd};
  RLX_TRY(imp_add(I, n, RLX_OP_SCATTER_ELEMENTS, 3, in, 2, at, &y));
  return imp_out(I, n, 0, y);
}

/* ---- ops computed at import time (their output shapes depend on the data) ---- */

/* NonZero(x known): int64 [rank, count] of the coordinates of non-zero elements, row-major. */
rlx_status *rlx_onnx_map_non_zero(rlx_imp *I, const Onnx__NodeProto *n) {
  const rlx_tensor *x = imp_const(I, n, 0);
  if (!x) IMP_FAIL(UNIMPLEMENTED, "NonZero of a run-time input has a data-dependent shape");
  int64_t cnt = 0, total = rlx_tensor_numel(x), r = rlx_tensor_rank(x);
  const int64_t *d = rlx_tensor_dims(x);
  for (int64_t i = 0; i < total; i++) cnt += rlx_tensor_get_f64(x, i) != 0;
  rlx_tensor *y;
  int64_t yd[2] = {r ? r : 1, cnt};
  RLX_TRY(rlx_tensor_create(RLX_DTYPE_I64, 2, yd, NULL, 0, &y));
  int64_t *p = rlx_tensor_data(y), k = 0;
  for (int64_t i = 0; i < total; i++) {
    if (rlx_tensor_get_f64(x, i) == 0) continue;
    int64_t rest = i;
    for (int64_t j = r - 1; j >= 0; j--) p[j * cnt + k] = rest % d[j], rest /= d[j];
    if (!r) p[k] = 0;
    k++;
  }
  return imp_out_data(I, n, 0, y);
}

/* Unique over slices: x viewed as [outer, L, inner]; slice i holds x[o, i, k] for all o, k. */
typedef struct uslices {
  const rlx_tensor *x;
  int64_t outer, L, inner;
} uslices;

static int elem_cmp(const rlx_tensor *x, int64_t a, int64_t b) {
  const unsigned char *p = rlx_tensor_cdata(x);
  switch (rlx_tensor_dtype(x)) {
    case RLX_DTYPE_I64: {
      int64_t u, v;
      memcpy(&u, p + 8 * a, 8), memcpy(&v, p + 8 * b, 8);
      return (u > v) - (u < v);
    }
    case RLX_DTYPE_U64: {
      uint64_t u, v;
      memcpy(&u, p + 8 * a, 8), memcpy(&v, p + 8 * b, 8);
      return (u > v) - (u < v);
    }
    default: { /* every other dtype is exact in a double */
      double u = rlx_tensor_get_f64(x, a), v = rlx_tensor_get_f64(x, b);
      return (u > v) - (u < v);
    }
  }
}

/* Lexicographic order of slices i and j (row-major over their elements). */
static int slice_cmp(const uslices *s, int64_t i, int64_t j) {
  for (int64_t o = 0; o < s->outer; o++)
    for (int64_t k = 0; k < s->inner; k++) {
      int c = elem_cmp(s->x, (o * s->L + i) * s->inner + k, (o * s->L + j) * s->inner + k);
      if (c) return c;
    }
  return 0;
}

/* Stable merge sort of idx[0..n) by slice order. */
static void sort_slices(const uslices *s, int64_t *idx, int64_t *tmp, int64_t n) {
  for (int64_t w = 1; w < n; w *= 2)
    for (int64_t lo = 0; lo < n; lo += 2 * w) {
      int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n, a = lo, b = mid, k = lo;
      while (a < mid || b < hi) tmp[k++] = b >= hi || (a < mid && slice_cmp(s, idx[a], idx[b]) <= 0) ? idx[a++] : idx[b++];
      memcpy(idx + lo, tmp + lo, sizeof(int64_t) * (size_t)(hi - lo));
    }
}

static rlx_status *i64_data(int64_t len, const int64_t *v, rlx_tensor **out) {
  return rlx_tensor_create(RLX_DTYPE_I64, 1, &len, v, sizeof(int64_t) * (size_t)len, out);
}

/* Unique(x known): unique elements (or slices along axis), sorted ascending or in order of first
 * occurrence, with the first-occurrence indices, the inverse indices and the counts. */
rlx_status *rlx_onnx_map_unique(rlx_imp *I, const Onnx__NodeProto *n) {
  const rlx_tensor *x = imp_const(I, n, 0);
  if (!x) IMP_FAIL(UNIMPLEMENTED, "Unique of a run-time input has a data-dependent shape");
  const rlx_type *tx = rlx_tensor_type(x);
  bool has_axis = imp_attr(n, "axis") != NULL, sorted = imp_attr_i(n, "sorted", 1) != 0;
  int64_t a = has_axis ? imp_axis(imp_attr_i(n, "axis", 0), tx->rank) : 0;
  if (has_axis && (a < 0 || a >= tx->rank)) IMP_FAIL(OUT_OF_RANGE, "axis %lld for rank %d", (long long)imp_attr_i(n, "axis", 0), tx->rank);
  uslices s = {.x = x, .outer = 1, .L = has_axis ? tx->dims[a] : rlx_tensor_numel(x), .inner = 1};
  for (int i = 0; has_axis && i < tx->rank; i++) {
    if (i < a) s.outer *= tx->dims[i];
    if (i > a) s.inner *= tx->dims[i];
  }
  size_t cap = (size_t)(s.L ? s.L : 1);
  int64_t *order = malloc(cap * 8), *tmp = malloc(cap * 8), *first = malloc(cap * 8), *inv = malloc(cap * 8), *cnt = malloc(cap * 8),
          *pos = malloc(cap * 8);
  rlx_status *st = order && tmp && first && inv && cnt && pos ? NULL : RLX_OOM();
  int64_t nu = 0;
  if (!st) {
    for (int64_t i = 0; i < s.L; i++) order[i] = i;
    sort_slices(&s, order, tmp, s.L);
    /* groups of equal slices in sorted order; a group's first member is its first occurrence */
    for (int64_t k = 0; k < s.L; k++) {
      if (!k || slice_cmp(&s, order[k - 1], order[k])) first[nu] = order[k], cnt[nu++] = 0;
      inv[order[k]] = nu - 1, cnt[nu - 1]++;
    }
    for (int64_t g = 0; g < nu; g++) pos[g] = g; /* output position of group g */
    if (!sorted) { /* order the groups by first occurrence */
      for (int64_t g = 0; g < nu; g++) tmp[g] = g;
      for (int64_t g = 1; g < nu; g++)
        for (int64_t h = g; h > 0 && first[tmp[h - 1]] > first[tmp[h]]; h--) {
          int64_t t = tmp[h];
          tmp[h] = tmp[h - 1], tmp[h - 1] = t;
        }
      for (int64_t g = 0; g < nu; g++) pos[tmp[g]] = g;
    }
  }
  rlx_tensor *Y = NULL, *ti = NULL, *tv = NULL, *tc = NULL;
  if (!st) {
    rlx_type ty = *tx;
    if (has_axis) ty.dims[a] = nu;
    else ty.rank = 1, ty.dims[0] = nu;
    st = rlx_tensor_create(tx->dtype, ty.rank, ty.dims, NULL, 0, &Y);
  }
  if (!st) {
    size_t es = rlx_dtype_size(tx->dtype);
    unsigned char *yp = rlx_tensor_data(Y);
    const unsigned char *xp = rlx_tensor_cdata(x);
    int64_t *fo = tmp, *co = order; /* first occurrence and count per output position */
    for (int64_t g = 0; g < nu; g++) fo[pos[g]] = first[g], co[pos[g]] = cnt[g];
    for (int64_t o = 0; o < s.outer; o++)
      for (int64_t u = 0; u < nu; u++)
        memcpy(yp + ((o * nu + u) * s.inner) * es, xp + ((o * s.L + fo[u]) * s.inner) * es, (size_t)s.inner * es);
    for (int64_t i = 0; i < s.L; i++) inv[i] = pos[inv[i]];
    st = i64_data(nu, fo, &ti);
    if (!st) st = i64_data(s.L, inv, &tv);
    if (!st) st = i64_data(nu, co, &tc);
  }
  free(order), free(tmp), free(first), free(inv), free(cnt), free(pos);
  if (st) {
    rlx_tensor_free(Y), rlx_tensor_free(ti), rlx_tensor_free(tv), rlx_tensor_free(tc);
    return st;
  }
  rlx_tensor *outs[4] = {Y, ti, tv, tc};
  for (size_t k = 0; k < 4; k++) { /* imp_out_data takes each tensor, also on failure */
    if (!st) st = imp_out_data(I, n, k, outs[k]);
    else rlx_tensor_free(outs[k]);
  }
  return st;
}

/* NonMaxSuppression IoU test of boxes a and b (corners [y1, x1, y2, x2] in either order, or
 * center_point_box [xc, yc, w, h]): true when IoU > threshold. */
static bool nms_suppress(const double *a, const double *b, bool center, double thr) {
  double lo[2][2], hi[2][2]; /* [box][x/y] */
  const double *bx[2] = {a, b};
  for (int k = 0; k < 2; k++) {
    const double *v = bx[k];
    if (center) {
      lo[k][0] = v[0] - v[2] / 2, hi[k][0] = v[0] + v[2] / 2, lo[k][1] = v[1] - v[3] / 2, hi[k][1] = v[1] + v[3] / 2;
    } else {
      lo[k][0] = v[1] < v[3] ? v[1] : v[3], hi[k][0] = v[1] < v[3] ? v[3] : v[1];
      lo[k][1] = v[0] < v[2] ? v[0] : v[2], hi[k][1] = v[0] < v[2] ? v[2] : v[0];
    }
  }
  double inter = 1, area[2] = {1, 1};
  for (int d = 0; d < 2; d++) {
    double l = lo[0][d] > lo[1][d] ? lo[0][d] : lo[1][d], h = hi[0][d] < hi[1][d] ? hi[0][d] : hi[1][d];
    if (h <= l) return false;
    inter *= h - l;
    area[0] *= hi[0][d] - lo[0][d], area[1] *= hi[1][d] - lo[1][d];
  }
  double uni = area[0] + area[1] - inter;
  if (inter <= 0 || area[0] <= 0 || area[1] <= 0 || uni <= 0) return false;
  return inter / uni > thr;
}

/* NonMaxSuppression(boxes [B,N,4], scores [B,C,N], [max_per_class], [iou], [score_threshold]),
 * inputs known at import time: per batch and class, boxes above score_threshold by descending
 * score (ties: lower index first), each kept unless its IoU with a kept box exceeds iou_threshold,
 * at most max_per_class (0 when absent); int64 [count, 3] of (batch, class, box). */
rlx_status *rlx_onnx_map_non_max_suppression(rlx_imp *I, const Onnx__NodeProto *n) {
  const rlx_tensor *bt = imp_const(I, n, 0), *st_ = imp_const(I, n, 1);
  const rlx_tensor *mt = imp_const(I, n, 2), *it = imp_const(I, n, 3), *tt = imp_const(I, n, 4);
  if (!bt || !st_ || (imp_has(n, 2) && !mt) || (imp_has(n, 3) && !it) || (imp_has(n, 4) && !tt))
    IMP_FAIL(UNIMPLEMENTED, "NonMaxSuppression of run-time inputs has a data-dependent shape");
  const rlx_type *tb = rlx_tensor_type(bt), *ts = rlx_tensor_type(st_);
  if (tb->rank != 3 || tb->dims[2] != 4 || ts->rank != 3 || ts->dims[0] != tb->dims[0] || ts->dims[2] != tb->dims[1])
    IMP_FAIL(INVALID_ARGUMENT, "boxes %s and scores %s must be [B,N,4] and [B,C,N]", RLX_TYPE_STR(tb), RLX_TYPE_STR(ts));
  int64_t B = tb->dims[0], N = tb->dims[1], C = ts->dims[1];
  int64_t maxk = mt && rlx_tensor_numel(mt) ? imp_tensor_i64(mt, 0) : 0;
  double iou = it && rlx_tensor_numel(it) ? rlx_tensor_get_f64(it, 0) : 0;
  bool use_thr = tt && rlx_tensor_numel(tt);
  double thr = use_thr ? rlx_tensor_get_f64(tt, 0) : 0;
  bool center = imp_attr_i(n, "center_point_box", 0) != 0;
  if (maxk < 0) maxk = 0;
  size_t cap = (size_t)(B * C * (maxk < N ? maxk : N)) + 1;
  int64_t *sel = malloc(3 * sizeof(int64_t) * cap), *cand = malloc(sizeof(int64_t) * (size_t)(N + 1)), *kept = malloc(sizeof(int64_t) * (size_t)(N + 1));
  double *box = malloc(sizeof(double) * (size_t)(4 * N + 1));
  if (!sel || !cand || !kept || !box) {
    free(sel), free(cand), free(kept), free(box);
    return RLX_OOM();
  }
  int64_t cnt = 0;
  for (int64_t b = 0; b < B; b++) {
    for (int64_t i = 0; i < 4 * N; i++) box[i] = rlx_tensor_get_f64(bt, b * 4 * N + i);
    for (int64_t c = 0; c < C; c++) {
      int64_t nc = 0, nk = 0, off = (b * C + c) * N;
      for (int64_t i = 0; i < N; i++)
        if (!use_thr || rlx_tensor_get_f64(st_, off + i) > thr) cand[nc++] = i;
      for (int64_t i = 1; i < nc; i++) /* stable insertion sort by descending score */
        for (int64_t j = i; j > 0 && rlx_tensor_get_f64(st_, off + cand[j - 1]) < rlx_tensor_get_f64(st_, off + cand[j]); j--) {
          int64_t t = cand[j];
          cand[j] = cand[j - 1], cand[j - 1] = t;
        }
      for (int64_t i = 0; i < nc && nk < maxk; i++) {
        bool keep = true;
        for (int64_t j = 0; keep && j < nk; j++) keep = !nms_suppress(box + 4 * cand[i], box + 4 * kept[j], center, iou);
        if (!keep) continue;
        kept[nk++] = cand[i];
        sel[3 * cnt] = b, sel[3 * cnt + 1] = c, sel[3 * cnt + 2] = cand[i];
        cnt++;
      }
    }
  }
  rlx_tensor *y;
  rlx_status *st = rlx_tensor_create(RLX_DTYPE_I64, 2, (int64_t[]){cnt, 3}, sel, sizeof(int64_t) * 3 * (size_t)cnt, &y);
  free(sel), free(cand), free(kept), free(box);
  RLX_TRY(st);
  return imp_out_data(I, n, 0, y);
}
