/* rlx/npy.h: NumPy .npy files (format versions 1.0, 2.0 and 3.0) to and from rlx tensors.
 *
 * Format: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
 * Supported descr: little-endian or byte-order-free '<f4' '<f2' '<f8' '<i1' '<i2' '<i4' '<i8' '|u1'
 * '<u2' '<u4' '<u8' '|b1' '<c8'. NumPy has no bfloat16: rlx writes it as '<u2' bit patterns, and the
 * low-precision storage types (rlx_dtype_is_lowp) as their '|u1' codes (numpy.view with the
 * ml_dtypes type of the same name reads them back).
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

/* Reads `path` into a new owning tensor (the caller frees it with rlx_tensor_free). Errors:
 * INVALID_ARGUMENT (NULL path or out), NOT_FOUND (cannot open, names the path and the OS error),
 * DATA_LOSS (read error, bad magic, malformed header, truncated data; names the path),
 * UNIMPLEMENTED (big-endian or unsupported descr, format version above 3, rank above
 * RLX_MAX_RANK; names it), RESOURCE_EXHAUSTED (size overflow, out of memory). *out untouched on
 * failure. */
RLX_MUST_USE rlx_status *rlx_npy_load(const char *path, rlx_tensor **out);

/* Parses an in-memory .npy image of nbytes bytes (borrowed for the call; the tensor is a copy),
 * with the rules and errors of rlx_npy_load; `what` names the source in messages (NULL: ".npy
 * data"). Bytes after the data are ignored. */
RLX_MUST_USE rlx_status *rlx_npy_parse(const void *bytes, size_t nbytes, const char *what, rlx_tensor **out);

/* Writes `t` to `path` (created or truncated) as a version 1.0 .npy file in C order (bfloat16 as
 * '<u2' bit patterns). Errors: INVALID_ARGUMENT (NULL argument), UNAVAILABLE when the file cannot
 * be created or written (names path and OS error; a partly written file may remain). */
RLX_MUST_USE rlx_status *rlx_npy_save(const char *path, const rlx_tensor *t);

#ifdef __cplusplus
}
#endif
#endif
