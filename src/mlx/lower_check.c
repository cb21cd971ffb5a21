/* lower_check.c: run-time checks (lower.h, rlx_l_checks): indices wrapped into range for MLX,
 * their extremes recorded and read back after the evaluation; solves' counts of singular systems
 * and Assert's conditions likewise. */
#include <stdlib.h>
#include <string.h>

#include "mlx/lower.h"

static bool site_same(const rlx_l_site *a, const rlx_l_site *b) {
  return a->n == b->n && a->input == b->input && a->axis == b->axis && a->kind == b->kind;
}

/* The index of site s, added when new; SIZE_MAX when out of memory. */
static size_t site_of(rlx_lower *L, const rlx_l_site *s) {
  rlx_l_checks *k = L->checks;
  for (size_t i = 0; i < k->n_sites; i++)
    if (site_same(&k->sites[i], s)) return i;
  if (!rlx_grow((void **)&k->sites, &k->cap_sites, k->n_sites + 1, sizeof *k->sites)) return SIZE_MAX;
  k->sites[k->n_sites] = *s;
  return k->n_sites++;
}

/* The message of a failed check, prefixed with the node label when `label`. */
static rlx_status *site_status(const rlx_l_site *s, int64_t index, int64_t size, bool label) {
  char buf[160] = "";
  if (label) {
    rlx_node_label(s->g, s->n, buf, sizeof buf - 2);
    strcat(buf, ": ");
  }
  if (s->kind == RLX_L_SITE_SINGULAR)
    return RLX_ERR(INVALID_ARGUMENT, "%ssingular matrix: an exactly zero pivot in the LU factorization of %lld of its systems", buf,
                   (long long)index);
  if (s->kind == RLX_L_SITE_ASSERT) return RLX_ERR(INVALID_ARGUMENT, "%sassertion failed: %s", buf, rlx_node_s(s->n, "message"));
  return RLX_ERR(OUT_OF_RANGE, "%sinput %u holds index %lld, outside [%lld, %lld) for data axis %d of size %lld", buf, s->input,
                 (long long)index, (long long)(s->negative ? -size : 0), (long long)size, s->axis, (long long)size);
}

/* The offending one of the extremes lo, hi of a check, or false when both are in range. */
static bool offending(const rlx_l_site *s, int64_t size, int64_t lo, int64_t hi, int64_t *out) {
  if (s->kind == RLX_L_SITE_ASSERT) return *out = lo, lo == 0; /* the least element of cond is false */
  if (lo < (s->negative ? -size : 0)) return *out = lo, true;
  if (hi >= size) return *out = hi, true;
  return false;
}

/* Whether a has at least one element. */
static bool nonempty(const rlx_mx_arr *a) {
  rlx_type t;
  bool any = rlx_mx_type(a, &t);
  for (int d = 0; any && d < t.rank; d++) any = t.dims[d] > 0;
  return any;
}

/* Records the check of site s: values i (int64, at least one element) in range of an axis of size
 * `size`; an Assert's needs only their least (hi is lo then, and the check vector holds lo alone). */
static void record(rlx_lower *L, rlx_l_site s, rlx_mx_arr *i, int64_t size) {
  rlx_mx *c = L->mx;
  if (L->site_n) s.g = L->site_g, s.n = L->site_n;
  rlx_mx_arr *lo = rlx_mx_reduce(c, i, 3, 0, NULL, false);
  rlx_mx_arr *hi = s.kind == RLX_L_SITE_ASSERT ? lo : rlx_mx_reduce(c, i, 2, 0, NULL, false);
  if (L->eager || !L->checks) { /* evaluated at once: the driver adds the node label */
    int64_t v[3] = {1};
    rlx_mx_arr *g = L->guard ? rlx_mx_astype(c, L->guard, RLX_DTYPE_I64) : rlx_mx_scalar(c, 1, RLX_DTYPE_I64);
    int64_t idx;
    if (rlx_mx_to_host(c, rlx_mx_stack(c, (rlx_mx_arr *[]){g, lo, hi}, 3, 0), v, sizeof v) && v[0] && offending(&s, size, v[1], v[2], &idx))
      rlx_mx_fail(c, site_status(&s, idx, size, false));
    return;
  }
  rlx_l_checks *k = L->checks;
  size_t site = site_of(L, &s);
  if (site == SIZE_MAX || !rlx_grow((void **)&k->cur.checks, &k->cap_cur, k->cur.n + 1, sizeof *k->cur.checks) ||
      !rlx_grow((void **)&k->vals, &k->cap_vals, k->n_vals + 3, sizeof *k->vals)) {
    rlx_mx_fail(c, RLX_OOM());
    return;
  }
  k->cur.checks[k->cur.n++] = (rlx_l_check){.site = site, .size = size, .guarded = L->guard != NULL};
  if (L->guard) k->vals[k->n_vals++] = rlx_mx_astype(c, L->guard, RLX_DTYPE_I64);
  k->vals[k->n_vals++] = lo;
  if (s.kind != RLX_L_SITE_ASSERT) k->vals[k->n_vals++] = hi;
}

