/* gguf.c: the GGUF reader (rlx/gguf.h). Every read goes through a bounds-checked cursor over the
 * mapped bytes; counts are checked against the bytes left before anything is allocated for them. */
#include "rlx/gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/strmap.h"
#include "base/util.h"

#define GGUF_MAGIC 0x46554747u /* "GGUF" */
#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_DIMS 4

typedef struct gguf_str {
  char *s; /* NUL-terminated copy */
  size_t len;
} gguf_str;

typedef struct gguf_kv {
  char *key;
  rlx_gguf_type type, elem; /* elem: the element type of an array (type otherwise) */
  uint64_t count;           /* 1 for scalars */
  const unsigned char *raw; /* numeric elements, little-endian, in the mapping */
  gguf_str *strs;           /* string elements (count of them) */
} gguf_kv;

struct rlx_gguf {
  const unsigned char *base;
  size_t size;
  bool mapped;
  uint32_t version;
  uint64_t alignment, data_off;
  gguf_kv *kv;
  size_t n_kv;
  rlx_gguf_tensor *t;
  size_t n_t;
  rlx_strmap by_name;
};

/* ---- type tables ---- */

static const char *const value_type_names[] = {"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
                                               "bool", "string", "array", "uint64", "int64", "float64"};
static const uint8_t value_type_size[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

const char *rlx_gguf_type_name(rlx_gguf_type t) {
  return (unsigned)t < sizeof value_type_names / sizeof *value_type_names ? value_type_names[t] : "invalid";
}

typedef struct ggml_info {
  uint32_t type;
  const char *name;
  int64_t block, bytes;
} ggml_info;

/* ggml.c's type_traits: blck_size and type_size (ggml-common.h block layouts). */
static const ggml_info ggml_types[] = {
    {RLX_GGML_F32, "f32", 1, 4},         {RLX_GGML_F16, "f16", 1, 2},         {RLX_GGML_Q4_0, "q4_0", 32, 18},
    {RLX_GGML_Q4_1, "q4_1", 32, 20},     {RLX_GGML_Q5_0, "q5_0", 32, 22},     {RLX_GGML_Q5_1, "q5_1", 32, 24},
    {RLX_GGML_Q8_0, "q8_0", 32, 34},     {RLX_GGML_Q8_1, "q8_1", 32, 36},     {RLX_GGML_Q2_K, "q2_K", 256, 84},
    {RLX_GGML_Q3_K, "q3_K", 256, 110},   {RLX_GGML_Q4_K, "q4_K", 256, 144},   {RLX_GGML_Q5_K, "q5_K", 256, 176},
    {RLX_GGML_Q6_K, "q6_K", 256, 210},   {RLX_GGML_Q8_K, "q8_K", 256, 292},   {RLX_GGML_IQ2_XXS, "iq2_xxs", 256, 66},
    {RLX_GGML_IQ2_XS, "iq2_xs", 256, 74}, {RLX_GGML_IQ3_XXS, "iq3_xxs", 256, 98}, {RLX_GGML_IQ1_S, "iq1_s", 256, 50},
    {RLX_GGML_IQ4_NL, "iq4_nl", 32, 18}, {RLX_GGML_IQ3_S, "iq3_s", 256, 110}, {RLX_GGML_IQ2_S, "iq2_s", 256, 82},
    {RLX_GGML_IQ4_XS, "iq4_xs", 256, 136}, {RLX_GGML_I8, "i8", 1, 1},       {RLX_GGML_I16, "i16", 1, 2},
    {RLX_GGML_I32, "i32", 1, 4},         {RLX_GGML_I64, "i64", 1, 8},         {RLX_GGML_F64, "f64", 1, 8},
    {RLX_GGML_IQ1_M, "iq1_m", 256, 56},  {RLX_GGML_BF16, "bf16", 1, 2},       {RLX_GGML_TQ1_0, "tq1_0", 256, 54},
    {RLX_GGML_TQ2_0, "tq2_0", 256, 66},  {RLX_GGML_MXFP4, "mxfp4", 32, 17},   {RLX_GGML_NVFP4, "nvfp4", 64, 36},
};

bool rlx_ggml_type_info(uint32_t type, const char **out_name, int64_t *out_block, int64_t *out_block_bytes) {
  for (size_t i = 0; i < sizeof ggml_types / sizeof *ggml_types; i++)
    if (ggml_types[i].type == type) {
      if (out_name) *out_name = ggml_types[i].name;
      if (out_block) *out_block = ggml_types[i].block;
      if (out_block_bytes) *out_block_bytes = ggml_types[i].bytes;
      return true;
    }
  return false;
}

/* ---- the cursor ---- */

typedef struct cursor {
  const unsigned char *p;
  size_t size, at;
} cursor;

static rlx_status *need(const cursor *c, uint64_t n, const char *what) {
  if (n > c->size - c->at)
    return RLX_ERR(DATA_LOSS, "%s at byte %zu needs %" PRIu64 " bytes, but the file has %zu left (truncated or corrupt)", what, c->at, n,
                   c->size - c->at);
  return NULL;
}

static uint64_t le(const unsigned char *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

static rlx_status *read_u(cursor *c, int n, const char *what, uint64_t *out) {
  RLX_TRY(need(c, (uint64_t)n, what));
  *out = le(c->p + c->at, n);
  c->at += (size_t)n;
  return NULL;
}

/* A GGUF string, copied NUL-terminated. */
static rlx_status *read_str(cursor *c, const char *what, gguf_str *out) {
  uint64_t len;
  RLX_TRY(read_u(c, 8, what, &len));
  RLX_TRY(need(c, len, what));
  char *s = malloc((size_t)len + 1);
  if (!s) return RLX_OOM();
  memcpy(s, c->p + c->at, (size_t)len);
  s[len] = 0;
  c->at += (size_t)len;
  *out = (gguf_str){.s = s, .len = (size_t)len};
  return NULL;
}

/* ---- parsing ---- */

static void free_kv(gguf_kv *kv) {
  free(kv->key);
  for (uint64_t j = 0; kv->strs && j < kv->count; j++) free(kv->strs[j].s);
  free(kv->strs);
}

/* The value of pair kv (type already read into kv->type). */
static rlx_status *read_value(cursor *c, gguf_kv *kv) {
  kv->count = 1;
  kv->elem = kv->type;
  if (kv->type == RLX_GGUF_ARRAY) {
    uint64_t et, n;
    RLX_TRY(read_u(c, 4, "array element type", &et));
    RLX_TRY(read_u(c, 8, "array length", &n));
    if (et == RLX_GGUF_ARRAY) return RLX_ERR(UNIMPLEMENTED, "an array of arrays");
    if (et > RLX_GGUF_FLOAT64) return RLX_ERR(DATA_LOSS, "array element type %" PRIu64 " is not a GGUF value type", et);
    kv->elem = (rlx_gguf_type)et;
    kv->count = n;
  }
  if (kv->elem != RLX_GGUF_STRING) {
    uint64_t es = value_type_size[kv->elem];
    if (kv->count > (c->size - c->at) / es)
      return RLX_ERR(DATA_LOSS, "%" PRIu64 " %s values at byte %zu do not fit in the %zu bytes left", kv->count, rlx_gguf_type_name(kv->elem),
                     c->at, c->size - c->at);
    kv->raw = c->p + c->at;
    c->at += (size_t)(kv->count * es);
    return NULL;
  }
  if (kv->count > (c->size - c->at) / 8) /* each string takes at least its 8-byte length */
    return RLX_ERR(DATA_LOSS, "%" PRIu64 " strings at byte %zu do not fit in the %zu bytes left", kv->count, c->at, c->size - c->at);
  kv->strs = calloc(kv->count ? (size_t)kv->count : 1, sizeof *kv->strs);
  if (!kv->strs) return RLX_OOM();
  for (uint64_t j = 0; j < kv->count; j++) RLX_TRY(read_str(c, "string value", &kv->strs[j]));
  return NULL;
}

static rlx_status *read_kvs(rlx_gguf *f, cursor *c, uint64_t n) {
  if (n > (c->size - c->at) / 12) /* a key length (8) and a type (4) at least */
    return RLX_ERR(DATA_LOSS, "%" PRIu64 " metadata pairs do not fit in the %zu bytes after the header", n, c->size - c->at);
  f->kv = calloc(n ? (size_t)n : 1, sizeof *f->kv);
  if (!f->kv) return RLX_OOM();
  for (uint64_t i = 0; i < n; i++) {
    gguf_kv *kv = &f->kv[f->n_kv++];
    gguf_str key;
    RLX_TRY(rlx_status_annotate(read_str(c, "metadata key", &key), "metadata pair %" PRIu64, i));
    kv->key = key.s;
    uint64_t type = 0;
    rlx_status *st = read_u(c, 4, "value type", &type);
    if (!st && type > RLX_GGUF_FLOAT64) st = RLX_ERR(DATA_LOSS, "value type %" PRIu64 " is not a GGUF value type", type);
    kv->type = (rlx_gguf_type)type;
    if (!st) st = read_value(c, kv);
    if (!st) {
      for (size_t k = 0; k + 1 < f->n_kv && !st; k++)
        if (!strcmp(f->kv[k].key, kv->key)) st = RLX_ERR(DATA_LOSS, "the key appears twice");
    }
    RLX_TRY(rlx_status_annotate(st, "metadata '%s'", kv->key));
  }
  return NULL;
}

/* general.alignment: a uint32 power of two (default 32). */
static rlx_status *alignment_of(const rlx_gguf *f, uint64_t *out) {
  *out = GGUF_DEFAULT_ALIGNMENT;
  for (size_t i = 0; i < f->n_kv; i++) {
    const gguf_kv *kv = &f->kv[i];
    if (strcmp(kv->key, "general.alignment")) continue;
    if (kv->type != RLX_GGUF_UINT32) return RLX_ERR(DATA_LOSS, "general.alignment is a %s, expected uint32", rlx_gguf_type_name(kv->type));
    uint64_t a = le(kv->raw, 4);
    if (a == 0 || (a & (a - 1)) || a > (1u << 20))
      return RLX_ERR(DATA_LOSS, "general.alignment is %" PRIu64 ", expected a power of two up to 2^20", a);
    *out = a;
  }
  return NULL;
}

static rlx_status *read_tensor_info(cursor *c, rlx_gguf_tensor *t, char **name_out) {
  gguf_str name;
  RLX_TRY(read_str(c, "tensor name", &name));
  *name_out = name.s;
  t->name = name.s;
  uint64_t nd, ty;
  RLX_TRY(read_u(c, 4, "dimension count", &nd));
  if (nd < 1 || nd > GGUF_MAX_DIMS) return RLX_ERR(DATA_LOSS, "%" PRIu64 " dimensions; expected 1 to %d", nd, GGUF_MAX_DIMS);
  t->n_dims = (int32_t)nd;
  for (int d = 0; d < GGUF_MAX_DIMS; d++) t->dims[d] = 1;
  for (uint64_t d = 0; d < nd; d++) {
    uint64_t v;
    RLX_TRY(read_u(c, 8, "dimension", &v));
    if (v == 0 || v > INT32_MAX)
      return RLX_ERR(DATA_LOSS, "dimension %" PRIu64 " is %" PRIu64 "; expected 1 to 2^31-1", d, v);
    t->dims[d] = (int64_t)v;
  }
  RLX_TRY(read_u(c, 4, "ggml type", &ty));
  t->type = (uint32_t)ty;
  return read_u(c, 8, "data offset", &t->offset);
}

/* Checks tensor t's type, size and place in the data section of data_size bytes. */
static rlx_status *place_tensor(const rlx_gguf *f, rlx_gguf_tensor *t, uint64_t data_size) {
  const char *tn;
  int64_t blk, bb;
  if (!rlx_ggml_type_info(t->type, &tn, &blk, &bb)) return RLX_ERR(UNIMPLEMENTED, "ggml type %u is not one rlx knows", t->type);
  if (t->dims[0] % blk) return RLX_ERR(DATA_LOSS, "dims[0] = %lld is not a multiple of %s's block of %lld", (long long)t->dims[0], tn, (long long)blk);
  uint64_t n = (uint64_t)(t->dims[0] / blk) * (uint64_t)bb; /* < 2^31 * 292 */
  for (int d = 1; d < GGUF_MAX_DIMS; d++) {
    if (n > UINT64_MAX / (uint64_t)t->dims[d]) return RLX_ERR(DATA_LOSS, "its size overflows 64 bits");
    n *= (uint64_t)t->dims[d];
  }
  if (t->offset % f->alignment) return RLX_ERR(DATA_LOSS, "offset %" PRIu64 " is not a multiple of the alignment %" PRIu64, t->offset, f->alignment);
  if (t->offset > data_size || n > data_size - t->offset)
    return RLX_ERR(DATA_LOSS, "its %" PRIu64 " bytes at offset %" PRIu64 " run past the data section's %" PRIu64 " bytes (truncated file?)", n,
                   t->offset, data_size);
  t->nbytes = (size_t)n;
  t->data = f->base + f->data_off + t->offset;
  return NULL;
}

static rlx_status *parse(rlx_gguf *f) {
  cursor c = {.p = f->base, .size = f->size};
  uint64_t magic, version, n_t, n_kv;
  RLX_TRY(read_u(&c, 4, "magic", &magic));
  if (magic != GGUF_MAGIC) return RLX_ERR(DATA_LOSS, "not a GGUF file (magic 0x%08" PRIx64 ", expected \"GGUF\")", magic);
  RLX_TRY(read_u(&c, 4, "version", &version));
  if (version < 2 || version > 3) return RLX_ERR(DATA_LOSS, "GGUF version %" PRIu64 "; rlx reads versions 2 and 3", version);
  f->version = (uint32_t)version;
  RLX_TRY(read_u(&c, 8, "tensor count", &n_t));
  RLX_TRY(read_u(&c, 8, "metadata count", &n_kv));
  RLX_TRY(read_kvs(f, &c, n_kv));
  RLX_TRY(alignment_of(f, &f->alignment));
  if (n_t > (c.size - c.at) / 24) /* name length, dim count, one dim, type, offset at least */
    return RLX_ERR(DATA_LOSS, "%" PRIu64 " tensor infos do not fit in the %zu bytes left", n_t, c.size - c.at);
  f->t = calloc(n_t ? (size_t)n_t : 1, sizeof *f->t);
  if (!f->t) return RLX_OOM();
  for (uint64_t i = 0; i < n_t; i++) {
    char *name = NULL;
    rlx_status *st = read_tensor_info(&c, &f->t[i], &name);
    if (name) f->n_t++; /* owns the name from here */
    if (!st && rlx_strmap_get(&f->by_name, name)) st = RLX_ERR(DATA_LOSS, "the name appears twice");
    if (!st && !rlx_strmap_put(&f->by_name, name, (void *)(uintptr_t)(i + 1))) st = RLX_OOM();
    RLX_TRY(rlx_status_annotate(st, "tensor %" PRIu64 " ('%s')", i, name ? name : "?"));
  }
  uint64_t off = c.at, pad = (f->alignment - off % f->alignment) % f->alignment;
  f->data_off = off + pad > f->size ? f->size : off + pad;
  uint64_t data_size = f->size - f->data_off;
  for (size_t i = 0; i < f->n_t; i++)
    RLX_TRY(rlx_status_annotate(place_tensor(f, &f->t[i], data_size), "tensor '%s'", f->t[i].name));
  return NULL;
}

static rlx_status *open_mem(const void *bytes, size_t size, bool mapped, rlx_gguf **out) {
  rlx_gguf *f = calloc(1, sizeof *f);
  if (!f) return RLX_OOM();
  f->base = bytes;
  f->size = size;
  f->mapped = mapped;
  rlx_status *st = parse(f);
  if (st) {
    f->mapped = false; /* the caller unmaps */
    rlx_gguf_close(f);
    return st;
  }
  *out = f;
  return NULL;
}

rlx_status *rlx_gguf_open_bytes(const void *bytes, size_t nbytes, rlx_gguf **out) {
  if (!bytes || !out) return RLX_ERR(INVALID_ARGUMENT, "rlx_gguf_open_bytes: NULL argument");
  return open_mem(bytes, nbytes, false, out);
}

rlx_status *rlx_gguf_open(const char *path, rlx_gguf **out) {
  if (!path || !out) return RLX_ERR(INVALID_ARGUMENT, "rlx_gguf_open: NULL argument");
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return rlx_status_make(errno == ENOENT ? RLX_STATUS_NOT_FOUND : RLX_STATUS_UNAVAILABLE, "%s: %s", path, strerror(errno));
  struct stat sb;
  if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
    close(fd);
    return RLX_ERR(INVALID_ARGUMENT, "%s: not a regular file", path);
  }
  size_t size = (size_t)sb.st_size;
  void *p = size ? mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
  close(fd);
  if (size && p == MAP_FAILED) return RLX_ERR(RESOURCE_EXHAUSTED, "%s: mmap of %zu bytes failed: %s", path, size, strerror(errno));
  static const unsigned char empty[1];
  rlx_status *st = open_mem(size ? p : empty, size, size != 0, out);
  if (st && size) munmap(p, size);
  return rlx_status_annotate(st, "%s", path);
}

void rlx_gguf_close(rlx_gguf *f) {
  if (!f) return;
  for (size_t i = 0; i < f->n_kv; i++) free_kv(&f->kv[i]);
  free(f->kv);
  for (size_t i = 0; i < f->n_t; i++) free((char *)f->t[i].name);
  free(f->t);
  rlx_strmap_clear(&f->by_name);
  if (f->mapped) munmap((void *)f->base, f->size);
  free(f);
}

uint32_t rlx_gguf_version(const rlx_gguf *f) { return f->version; }
uint64_t rlx_gguf_alignment(const rlx_gguf *f) { return f->alignment; }
uint64_t rlx_gguf_data_offset(const rlx_gguf *f) { return f->data_off; }

/* ---- metadata access ---- */

size_t rlx_gguf_num_kv(const rlx_gguf *f) { return f->n_kv; }
const char *rlx_gguf_kv_key(const rlx_gguf *f, size_t i) { return i < f->n_kv ? f->kv[i].key : NULL; }

rlx_status *rlx_gguf_find_kv(const rlx_gguf *f, const char *key, size_t *out) {
  if (!f || !key || !out) return RLX_ERR(INVALID_ARGUMENT, "rlx_gguf_find_kv: NULL argument");
  for (size_t i = 0; i < f->n_kv; i++)
    if (!strcmp(f->kv[i].key, key)) return *out = i, NULL;
  return RLX_ERR(NOT_FOUND, "no metadata key '%s'", key);
}

rlx_status *rlx_gguf_kv_type(const rlx_gguf *f, size_t i, rlx_gguf_type *out, rlx_gguf_type *out_elem, uint64_t *out_count) {
  if (!f || i >= f->n_kv) return RLX_ERR(OUT_OF_RANGE, "metadata pair %zu of %zu", i, f ? f->n_kv : 0);
  if (out) *out = f->kv[i].type;
  if (out_elem) *out_elem = f->kv[i].elem;
  if (out_count) *out_count = f->kv[i].count;
  return NULL;
}

/* Element j of pair i, checked. */
static rlx_status *element(const rlx_gguf *f, size_t i, uint64_t j, const gguf_kv **kv) {
  if (!f || i >= f->n_kv) return RLX_ERR(OUT_OF_RANGE, "metadata pair %zu of %zu", i, f ? f->n_kv : 0);
  if (j >= f->kv[i].count) return RLX_ERR(OUT_OF_RANGE, "metadata '%s': element %" PRIu64 " of %" PRIu64, f->kv[i].key, j, f->kv[i].count);
  *kv = &f->kv[i];
  return NULL;
}

rlx_status *rlx_gguf_kv_int(const rlx_gguf *f, size_t i, uint64_t j, int64_t *out) {
  const gguf_kv *kv = NULL;
  RLX_TRY(element(f, i, j, &kv));
  int sz = value_type_size[kv->elem];
  bool is_int = kv->elem <= RLX_GGUF_INT32 || kv->elem == RLX_GGUF_BOOL || kv->elem == RLX_GGUF_UINT64 || kv->elem == RLX_GGUF_INT64;
  if (kv->elem == RLX_GGUF_FLOAT32 || !is_int)
    return RLX_ERR(INVALID_ARGUMENT, "metadata '%s' is %s, not an integer", kv->key, rlx_gguf_type_name(kv->elem));
  uint64_t u = le(kv->raw + j * (uint64_t)sz, sz);
  bool is_signed = kv->elem == RLX_GGUF_INT8 || kv->elem == RLX_GGUF_INT16 || kv->elem == RLX_GGUF_INT32 || kv->elem == RLX_GGUF_INT64;
  if (is_signed && sz < 8 && (u >> (8 * sz - 1)) & 1) u |= ~(uint64_t)0 << (8 * sz); /* sign-extend */
  if (!is_signed && u > INT64_MAX) return RLX_ERR(OUT_OF_RANGE, "metadata '%s' is %" PRIu64 ", above INT64_MAX", kv->key, u);
  int64_t v;
  memcpy(&v, &u, sizeof v);
  *out = v;
  return NULL;
}

rlx_status *rlx_gguf_kv_float(const rlx_gguf *f, size_t i, uint64_t j, double *out) {
  const gguf_kv *kv = NULL;
  RLX_TRY(element(f, i, j, &kv));
  if (kv->elem == RLX_GGUF_FLOAT32 || kv->elem == RLX_GGUF_FLOAT64) {
    uint64_t u = le(kv->raw + j * value_type_size[kv->elem], value_type_size[kv->elem]);
    if (kv->elem == RLX_GGUF_FLOAT32) {
      uint32_t w = (uint32_t)u;
      float x;
      memcpy(&x, &w, sizeof x);
      *out = x;
    } else {
      double x;
      memcpy(&x, &u, sizeof x);
      *out = x;
    }
    return NULL;
  }
  int64_t v;
  rlx_status *st = rlx_gguf_kv_int(f, i, j, &v);
  if (st && rlx_status_code_of(st) == RLX_STATUS_INVALID_ARGUMENT) {
    rlx_status_free(st);
    return RLX_ERR(INVALID_ARGUMENT, "metadata '%s' is %s, not a number", kv->key, rlx_gguf_type_name(kv->elem));
  }
  if (!st) *out = (double)v;
  return st;
}

rlx_status *rlx_gguf_kv_string(const rlx_gguf *f, size_t i, uint64_t j, const char **out, size_t *out_len) {
  const gguf_kv *kv = NULL;
  RLX_TRY(element(f, i, j, &kv));
  if (kv->elem != RLX_GGUF_STRING)
    return RLX_ERR(INVALID_ARGUMENT, "metadata '%s' is %s, not a string", kv->key, rlx_gguf_type_name(kv->elem));
  *out = kv->strs[j].s;
  if (out_len) *out_len = kv->strs[j].len;
  return NULL;
}

/* ---- tensors ---- */

size_t rlx_gguf_num_tensors(const rlx_gguf *f) { return f->n_t; }

rlx_status *rlx_gguf_tensor_info(const rlx_gguf *f, size_t i, rlx_gguf_tensor *out) {
  if (!f || !out) return RLX_ERR(INVALID_ARGUMENT, "rlx_gguf_tensor_info: NULL argument");
  if (i >= f->n_t) return RLX_ERR(OUT_OF_RANGE, "tensor %zu of %zu", i, f->n_t);
  *out = f->t[i];
  return NULL;
}

rlx_status *rlx_gguf_find_tensor(const rlx_gguf *f, const char *name, size_t *out) {
  if (!f || !name || !out) return RLX_ERR(INVALID_ARGUMENT, "rlx_gguf_find_tensor: NULL argument");
  uintptr_t k = (uintptr_t)rlx_strmap_get(&f->by_name, name);
  if (!k) return RLX_ERR(NOT_FOUND, "no tensor named '%s'", name);
  *out = (size_t)(k - 1);
  return NULL;
}

/* ---- describe ---- */

static void print_element(const rlx_gguf *f, size_t i, uint64_t j, FILE *out) {
  const gguf_kv *kv = &f->kv[i];
  int64_t v;
  double d;
  const char *s;
  rlx_status *st = NULL;
  if (kv->elem == RLX_GGUF_STRING) {
    st = rlx_gguf_kv_string(f, i, j, &s, NULL);
    if (!st) {
      fputc('"', out);
      for (const char *p = s; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(out, "\\%c", *p);
        else if ((unsigned char)*p < 0x20) fprintf(out, "\\x%02x", (unsigned char)*p);
        else fputc(*p, out);
      }
      fputc('"', out);
    }
  } else if (kv->elem == RLX_GGUF_FLOAT32 || kv->elem == RLX_GGUF_FLOAT64) {
    if (!(st = rlx_gguf_kv_float(f, i, j, &d))) fprintf(out, "%.9g", d);
  } else if (kv->elem == RLX_GGUF_UINT64) {
    fprintf(out, "%" PRIu64, le(kv->raw + j * 8, 8));
  } else if (kv->elem == RLX_GGUF_BOOL) {
    if (!(st = rlx_gguf_kv_int(f, i, j, &v))) fputs(v ? "true" : "false", out);
  } else if (!(st = rlx_gguf_kv_int(f, i, j, &v))) {
    fprintf(out, "%" PRId64, v);
  }
  rlx_status_free(st);
}

rlx_status *rlx_gguf_describe(const char *path, FILE *out) {
  if (!path || !out) return RLX_ERR(INVALID_ARGUMENT, "rlx_gguf_describe: NULL argument");
  rlx_gguf *f;
  RLX_TRY(rlx_gguf_open(path, &f));
  fprintf(out, "GGUF version %u, alignment %" PRIu64 ", %zu metadata pairs, %zu tensors (data at byte %" PRIu64 ")\n", f->version,
          f->alignment, f->n_kv, f->n_t, f->data_off);
  fprintf(out, "metadata:\n");
  for (size_t i = 0; i < f->n_kv; i++) {
    const gguf_kv *kv = &f->kv[i];
    fprintf(out, "  %s: ", kv->key);
    if (kv->type == RLX_GGUF_ARRAY) {
      fprintf(out, "array[%s x %" PRIu64 "] [", rlx_gguf_type_name(kv->elem), kv->count);
      for (uint64_t j = 0; j < kv->count && j < 8; j++) {
        if (j) fputs(", ", out);
        print_element(f, i, j, out);
      }
      fputs(kv->count > 8 ? ", ...]\n" : "]\n", out);
    } else {
      fprintf(out, "%s = ", rlx_gguf_type_name(kv->type));
      print_element(f, i, 0, out);
      fputc('\n', out);
    }
  }
  fprintf(out, "tensors:\n");
  for (size_t i = 0; i < f->n_t; i++) {
    const rlx_gguf_tensor *t = &f->t[i];
    const char *tn = "?";
    rlx_ggml_type_info(t->type, &tn, NULL, NULL);
    fprintf(out, "  %s: %s [", t->name, tn);
    for (int d = 0; d < t->n_dims; d++) fprintf(out, d ? ", %lld" : "%lld", (long long)t->dims[d]);
    fprintf(out, "] offset %" PRIu64 ", %zu bytes\n", t->offset, t->nbytes);
  }
  rlx_gguf_close(f);
  return NULL;
}
