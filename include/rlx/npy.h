/* rlx/npy.h: NumPy .npy files (format versions 1.0, 2.0 and 3.0) to and from rlx tensors.
 *
 * Format: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
 * Supported descr: little-endian or byte-order-free '<f4' '<f2' '<f8' '<i1' '<i2' '<i4' '<i8' '|u1'
 * '<u2' '<u4' '<u8' '|b1' '<c8'. NumPy has no bfloat16: rlx writes it as '<u2' bit patterns.
 * Fortran-order arrays are reordered to C order on load; big-endian data is rejected (UNIMPLEMENTED).
 *
 * Thread-safety: functions are reentrant; concurrent writes to one path are the caller's concern.
 */
#ifndef RLX_NPY_H
#define RLX_NPY_H

#include "rlx/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reads `path` into a new owning tensor. Errors: NOT_FOUND (cannot open, names the path and the
 * OS error), DATA_LOSS (bad magic, malformed header, truncated data; names the path),
 * UNIMPLEMENTED (big-endian or unsupported descr; names it). *out untouched on
 * failure. */
rlx_status *rlx_npy_load(const char *path, rlx_tensor **out);

/* Parses an in-memory .npy image (same rules; `what` names the source in messages). */
rlx_status *rlx_npy_parse(const void *bytes, size_t nbytes, const char *what, rlx_tensor **out);

/* Writes `t` to `path` as a version 1.0 .npy file (bfloat16 as '<u2' bit patterns).
 * Errors: UNAVAILABLE when the file cannot be created or written (names path and OS error). */
rlx_status *rlx_npy_save(const char *path, const rlx_tensor *t);

#ifdef __cplusplus
}
#endif
#endif