/* Whether idx is the value of n's input `input`, made by a Constant node whose elements all lie in
 * [0, dim): then neither a check nor a wrap is needed at run time. */
static bool constant_in_range(const rlx_lower *L, const rlx_node *n, uint32_t input, const rlx_mx_arr *idx, int64_t dim) {
  if (dim <= 0 || !L->vals || input >= n->n_in || L->vals[n->in[input]] != idx) return false;
  rlx_dtype dt = rlx_in_type(L, n, input)->dtype;
  int64_t numel = 0;
  const void *data = rlx_dtype_is_int(dt) ? rlx_l_constant(L, n, input, &numel) : NULL;
  if (!data) return false;
  for (int64_t e = 0; e < numel; e++) {
    int64_t v = rlx_int_at(data, dt, e);
    if (v < 0 || v >= dim) return false;
  }
  return true;
}

rlx_mx_arr *rlx_l_index(rlx_lower *L, const rlx_node *n, uint32_t input, rlx_mx_arr *idx, rlx_dtype dt, int64_t dim, int axis) {
  rlx_mx *c = L->mx;
  if (constant_in_range(L, n, input, idx, dim)) return idx;
  bool negative = rlx_dtype_is_signed(dt);
  const int memo_cap = (int)(sizeof L->index_memo / sizeof *L->index_memo);
  for (int k = 0; k < L->n_index_memo; k++) /* checked and wrapped already (its first node's site names a failure) */
    if (L->index_memo[k].idx == idx && L->index_memo[k].dim == dim && L->index_memo[k].negative == negative &&
        L->index_memo[k].guard == L->guard)
      return L->index_memo[k].wrapped;
  rlx_mx_arr *i = rlx_mx_astype(c, idx, RLX_DTYPE_I64);
  /* uint64 indices above INT64_MAX read as negative: out of range either way */
  if (nonempty(i) && !(L->unchecked_indices && dim > 0))
    record(L, (rlx_l_site){.g = L->g, .n = n, .input = input, .axis = axis, .negative = negative}, i, dim);
  /* in range: a negative index plus dim; out of range: somewhere in range (the check fails) */
  rlx_mx_arr *wrapped = dim > 0 ? rlx_mx_binary(c, RLX_MXB_REMAINDER, i, rlx_mx_scalar(c, (double)dim, RLX_DTYPE_I64)) : NULL;
  if (L->n_index_memo < memo_cap && !L->eager)
    L->index_memo[L->n_index_memo++] = (rlx_l_index_memo){.idx = idx, .guard = L->guard, .wrapped = wrapped, .dim = dim, .negative = negative};
  return wrapped;
}

void rlx_l_nonsingular(rlx_lower *L, const rlx_node *n, rlx_mx_arr *count) {
  record(L, (rlx_l_site){.g = L->g, .n = n, .axis = -1, .kind = RLX_L_SITE_SINGULAR}, count, 1);
}

void rlx_l_assert(rlx_lower *L, const rlx_node *n, rlx_mx_arr *cond) {
  if (nonempty(cond)) record(L, (rlx_l_site){.g = L->g, .n = n, .axis = -1, .kind = RLX_L_SITE_ASSERT}, rlx_mx_astype(L->mx, cond, RLX_DTYPE_I64), 1);
}

/* ---- collecting and reading ---- */

