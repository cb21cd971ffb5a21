/* rlx/gguf.h: reading GGUF files (the llama.cpp / ggml model format).
 *
 * Format (GGUF version 2 and 3, https://github.com/ggml-org/ggml/blob/master/docs/gguf.md), all
 * little-endian: the magic "GGUF", a uint32 version, a uint64 tensor count, a uint64 metadata
 * count; the metadata key-value pairs (a key string, a uint32 value type, the value); the tensor
 * infos (a name string, a uint32 dimension count, uint64 dims with dims[0] the fastest-varying
 * (ggml's ne[0]), a uint32 ggml type, a uint64 offset); padding to `general.alignment` (uint32,
 * default 32); the tensor data, each tensor at its offset from the start of the data section. A
 * string is a uint64 byte length and that many bytes (UTF-8, not NUL-terminated); an array is a
 * uint32 element type, a uint64 count and the elements.
 *
 * rlx_gguf_open maps the file read-only (mmap) and checks every count, length, type, dimension,
 * size and offset against the file before anything uses it, so a truncated or hostile file is a
 * DATA_LOSS error naming what was wrong (the key or tensor, expected vs got), never a crash or an
 * unbounded allocation. Tensor data stays in the mapping (no copy).
 *
 * Ownership: keys and string values are copied out NUL-terminated at open (a string value that
 * holds a NUL byte keeps its full length); every pointer returned borrows from the rlx_gguf and
 * lives until rlx_gguf_close. Thread-safety: an open file is read-only and may be read from any
 * number of threads. */
#ifndef RLX_GGUF_H
#define RLX_GGUF_H

#include <stdio.h>

#include "rlx/status.h"
#include "rlx/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Metadata value types (the GGUF spec's gguf_metadata_value_type). */
typedef enum rlx_gguf_type {
  RLX_GGUF_UINT8 = 0,
  RLX_GGUF_INT8 = 1,
  RLX_GGUF_UINT16 = 2,
  RLX_GGUF_INT16 = 3,
  RLX_GGUF_UINT32 = 4,
  RLX_GGUF_INT32 = 5,
  RLX_GGUF_FLOAT32 = 6,
  RLX_GGUF_BOOL = 7,
  RLX_GGUF_STRING = 8,
  RLX_GGUF_ARRAY = 9,
  RLX_GGUF_UINT64 = 10,
  RLX_GGUF_INT64 = 11,
  RLX_GGUF_FLOAT64 = 12,
} rlx_gguf_type;

/* The GGUF spec's name of a value type ("uint32", "string", ...); "invalid" outside the enum. */
const char *rlx_gguf_type_name(rlx_gguf_type t);

/* ggml tensor types (ggml.h's enum ggml_type): the values stored in a GGUF tensor info. */
typedef enum rlx_ggml_type {
  RLX_GGML_F32 = 0, RLX_GGML_F16 = 1, RLX_GGML_Q4_0 = 2, RLX_GGML_Q4_1 = 3, RLX_GGML_Q5_0 = 6,
  RLX_GGML_Q5_1 = 7, RLX_GGML_Q8_0 = 8, RLX_GGML_Q8_1 = 9, RLX_GGML_Q2_K = 10, RLX_GGML_Q3_K = 11,
  RLX_GGML_Q4_K = 12, RLX_GGML_Q5_K = 13, RLX_GGML_Q6_K = 14, RLX_GGML_Q8_K = 15, RLX_GGML_IQ2_XXS = 16,
  RLX_GGML_IQ2_XS = 17, RLX_GGML_IQ3_XXS = 18, RLX_GGML_IQ1_S = 19, RLX_GGML_IQ4_NL = 20,
  RLX_GGML_IQ3_S = 21, RLX_GGML_IQ2_S = 22, RLX_GGML_IQ4_XS = 23, RLX_GGML_I8 = 24, RLX_GGML_I16 = 25,
  RLX_GGML_I32 = 26, RLX_GGML_I64 = 27, RLX_GGML_F64 = 28, RLX_GGML_IQ1_M = 29, RLX_GGML_BF16 = 30,
  RLX_GGML_TQ1_0 = 34, RLX_GGML_TQ2_0 = 35, RLX_GGML_MXFP4 = 39, RLX_GGML_NVFP4 = 40,
} rlx_ggml_type;

/* ggml's name of a tensor type ("q4_K", "f16", ...) and its block: elements per block and bytes
 * per block (ggml's blck_size and type_size; 1 and the element size for the plain types). false
 * (outputs untouched) for a type rlx does not know. */
bool rlx_ggml_type_info(uint32_t type, const char **out_name, int64_t *out_block, int64_t *out_block_bytes);

