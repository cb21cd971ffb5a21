/* import_ops_einsum.c: ONNX Einsum (NumPy einsum semantics: explicit or implicit output, "..."
 * broadcasting, repeated labels as diagonals) decomposed into Reduce, Where (diagonal masks),
 * Expand, DotGeneral and Transpose. */
#include <stdlib.h>
#include <string.h>

#include "onnx/import_ops_importer.h"

/* Labels: letters are their character codes, ellipsis dims are 256 + k (k-th of the broadcast
 * ellipsis dims, aligned to the right as in NumPy). */
typedef struct ein_term {
  rlx_value v;
  int rank;
  int lab[RLX_MAX_RANK];
} ein_term;

static bool ein_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/* Parses one term (no spaces) of `rank` dims (rank < 0: an output term, where "..." means all
 * E ellipsis dims). Letters before and after "..." keep their places. */
static rlx_status *ein_parse(const char *s, size_t len, int rank, int E, int *lab, int *nlab) {
  int letters = 0, dots = 0;
  for (size_t i = 0; i < len; i++) {
    if (ein_letter(s[i])) letters++;
    else if (s[i] == '.' && i + 2 < len && s[i + 1] == '.' && s[i + 2] == '.') dots++, i += 2;
    else IMP_FAIL(INVALID_ARGUMENT, "bad einsum term '%.*s'", (int)len, s);
  }
  if (dots > 1) IMP_FAIL(INVALID_ARGUMENT, "einsum term '%.*s' has more than one ellipsis", (int)len, s);
  int e = rank < 0 ? E : rank - letters;
  if (e < 0 || (!dots && e > 0) || letters + (dots ? e : 0) > RLX_MAX_RANK)
    IMP_FAIL(INVALID_ARGUMENT, "einsum term '%.*s' does not fit an operand of rank %d", (int)len, s, rank);
  int k = 0;
  for (size_t i = 0; i < len; i++) {
    if (ein_letter(s[i])) {
      lab[k++] = (unsigned char)s[i];
    } else {
      for (int j = 0; j < e; j++) lab[k++] = 256 + E - e + j;
      i += 2;
    }
  }
  *nlab = k;
  return NULL;
}

static int ein_find(const int *lab, int n, int l) {
  for (int i = 0; i < n; i++)
    if (lab[i] == l) return i;
  return -1;
}

/* Sums out term dims whose label is not in keep[0..nk). */
static rlx_status *ein_sum_out(rlx_imp *I, const Onnx__NodeProto *n, ein_term *t, const int *keep, int nk) {
  int64_t axes[RLX_MAX_RANK];
  int na = 0, r = 0;
  for (int i = 0; i < t->rank; i++) {
    if (ein_find(keep, nk, t->lab[i]) < 0) axes[na++] = i;
    else t->lab[r++] = t->lab[i];
  }
  if (!na) return NULL;
  t->rank = r;
  return imp_reduce(I, n, "sum", t->v, (size_t)na, axes, false, &t->v);
}

/* Takes the diagonal of every label repeated within a term: multiply by an identity mask over
 * the two dims, sum the second one away. */
static rlx_status *ein_diagonal(rlx_imp *I, const Onnx__NodeProto *n, ein_term *t) {
  for (int q = 1; q < t->rank; q++) {
    int p = ein_find(t->lab, q, t->lab[q]);
    if (p < 0) continue;
    const rlx_type ty = *imp_type(I, t->v); /* a copy: adding nodes moves the graph's types */
    int64_t d = ty.dims[p];
    if (ty.dims[q] != d || d < 0) IMP_FAIL(INVALID_ARGUMENT, "einsum diagonal over dims of sizes %lld and %lld", (long long)d, (long long)ty.dims[q]);
    int64_t dd;
    RLX_TRY(imp_table_size("the einsum diagonal mask", 1, 2, (int64_t[]){d, d}, &dd));
    unsigned char *eye = calloc((size_t)(dd ? dd : 1), 1);
    if (!eye) return RLX_OOM();
    for (int64_t i = 0; i < d; i++) eye[i * d + i] = 1;
    rlx_value m;
    rlx_status *st = imp_host_const(I, RLX_DTYPE_BOOL, 2, (int64_t[]){d, d}, eye, &m);
    free(eye);
    RLX_TRY(st);
    int64_t md[RLX_MAX_RANK];
    for (int i = 0; i < t->rank; i++) md[i] = i == p || i == q ? d : 1;
    rlx_value z;
    RLX_TRY(imp_reshape(I, n, m, t->rank, md, &m));
    RLX_TRY(imp_scalar(I, 0, ty.dtype, &z));
    RLX_TRY(imp_select(I, n, m, t->v, z, &t->v));
    int64_t ax = q;
    RLX_TRY(imp_reduce(I, n, "sum", t->v, 1, &ax, false, &t->v));
    for (int i = q; i + 1 < t->rank; i++) t->lab[i] = t->lab[i + 1];
    t->rank--, q--;
  }
  return NULL;
}

