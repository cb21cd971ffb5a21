/* rlx/status.h: the one error type of the rlx API.
 *
 * Every fallible rlx function returns an `rlx_status *`. NULL means success and costs nothing to
 * test (`if (st) ...`). A non-NULL status carries a canonical code and a message naming what was
 * wrong (node, op, input, file, expected vs got). The caller owns a returned status and releases
 * it with rlx_status_free(). Statuses are never stored in thread-local "last error" state.
 *
 * Thread-safety: statuses are plain values; distinct statuses may be used from distinct threads.
 */
#ifndef RLX_STATUS_H
#define RLX_STATUS_H

#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Canonical codes (the same set IREE and absl use; the numeric values are rlx's own). One code per
 * kind of mistake, everywhere: a value outside what the op, format or function defines (an
 * unknown enum or string attribute value, a wrong dtype or shape) is INVALID_ARGUMENT; a value it
 * defines that rlx does not run (an ONNX op, attribute value or data type rlx has no lowering
 * for) is UNIMPLEMENTED. */
typedef enum rlx_status_code {
  RLX_STATUS_OK = 0,
  RLX_STATUS_INVALID_ARGUMENT = 1,   /* bad value from the caller: shape, dtype, attribute, name */
  RLX_STATUS_NOT_FOUND = 2,          /* unknown name, missing file */
  RLX_STATUS_ALREADY_EXISTS = 3,     /* duplicate name */
  RLX_STATUS_OUT_OF_RANGE = 4,       /* index or axis outside its range */
  RLX_STATUS_FAILED_PRECONDITION = 5,/* object not in the state the call needs (e.g. no pending run) */
  RLX_STATUS_UNIMPLEMENTED = 6,      /* op, attribute value or feature rlx does not support */
  RLX_STATUS_RESOURCE_EXHAUSTED = 7, /* out of memory, size arithmetic overflow */
  RLX_STATUS_UNAVAILABLE = 8,        /* device, backend or output not available (no GPU; a file
                                        that cannot be created or written) */
  RLX_STATUS_DATA_LOSS = 9,          /* corrupt or truncated file */
  RLX_STATUS_INTERNAL = 10,          /* a bug in rlx or an error raised inside MLX */
} rlx_status_code;

typedef struct rlx_status rlx_status;

/* Marks a function whose returned status must not be dropped: ignoring it is a compile-time
 * warning (GCC/Clang warn_unused_result; C++17 [[nodiscard]]), as IREE marks its status returns.
 * A dropped status is an unnoticed error and a leak; with GCC even a (void) cast still warns, so
 * release it with rlx_status_free. Every rlx function returning `rlx_status *` carries it. */
#if defined(__cplusplus) && __cplusplus >= 201703L
#define RLX_MUST_USE [[nodiscard]]
#elif defined(__GNUC__) || defined(__clang__)
#define RLX_MUST_USE __attribute__((warn_unused_result))
#else
#define RLX_MUST_USE
#endif

/* Makes a status with `code` and a printf-style message (fmt NULL: empty message). Returns NULL
 * when code is RLX_STATUS_OK. Never fails: when memory is exhausted it returns a shared static
 * RESOURCE_EXHAUSTED status (which rlx_status_free accepts and ignores). Thread-safe. */
RLX_MUST_USE rlx_status *rlx_status_make(rlx_status_code code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* rlx_status_make with a va_list (consumed as by vprintf). */
RLX_MUST_USE rlx_status *rlx_status_makev(rlx_status_code code, const char *fmt, va_list ap);

/* Prefixes context to a failed status' message: "<context>: <message>". Consumes `st` and returns
 * the annotated status (the same object; unchanged when memory runs out or st is the shared
 * out-of-memory status). NULL in, NULL out. */
RLX_MUST_USE rlx_status *rlx_status_annotate(rlx_status *st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The code of `st`; RLX_STATUS_OK for NULL. */
rlx_status_code rlx_status_code_of(const rlx_status *st);

/* The message of `st` ("" for NULL). Borrowed: valid until rlx_status_free(st). */
const char *rlx_status_message(const rlx_status *st);

/* The canonical name of a code ("INVALID_ARGUMENT", ...); "UNKNOWN" for values outside the enum. */
const char *rlx_status_code_name(rlx_status_code code);

/* Releases a status. NULL is accepted. */
void rlx_status_free(rlx_status *st);

/* Evaluates `expr` (an rlx_status * expression) once and returns its status from the enclosing
 * function when it failed (as absl's RETURN_IF_ERROR; the function must return rlx_status *). */
#define RLX_RETURN_IF_ERROR(expr)          \
  do {                                     \
    rlx_status *rlx_rie_st_ = (expr);      \
    if (rlx_rie_st_) return rlx_rie_st_;   \
  } while (0)

#ifdef __cplusplus
}
#endif
#endif
