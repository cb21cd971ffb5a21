/* rlx/tensor.h: host tensors, the typed data that crosses the rlx API.
 *
 * An rlx_tensor is a static-shaped, row-major (C order), dense array of one dtype in host memory.
 * It either owns its bytes (rlx_tensor_create, rlx_tensor_copy, and every tensor rlx returns) or
 * borrows them (rlx_tensor_wrap: the caller keeps the buffer alive and unchanged while the tensor
 * is in use). Bytes are little-endian in the dtype's layout (bool = one byte 0/1, float16/bfloat16
 * = their bit patterns, complex64 = (re, im) float32 pairs).
 *
 * Thread-safety: a tensor may be read from several threads at once; writing needs exclusive use.
 */
#ifndef RLX_TENSOR_H
#define RLX_TENSOR_H

#include "rlx/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rlx_tensor rlx_tensor;

/* Creates an owning tensor of type dtype[dims[0..rank)] (static dims; dims may be NULL for rank 0)
 * and copies nbytes from `data` (borrowed for the call) into it; data NULL: zero-filled, nbytes
 * ignored. Errors: INVALID_ARGUMENT for a bad rank or dtype, a negative dim, NULL dims for rank > 0,
 * NULL out, or nbytes != numel * dtype size (the message gives both); RESOURCE_EXHAUSTED when the
 * size overflows or memory runs out. *out untouched on failure. Release with rlx_tensor_free. */
RLX_MUST_USE rlx_status *rlx_tensor_create(rlx_dtype dtype, int32_t rank, const int64_t *dims, const void *data,
                              size_t nbytes, rlx_tensor **out);

/* Creates a tensor that borrows `data` (nbytes long; must equal numel * dtype size) without
 * copying. The tensor object itself is owned by the caller (rlx_tensor_free); the buffer is not
 * freed by rlx and must stay valid while the tensor is used. Errors as rlx_tensor_create, plus
 * INVALID_ARGUMENT for NULL data with a non-empty type. */
RLX_MUST_USE rlx_status *rlx_tensor_wrap(rlx_dtype dtype, int32_t rank, const int64_t *dims, void *data,
                            size_t nbytes, rlx_tensor **out);

/* Deep copy (always owning, also of a wrapped tensor). Errors: INVALID_ARGUMENT (NULL t or out),
 * RESOURCE_EXHAUSTED. *out untouched on failure. */
RLX_MUST_USE rlx_status *rlx_tensor_copy(const rlx_tensor *t, rlx_tensor **out);

/* Releases the tensor (and its bytes when it owns them). NULL accepted. */
void rlx_tensor_free(rlx_tensor *t);

/* Accessors (t must not be NULL). Pointers are borrowed and live as long as the tensor; data of a
 * wrapped tensor is the caller's buffer. numel is 1 for rank 0; nbytes = numel * dtype size. */
const rlx_type *rlx_tensor_type(const rlx_tensor *t);
rlx_dtype rlx_tensor_dtype(const rlx_tensor *t);
int32_t rlx_tensor_rank(const rlx_tensor *t);
const int64_t *rlx_tensor_dims(const rlx_tensor *t);
int64_t rlx_tensor_numel(const rlx_tensor *t);
size_t rlx_tensor_nbytes(const rlx_tensor *t);
void *rlx_tensor_data(rlx_tensor *t);
const void *rlx_tensor_cdata(const rlx_tensor *t);

/* Reads element i (row-major index) converted to double (bool -> 0/1, float16/bfloat16 exactly,
 * int64/uint64 rounded to the nearest double, complex64 -> real part, the low-precision storage
 * types by rlx_lowp_to_f32). Returns 0.0 for i outside
 * [0, numel). Handy for tests and printing. */
double rlx_tensor_get_f64(const rlx_tensor *t, int64_t i);

/* Writes a one-line summary into buf (cap bytes, NUL-terminated when cap > 0, truncated): type,
 * then min, max and mean of the elements as doubles ("float32[1,40] min -1.5 max 2 mean 0.25"),
 * or "<type> empty" for no elements. */
void rlx_tensor_summary(const rlx_tensor *t, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