void rlx_l_checks_begin(rlx_l_checks *k) { k->cur.n = 0, k->n_vals = 0; }

static bool record_same(const rlx_l_record *a, const rlx_l_record *b) {
  if (a->n != b->n) return false;
  for (size_t i = 0; i < a->n; i++)
    if (a->checks[i].site != b->checks[i].site || a->checks[i].size != b->checks[i].size || a->checks[i].guarded != b->checks[i].guarded)
      return false;
  return true;
}

/* The id of a record equal to k->cur, added when new; SIZE_MAX when out of memory. */
static size_t record_id(rlx_l_checks *k) {
  for (size_t r = 0; r < k->n_records; r++)
    if (record_same(&k->records[r], &k->cur)) return r;
  rlx_l_record copy = {.checks = malloc(sizeof(rlx_l_check) * (k->cur.n ? k->cur.n : 1)), .n = k->cur.n};
  if (!copy.checks || !rlx_grow((void **)&k->records, &k->cap_records, k->n_records + 1, sizeof *k->records)) {
    free(copy.checks);
    return SIZE_MAX;
  }
  if (k->cur.n) memcpy(copy.checks, k->cur.checks, sizeof(rlx_l_check) * k->cur.n); /* checks is NULL when none */
  k->records[k->n_records] = copy;
  return k->n_records++;
}

rlx_mx_arr *rlx_l_checks_end(rlx_l_checks *k, rlx_mx *c, bool always) {
  if (!k->cur.n && !always) return NULL;
  if (always) k->traced |= k->cur.n > 0; /* a trace of the compiled function */
  size_t id = record_id(k);
  if (id == SIZE_MAX || !rlx_grow((void **)&k->vals, &k->cap_vals, k->n_vals + 1, sizeof *k->vals)) {
    rlx_mx_fail(c, RLX_OOM());
    return NULL;
  }
  memmove(k->vals + 1, k->vals, sizeof *k->vals * k->n_vals);
  k->vals[0] = rlx_mx_scalar(c, (double)id, RLX_DTYPE_I64);
  rlx_mx_arr *v = rlx_mx_stack(c, k->vals, k->n_vals + 1, 0);
  k->n_vals = 0;
  return v;
}

rlx_status *rlx_l_checks_read(const rlx_l_checks *k, rlx_mx *c, rlx_mx_arr *vector) {
  rlx_type t;
  if (!vector) return NULL;
  if (!rlx_mx_type(vector, &t) || t.rank != 1 || t.dims[0] < 1) return RLX_ERR(INTERNAL, "index check vector has no usable type");
  int64_t *v = malloc(sizeof(int64_t) * (size_t)t.dims[0]);
  if (!v) return RLX_OOM();
  rlx_status *st = rlx_mx_to_host(c, vector, v, sizeof(int64_t) * (size_t)t.dims[0]) ? NULL : rlx_mx_take_error(c);
  const rlx_l_record *r = !st && v[0] >= 0 && (uint64_t)v[0] < k->n_records ? &k->records[v[0]] : NULL;
  if (!st && !r) st = RLX_ERR(INTERNAL, "index check vector names record %lld of %zu", (long long)v[0], k->n_records);
  for (size_t i = 0, at = 1; !st && i < r->n; i++) {
    const rlx_l_check *ch = &r->checks[i];
    size_t vals = k->sites[ch->site].kind == RLX_L_SITE_ASSERT ? 1 : 2; /* lo (and hi) */
    size_t need = at + ch->guarded + vals;
    if (need > (size_t)t.dims[0]) {
      st = RLX_ERR(INTERNAL, "index check vector is shorter than its record");
      break;
    }
    bool counts = !ch->guarded || v[at];
    int64_t lo = v[need - vals], hi = v[need - 1], idx;
    at = need;
    if (counts && offending(&k->sites[ch->site], ch->size, lo, hi, &idx)) st = site_status(&k->sites[ch->site], idx, ch->size, true);
  }
  free(v);
  return st;
}

void rlx_l_checks_free(rlx_l_checks *k) {
  for (size_t r = 0; r < k->n_records; r++) free(k->records[r].checks);
  free(k->records);
  free(k->sites);
  free(k->cur.checks);
  free(k->vals);
  *k = (rlx_l_checks){0};
}