typedef struct rlx_gguf rlx_gguf;

/* One tensor of the file (borrowed from it). */
typedef struct rlx_gguf_tensor {
  const char *name;   /* NUL-terminated */
  uint32_t type;      /* rlx_ggml_type */
  int32_t n_dims;     /* 1 .. 4 */
  int64_t dims[4];    /* ggml order: dims[0] varies fastest (a row of a matrix [rows, cols] is dims[0] = cols) */
  uint64_t offset;    /* bytes from the start of the data section (a multiple of the alignment) */
  size_t nbytes;      /* dims[0] / block * block_bytes * dims[1] * ... */
  const void *data;   /* the bytes, in the mapping */
} rlx_gguf_tensor;

/* Opens and checks the GGUF file at `path` (memory-mapped read-only). Errors: INVALID_ARGUMENT
 * (NULL argument), NOT_FOUND (no such file), DATA_LOSS (not GGUF, an unsupported version, or any
 * count, string, type, dimension, size or offset that does not fit the file: the message names the
 * key or tensor and the byte offset), UNIMPLEMENTED (a nested array, a ggml type rlx does not
 * know), RESOURCE_EXHAUSTED. *out untouched on failure. Close with rlx_gguf_close. */
RLX_MUST_USE rlx_status *rlx_gguf_open(const char *path, rlx_gguf **out);
/* The same over bytes[0..nbytes) (borrowed: they must outlive the rlx_gguf; not copied). */
RLX_MUST_USE rlx_status *rlx_gguf_open_bytes(const void *bytes, size_t nbytes, rlx_gguf **out);
void rlx_gguf_close(rlx_gguf *f); /* NULL accepted */

uint32_t rlx_gguf_version(const rlx_gguf *f);
uint64_t rlx_gguf_alignment(const rlx_gguf *f);
/* Byte offset of the data section from the start of the file. */
uint64_t rlx_gguf_data_offset(const rlx_gguf *f);

/* ---- metadata: pairs i < rlx_gguf_num_kv, in file order ---- */
size_t rlx_gguf_num_kv(const rlx_gguf *f);
/* The key of pair i (NULL when i is out of range). */
const char *rlx_gguf_kv_key(const rlx_gguf *f, size_t i);
/* The index of `key`. NOT_FOUND naming it; INVALID_ARGUMENT for NULL arguments. */
RLX_MUST_USE rlx_status *rlx_gguf_find_kv(const rlx_gguf *f, const char *key, size_t *out);
/* The value type of pair i; for an array, its element type in *out_elem and its length in
 * *out_count (both may be NULL; 0 / count 1 for scalars). OUT_OF_RANGE for a bad i. */
RLX_MUST_USE rlx_status *rlx_gguf_kv_type(const rlx_gguf *f, size_t i, rlx_gguf_type *out, rlx_gguf_type *out_elem,
                                          uint64_t *out_count);
/* Element j of pair i (j = 0 for a scalar; j < count for an array), converted: _int takes any
 * integer or bool type (uint64 values above INT64_MAX: OUT_OF_RANGE), _float any number type,
 * _string a string (*out_len may be NULL). Errors: OUT_OF_RANGE (i or j), INVALID_ARGUMENT (a
 * type that does not convert: both named). */
RLX_MUST_USE rlx_status *rlx_gguf_kv_int(const rlx_gguf *f, size_t i, uint64_t j, int64_t *out);
RLX_MUST_USE rlx_status *rlx_gguf_kv_float(const rlx_gguf *f, size_t i, uint64_t j, double *out);
RLX_MUST_USE rlx_status *rlx_gguf_kv_string(const rlx_gguf *f, size_t i, uint64_t j, const char **out, size_t *out_len);

/* ---- tensors: i < rlx_gguf_num_tensors, in file order ---- */
size_t rlx_gguf_num_tensors(const rlx_gguf *f);
/* Tensor i. OUT_OF_RANGE for a bad i. */
RLX_MUST_USE rlx_status *rlx_gguf_tensor_info(const rlx_gguf *f, size_t i, rlx_gguf_tensor *out);
/* The index of the tensor called `name`. NOT_FOUND naming it. */
RLX_MUST_USE rlx_status *rlx_gguf_find_tensor(const rlx_gguf *f, const char *name, size_t *out);

/* Prints the file readably to `out` (rlx info): version, alignment, every metadata pair (arrays by
 * element type, length and their first elements) and every tensor (name, ggml type, dims in ggml
 * order, offset, bytes). Errors as rlx_gguf_open. */
RLX_MUST_USE rlx_status *rlx_gguf_describe(const char *path, FILE *out);

#ifdef __cplusplus
}
#endif
#endif