/* Einsum: per-term diagonals and sums, then a left fold of DotGeneral contractions (labels shared
 * with later terms or the output are batch dims), then a transpose to the output order. */
/* Broadcasts the terms against each other: a size-1 dim of a label that another term has larger
 * expands to that size. INVALID_ARGUMENT when a label has two sizes other than 1. */
static rlx_status *ein_broadcast(rlx_imp *I, const Onnx__NodeProto *n, ein_term *t, size_t nt) {
  for (size_t i = 0; i < nt; i++) {
    const rlx_type *ty = imp_type(I, t[i].v);
    int64_t want[RLX_MAX_RANK];
    bool grow = false;
    for (int j = 0; j < t[i].rank; j++) {
      want[j] = ty->dims[j];
      for (size_t o = 0; o < nt; o++) {
        int p = ein_find(t[o].lab, t[o].rank, t[i].lab[j]);
        int64_t d = p < 0 ? 1 : imp_type(I, t[o].v)->dims[p];
        if (d != want[j] && want[j] != 1 && d != 1)
          IMP_FAIL(INVALID_ARGUMENT, "einsum label '%c' has sizes %lld and %lld", t[i].lab[j] < 256 ? t[i].lab[j] : '.', (long long)want[j],
                   (long long)d);
        if (want[j] == 1 && d != 1) want[j] = d, grow = true;
      }
    }
    if (grow) RLX_TRY(imp_expand(I, n, t[i].v, t[i].rank, want, &t[i].v));
  }
  return NULL;
}

/* r = a (x) b as one DotGeneral: labels both share are batch dims when a later term or the output
 * (later[0..nl)) needs them, else summed over; r's labels are the batch ones, then a's and b's
 * remaining ones in order. */
static rlx_status *ein_contract(rlx_imp *I, const Onnx__NodeProto *n, const ein_term *a, const ein_term *b, const int *later, int nl,
                                ein_term *out) {
  int64_t lb[RLX_MAX_RANK], rb[RLX_MAX_RANK], lc[RLX_MAX_RANK], rc[RLX_MAX_RANK];
  size_t nb = 0, nc = 0;
  ein_term r = {.rank = 0};
  bool used_a[RLX_MAX_RANK] = {0}, used_b[RLX_MAX_RANK] = {0};
  for (int j = 0; j < a->rank; j++) {
    int q = ein_find(b->lab, b->rank, a->lab[j]);
    if (q < 0) continue;
    used_a[j] = used_b[q] = true;
    if (ein_find(later, nl, a->lab[j]) >= 0) lb[nb] = j, rb[nb++] = q, r.lab[r.rank++] = a->lab[j];
    else lc[nc] = j, rc[nc++] = q;
  }
  for (int j = 0; j < a->rank; j++)
    if (!used_a[j]) r.lab[r.rank++] = a->lab[j];
  for (int j = 0; j < b->rank; j++) {
    if (used_b[j]) continue;
    if (r.rank == RLX_MAX_RANK) IMP_FAIL(UNIMPLEMENTED, "einsum intermediate rank above %d", RLX_MAX_RANK);
    r.lab[r.rank++] = b->lab[j];
  }
  rlx_attr at[4] = {RLX_ATTR_IS("lhs_contracting", nc, lc), RLX_ATTR_IS("rhs_contracting", nc, rc), RLX_ATTR_IS("lhs_batch", nb, lb),
                    RLX_ATTR_IS("rhs_batch", nb, rb)};
  RLX_TRY(imp_add(I, n, RLX_OP_DOT_GENERAL, 2, (rlx_value[]){a->v, b->v}, 4, at, &r.v));
  *out = r;
  return NULL;
}

