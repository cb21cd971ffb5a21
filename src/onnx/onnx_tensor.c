/* onnx_tensor.c: ONNX TensorProto <-> rlx_tensor, and ONNX data types. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/importer.h"

rlx_status *rlx_onnx_dtype(int32_t onnx_type, rlx_dtype *out) {
  static const struct { int32_t onnx; rlx_dtype dt; } map[] = {
      {1, RLX_DTYPE_F32},  {2, RLX_DTYPE_U8},   {3, RLX_DTYPE_I8},   {4, RLX_DTYPE_U16},  {5, RLX_DTYPE_I16},
      {6, RLX_DTYPE_I32},  {7, RLX_DTYPE_I64},  {9, RLX_DTYPE_BOOL}, {10, RLX_DTYPE_F16}, {11, RLX_DTYPE_F64},
      {12, RLX_DTYPE_U32}, {13, RLX_DTYPE_U64}, {14, RLX_DTYPE_C64}, {16, RLX_DTYPE_BF16},
      {17, RLX_DTYPE_F8E4M3FN}, {18, RLX_DTYPE_F8E4M3FNUZ}, {19, RLX_DTYPE_F8E5M2}, {20, RLX_DTYPE_F8E5M2FNUZ},
      {21, RLX_DTYPE_U4}, {22, RLX_DTYPE_I4}, {23, RLX_DTYPE_F4E2M1}, {25, RLX_DTYPE_U2}, {26, RLX_DTYPE_I2},
  };
  for (size_t i = 0; i < RLX_ARRAY_LEN(map); i++)
    if (map[i].onnx == onnx_type) return *out = map[i].dt, NULL;
  static const char *names[] = {"UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64", "STRING", "BOOL",
                                "FLOAT16", "DOUBLE", "UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16",
                                "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4", "INT4",
                                "FLOAT4E2M1", "FLOAT8E8M0", "UINT2", "INT2"};
  const char *nm = onnx_type >= 0 && (size_t)onnx_type < RLX_ARRAY_LEN(names) ? names[onnx_type] : "unknown";
  return RLX_ERR(UNIMPLEMENTED, "ONNX data type %s (%d) is not supported by rlx", nm, (int)onnx_type);
}

/* Reads (dst != NULL) or size-checks (dst == NULL) a tensor's external data. */
static rlx_status *read_external(const Onnx__TensorProto *t, const char *dir, size_t need, void *dst) {
  const char *loc = NULL;
  long long off = 0, len = -1;
  for (size_t i = 0; i < t->n_external_data; i++) {
    const Onnx__StringStringEntryProto *e = t->external_data[i];
    if (!e->key || !e->value) continue;
    if (!strcmp(e->key, "location")) loc = e->value;
    else if (!strcmp(e->key, "offset")) off = atoll(e->value);
    else if (!strcmp(e->key, "length")) len = atoll(e->value);
  }
  if (!loc || strstr(loc, "..")) return RLX_ERR(DATA_LOSS, "tensor '%s': external data without a valid location", t->name ? t->name : "");
  if (len >= 0 && (size_t)len != need)
    return RLX_ERR(DATA_LOSS, "tensor '%s': external data length %lld, expected %zu", t->name ? t->name : "", len, need);
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir ? dir : ".", loc);
  FILE *f = fopen(path, "rb");
  if (!f) return RLX_ERR(NOT_FOUND, "tensor '%s': cannot open external data '%s': %s", t->name ? t->name : "", path, strerror(errno));
  bool ok;
  if (!dst) {
    ok = fseek(f, 0, SEEK_END) == 0 && off >= 0 && ftell(f) >= off && (size_t)(ftell(f) - off) >= need;
  } else {
    ok = off >= 0 && fseek(f, off, SEEK_SET) == 0 && fread(dst, 1, need, f) == need;
  }
  fclose(f);
  return ok ? NULL : RLX_ERR(DATA_LOSS, "tensor '%s': external data '%s' is truncated", t->name ? t->name : "", path);
}

/* Elements per byte in TensorProto data: 2 for the 4-bit types, 4 for the 2-bit ones (packed from
 * the least significant bits, onnx.proto), else 1. rlx holds one element per byte. */
static int packing(rlx_dtype dt) {
  return dt == RLX_DTYPE_I4 || dt == RLX_DTYPE_U4 || dt == RLX_DTYPE_F4E2M1 ? 2 : dt == RLX_DTYPE_I2 || dt == RLX_DTYPE_U2 ? 4 : 1;
}

/* Spreads the packed elements of src (ceil(cnt / per) bytes) over dst, one per byte, in place
 * when dst == src (backwards, so no byte is read after being written). */
static void unpack(unsigned char *dst, const unsigned char *src, int64_t cnt, int per) {
  int bits = 8 / per;
  for (int64_t i = cnt - 1; i >= 0; i--) dst[i] = (unsigned char)((src[i / per] >> (bits * (int)(i % per))) & ((1u << bits) - 1));
}

