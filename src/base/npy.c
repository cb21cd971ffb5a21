/* npy.c: NumPy .npy reading and writing (format 1.0/2.0/3.0).
 * Format reference: numpy.lib.format (NEP 1). */
#include "rlx/npy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

static const struct {
  const char *descr;
  rlx_dtype dtype;
} descrs[] = {
    {"<f4", RLX_DTYPE_F32}, {"<f2", RLX_DTYPE_F16}, {"<f8", RLX_DTYPE_F64}, {"|i1", RLX_DTYPE_I8},
    {"<i1", RLX_DTYPE_I8},  {"<i2", RLX_DTYPE_I16}, {"<i4", RLX_DTYPE_I32}, {"<i8", RLX_DTYPE_I64},
    {"|u1", RLX_DTYPE_U8},  {"<u1", RLX_DTYPE_U8},  {"<u2", RLX_DTYPE_U16}, {"<u4", RLX_DTYPE_U32},
    {"<u8", RLX_DTYPE_U64}, {"|b1", RLX_DTYPE_BOOL}, {"<c8", RLX_DTYPE_C64},
};

/* Finds the value text after 'key': in the header dict; NULL when absent. */
static const char *dict_value(const char *hdr, const char *key) {
  char pat[32];
  snprintf(pat, sizeof pat, "'%s'", key);
  const char *p = strstr(hdr, pat);
  if (!p) return NULL;
  p = strchr(p + strlen(pat), ':');
  if (!p) return NULL;
  p++;
  while (*p == ' ') p++;
  return p;
}

static rlx_status *parse_header(const char *hdr, const char *what, rlx_type *type, bool *fortran) {
  const char *d = dict_value(hdr, "descr");
  if (!d || *d != '\'') return RLX_ERR(DATA_LOSS, "%s: .npy header has no 'descr'", what);
  const char *e = strchr(d + 1, '\'');
  if (!e || e - d - 1 >= 16) return RLX_ERR(DATA_LOSS, "%s: malformed 'descr' in .npy header", what);
  char descr[16];
  memcpy(descr, d + 1, (size_t)(e - d - 1));
  descr[e - d - 1] = '\0';
  /* Single-byte types may be written with '=' or '<' too. */
  if (descr[0] == '=') descr[0] = '<';
  int found = -1;
  for (size_t i = 0; i < RLX_ARRAY_LEN(descrs); i++)
    if (strcmp(descrs[i].descr, descr) == 0) found = (int)i;
  if (found < 0) return RLX_ERR(UNIMPLEMENTED, "%s: unsupported .npy dtype '%s' (big-endian or unknown)", what, descr);
  const char *f = dict_value(hdr, "fortran_order");
  if (!f) return RLX_ERR(DATA_LOSS, "%s: .npy header has no 'fortran_order'", what);
  *fortran = strncmp(f, "True", 4) == 0;
  const char *s = dict_value(hdr, "shape");
  if (!s || *s != '(') return RLX_ERR(DATA_LOSS, "%s: .npy header has no 'shape' tuple", what);
  s++;
  int rank = 0;
  int64_t dims[RLX_MAX_RANK];
  for (;;) {
    while (*s == ' ' || *s == ',') s++;
    if (*s == ')') break;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || v < 0 || errno) return RLX_ERR(DATA_LOSS, "%s: malformed shape in .npy header", what);
    if (rank == RLX_MAX_RANK) return RLX_ERR(UNIMPLEMENTED, "%s: .npy rank above %d", what, RLX_MAX_RANK);
    dims[rank++] = v;
    s = end;
  }
  return rlx_type_make(descrs[found].dtype, rank, dims, type);
}