rlx_status *rlx_onnx_map_einsum(rlx_imp *I, const Onnx__NodeProto *n) {
  char eq[256], raw[256];
  const char *eqs = imp_attr_s(n, "equation", "", raw, sizeof raw);
  size_t len = 0;
  for (const char *c = eqs; *c; c++)
    if (*c != ' ') eq[len++] = *c;
  eq[len] = '\0';
  size_t nt = imp_nin(n);
  if (!nt || nt > 16) IMP_FAIL(INVALID_ARGUMENT, "Einsum takes 1..16 inputs, got %zu", nt);
  const char *arrow = strstr(eq, "->");
  size_t lhs_len = arrow ? (size_t)(arrow - eq) : len;
  ein_term t[16];
  const char *starts[16];
  size_t lens[16], k = 0;
  starts[0] = eq;
  for (size_t i = 0; i <= lhs_len; i++) {
    if (i < lhs_len && eq[i] != ',') continue;
    if (k == nt) IMP_FAIL(INVALID_ARGUMENT, "equation '%s' has more terms than the %zu inputs", eq, nt);
    lens[k] = (size_t)(eq + i - starts[k]);
    if (++k < 16) starts[k] = eq + i + 1;
  }
  if (k != nt) IMP_FAIL(INVALID_ARGUMENT, "equation '%s' has %zu terms for %zu inputs", eq, k, nt);
  int E = 0;
  for (size_t i = 0; i < nt; i++) {
    RLX_TRY(imp_in(I, n, i, &t[i].v));
    const rlx_type *ty = imp_type(I, t[i].v);
    if (!rlx_type_is_static(ty)) IMP_FAIL(UNIMPLEMENTED, "Einsum needs static shapes, input %zu is %s", i, RLX_TYPE_STR(ty));
    int letters = 0;
    for (size_t j = 0; j < lens[i]; j++) letters += ein_letter(starts[i][j]);
    if (ty->rank - letters > E) E = ty->rank - letters;
  }
  for (size_t i = 0; i < nt; i++) {
    RLX_TRY(ein_parse(starts[i], lens[i], imp_type(I, t[i].v)->rank, E, t[i].lab, &t[i].rank));
    if (t[i].rank != imp_type(I, t[i].v)->rank) IMP_FAIL(INVALID_ARGUMENT, "term %zu of '%s' does not match input rank %d", i, eq, imp_type(I, t[i].v)->rank);
  }
  int out[RLX_MAX_RANK], no = 0;
  if (arrow) {
    RLX_TRY(ein_parse(arrow + 2, strlen(arrow + 2), -1, E, out, &no));
  } else { /* implicit: the ellipsis dims, then the letters used once, in alphabetical (ASCII) order */
    for (int j = 0; j < E; j++) out[no++] = 256 + j;
    for (int l = 'A'; l <= 'z'; l++) {
      int cnt = 0;
      for (size_t i = 0; i < nt; i++)
        for (int j = 0; j < t[i].rank; j++) cnt += t[i].lab[j] == l;
      if (cnt == 1) {
        if (no == RLX_MAX_RANK) IMP_FAIL(UNIMPLEMENTED, "einsum output rank above %d", RLX_MAX_RANK);
        out[no++] = l;
      }
    }
  }
  for (size_t i = 0; i < nt; i++) RLX_TRY(ein_diagonal(I, n, &t[i]));
  RLX_TRY(ein_broadcast(I, n, t, nt));
  /* labels needed after term i: the output's and those of later terms */
  for (size_t i = 0; i < nt; i++) {
    int keep[16 * RLX_MAX_RANK + RLX_MAX_RANK], nk = 0;
    for (int j = 0; j < no; j++) keep[nk++] = out[j];
    for (size_t o = 0; o < nt; o++)
      for (int j = 0; o != i && j < t[o].rank; j++) keep[nk++] = t[o].lab[j];
    RLX_TRY(ein_sum_out(I, n, &t[i], keep, nk));
  }
  ein_term acc = t[0];
  for (size_t i = 1; i < nt; i++) {
    int later[16 * RLX_MAX_RANK + RLX_MAX_RANK], nl = 0;
    for (int j = 0; j < no; j++) later[nl++] = out[j];
    for (size_t o = i + 1; o < nt; o++)
      for (int j = 0; j < t[o].rank; j++) later[nl++] = t[o].lab[j];
    RLX_TRY(ein_contract(I, n, &acc, &t[i], later, nl, &acc));
  }
  RLX_TRY(ein_sum_out(I, n, &acc, out, no));
  if (acc.rank != no) IMP_FAIL(INVALID_ARGUMENT, "the output of '%s' names a label no input has", eq);
  int64_t perm[RLX_MAX_RANK];
  bool identity = true;
  for (int j = 0; j < no; j++) {
    perm[j] = ein_find(acc.lab, acc.rank, out[j]);
    if (perm[j] < 0) IMP_FAIL(INVALID_ARGUMENT, "the output of '%s' names a label no input has", eq);
    identity &= perm[j] == j;
  }
  if (!identity) RLX_TRY(imp_transpose(I, n, acc.v, no, perm, &acc.v));
  return imp_out(I, n, 0, acc.v);
}