rlx_status *rlx_onnx_tensor_from_proto(const Onnx__TensorProto *t, const char *dir, rlx_tensor **out) {
  const char *nm = t->name ? t->name : "";
  rlx_dtype dt;
  rlx_status *st = rlx_onnx_dtype(t->data_type, &dt);
  if (st) return rlx_status_annotate(st, "tensor '%s'", nm);
  if (t->n_dims > RLX_MAX_RANK) return RLX_ERR(UNIMPLEMENTED, "tensor '%s' has rank %zu (max %d)", nm, t->n_dims, RLX_MAX_RANK);
  for (size_t i = 0; i < t->n_dims; i++)
    if (t->dims[i] < 0) return RLX_ERR(DATA_LOSS, "tensor '%s' has a negative dim", nm);
  /* Check the declared size against the data present before allocating (a malformed or foreign
   * proto can declare absurd dims). */
  rlx_type ty;
  size_t need;
  RLX_TRY(rlx_status_annotate(rlx_type_make(dt, (int32_t)t->n_dims, t->dims, &ty), "tensor '%s'", nm));
  RLX_TRY(rlx_status_annotate(rlx_type_nbytes(&ty, &need), "tensor '%s'", nm));
  int per = packing(dt);
  need = (need + (size_t)per - 1) / (size_t)per; /* bytes in the proto (rlx: one per element) */
  bool external = t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  size_t present = t->has_raw_data ? t->raw_data.len
                   : t->n_float_data * 4 + t->n_double_data * 8 + t->n_int64_data * 8 + t->n_uint64_data * 8 + t->n_int32_data * 4;
  if (!external && need > present && need > 0)
    return RLX_ERR(DATA_LOSS, "tensor '%s': %s needs %zu bytes, the proto holds %zu", nm, RLX_TYPE_STR(&ty), need, present);
  if (external) RLX_TRY(read_external(t, dir, need, NULL));
  rlx_tensor *x;
  RLX_TRY(rlx_status_annotate(rlx_tensor_create(dt, (int32_t)t->n_dims, t->dims, NULL, 0, &x), "tensor '%s'", nm));
  int64_t cnt = rlx_tensor_numel(x);
  unsigned char *dst = rlx_tensor_data(x);
  if (external) {
    st = read_external(t, dir, need, dst);
  } else if (t->has_raw_data) {
    if (t->raw_data.len != need)
      st = RLX_ERR(DATA_LOSS, "tensor '%s': raw_data has %zu bytes, %s needs %zu", nm, t->raw_data.len, RLX_TYPE_STR(rlx_tensor_type(x)), need);
    else if (need) memcpy(dst, t->raw_data.data, need);
  } else {
    size_t have;
    switch (dt) {
      case RLX_DTYPE_F32: case RLX_DTYPE_C64:
        have = t->n_float_data * 4;
        if (have == need && need) memcpy(dst, t->float_data, need);
        break;
      case RLX_DTYPE_F64:
        have = t->n_double_data * 8;
        if (have == need && need) memcpy(dst, t->double_data, need);
        break;
      case RLX_DTYPE_I64:
        have = t->n_int64_data * 8;
        if (have == need && need) memcpy(dst, t->int64_data, need);
        break;
      case RLX_DTYPE_U32: case RLX_DTYPE_U64: {
        have = t->n_uint64_data * rlx_dtype_size(dt);
        for (size_t i = 0; have == need && i < t->n_uint64_data; i++) {
          if (dt == RLX_DTYPE_U32) { uint32_t v = (uint32_t)t->uint64_data[i]; memcpy(dst + 4 * i, &v, 4); }
          else memcpy(dst + 8 * i, &t->uint64_data[i], 8);
        }
        break;
      }
      default: { /* int32_data holds int8/16/32, uint8/16, bool, float16/bfloat16/float8 bit patterns, packed 4/2-bit bytes */
        size_t es = rlx_dtype_size(dt);
        have = t->n_int32_data * es;
        for (size_t i = 0; have == need && i < t->n_int32_data; i++) {
          int32_t v = t->int32_data[i];
          if (es == 1) { uint8_t b = (uint8_t)v; dst[i] = b; }
          else if (es == 2) { uint16_t h = (uint16_t)v; memcpy(dst + 2 * i, &h, 2); }
          else memcpy(dst + 4 * i, &v, 4);
        }
        break;
      }
    }
    if (have != need)
      st = RLX_ERR(DATA_LOSS, "tensor '%s': %lld elements of %s expected, the typed data field has %zu bytes", nm, (long long)cnt,
                   rlx_dtype_name(dt), have);
  }
  if (!st && per > 1) unpack(dst, dst, cnt, per);
  if (st) {
    rlx_tensor_free(x);
    return st;
  }
  *out = x;
  return NULL;
}

void rlx_onnx_dir_of(const char *path, char *dir, size_t cap) {
  const char *slash = strrchr(path, '/');
  if (!slash) snprintf(dir, cap, ".");
  else if (slash == path) snprintf(dir, cap, "/");
  else snprintf(dir, cap, "%.*s", (int)(slash - path), path);
}

rlx_status *rlx_onnx_tensor_load(const char *path, rlx_tensor **out, char **out_name) {
  if (!path || !out) return RLX_ERR(INVALID_ARGUMENT, "rlx_onnx_tensor_load: NULL argument");
  unsigned char *buf;
  size_t len;
  RLX_TRY(rlx_read_file(path, &buf, &len));
  rlx_status *wst = rlx_onnx_check_wire(buf, len, path);
  if (wst) {
    free(buf);
    return wst;
  }
  Onnx__TensorProto *t = onnx__tensor_proto__unpack(NULL, len, buf);
  free(buf);
  if (!t) return RLX_ERR(DATA_LOSS, "'%s' is not a serialized ONNX TensorProto", path);
  char dir[4096];
  rlx_onnx_dir_of(path, dir, sizeof dir);
  rlx_tensor *x = NULL;
  rlx_status *st = rlx_onnx_tensor_from_proto(t, dir, &x);
  char *name = NULL;
  if (!st && out_name && !(name = rlx_strdup(t->name ? t->name : ""))) st = RLX_OOM();
  onnx__tensor_proto__free_unpacked(t, NULL);
  if (st) {
    rlx_tensor_free(x);
    return rlx_status_annotate(st, "%s", path);
  }
  *out = x;
  if (out_name) *out_name = name;
  return NULL;
}