rlx_status *rlx_npy_parse(const void *bytes, size_t n, const char *what, rlx_tensor **out) {
  if (!what) what = ".npy data";
  if ((!bytes && n) || !out) return RLX_ERR(INVALID_ARGUMENT, "%s: rlx_npy_parse: NULL argument", what);
  const unsigned char *b = bytes;
  if (n < 10 || memcmp(b, "\x93NUMPY", 6) != 0) return RLX_ERR(DATA_LOSS, "%s: not a .npy file (bad magic)", what);
  unsigned major = b[6];
  size_t hlen, off;
  if (major == 1) {
    hlen = (size_t)b[8] | ((size_t)b[9] << 8);
    off = 10;
  } else if (major == 2 || major == 3) {
    if (n < 12) return RLX_ERR(DATA_LOSS, "%s: truncated .npy header", what);
    hlen = (size_t)b[8] | ((size_t)b[9] << 8) | ((size_t)b[10] << 16) | ((size_t)b[11] << 24);
    off = 12;
  } else {
    return RLX_ERR(UNIMPLEMENTED, "%s: .npy format version %u", what, major);
  }
  if (hlen > n - off) return RLX_ERR(DATA_LOSS, "%s: truncated .npy header", what);
  char *hdr = malloc(hlen + 1);
  if (!hdr) return RLX_OOM();
  memcpy(hdr, b + off, hlen);
  hdr[hlen] = '\0';
  rlx_type t;
  bool fortran = false;
  rlx_status *st = parse_header(hdr, what, &t, &fortran);
  free(hdr);
  if (st) return st;
  size_t need;
  RLX_TRY(rlx_type_nbytes(&t, &need));
  size_t have = n - off - hlen;
  if (have < need) return RLX_ERR(DATA_LOSS, "%s: .npy data truncated: %zu bytes, expected %zu", what, have, need);
  if (!fortran) return rlx_tensor_create(t.dtype, t.rank, t.dims, b + off + hlen, need, out);
  /* Fortran order: element (i0..in-1) sits at sum(i_k * prod(d_0..d_k-1)); reorder to C order. */
  rlx_tensor *x;
  RLX_TRY(rlx_tensor_create(t.dtype, t.rank, t.dims, NULL, 0, &x));
  size_t es = rlx_dtype_size(t.dtype), cnt = need / (es ? es : 1);
  const unsigned char *src = b + off + hlen;
  unsigned char *dst = rlx_tensor_data(x);
  int64_t idx[RLX_MAX_RANK] = {0};
  for (size_t c = 0; c < cnt; c++) { /* c walks C order; idx holds its multi-index */
    size_t f = 0, stride = 1;
    for (int k = 0; k < t.rank; k++) f += (size_t)idx[k] * stride, stride *= (size_t)t.dims[k];
    memcpy(dst + c * es, src + f * es, es);
    for (int k = t.rank - 1; k >= 0 && ++idx[k] == t.dims[k]; k--) idx[k] = 0;
  }
  *out = x;
  return NULL;
}

rlx_status *rlx_npy_load(const char *path, rlx_tensor **out) {
  if (!path || !out) return RLX_ERR(INVALID_ARGUMENT, "rlx_npy_load: NULL argument");
  unsigned char *buf;
  size_t len;
  RLX_TRY(rlx_read_file(path, &buf, &len));
  rlx_status *st = rlx_npy_parse(buf, len, path, out);
  free(buf);
  return st;
}

rlx_status *rlx_npy_save(const char *path, const rlx_tensor *t) {
  if (!path || !t) return RLX_ERR(INVALID_ARGUMENT, "rlx_npy_save: NULL argument");
  const rlx_type *ty = rlx_tensor_type(t);
  const char *descr = rlx_dtype_is_lowp(ty->dtype) ? "|u1" : "<u2"; /* their codes; bfloat16 bit patterns */
  for (size_t i = 0; i < RLX_ARRAY_LEN(descrs); i++)
    if (descrs[i].dtype == ty->dtype) { descr = descrs[i].descr; break; }
  char shape[RLX_MAX_RANK * 24 + 4];
  size_t o = 0;
  o += (size_t)snprintf(shape + o, sizeof shape - o, "(");
  for (int i = 0; i < ty->rank; i++)
    o += (size_t)snprintf(shape + o, sizeof shape - o, "%lld%s", (long long)ty->dims[i], ty->rank == 1 ? "," : (i + 1 < ty->rank ? ", " : ""));
  snprintf(shape + o, sizeof shape - o, ")");
  char hdr[512];
  int hl = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape);
  /* Pad with spaces so magic + len + header + '\n' is a multiple of 64. */
  size_t total = 10 + (size_t)hl + 1, pad = (64 - total % 64) % 64;
  memset(hdr + hl, ' ', pad);
  hdr[hl + pad] = '\n';
  size_t hlen = (size_t)hl + pad + 1;
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff), (unsigned char)(hlen >> 8)};
  FILE *f = fopen(path, "wb");
  if (!f) return RLX_ERR(UNAVAILABLE, "cannot create '%s': %s", path, strerror(errno));
  bool ok = fwrite(pre, 1, 10, f) == 10 && fwrite(hdr, 1, hlen, f) == hlen &&
            fwrite(rlx_tensor_cdata(t), 1, rlx_tensor_nbytes(t), f) == rlx_tensor_nbytes(t);
  ok = (fclose(f) == 0) && ok;
  return ok ? NULL : RLX_ERR(UNAVAILABLE, "error writing '%s': %s", path, strerror(errno));
}
