/* util.h: small internal helpers shared by all of rlx's C code (not installed). */
#ifndef RLX_BASE_UTIL_H
#define RLX_BASE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rlx/status.h"
#include "rlx/types.h"

#define RLX_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Shorthands for making statuses. */
#define RLX_ERR(code, ...) rlx_status_make(RLX_STATUS_##code, __VA_ARGS__)
#define RLX_OOM() rlx_status_make(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory")
/* Evaluates an expression returning rlx_status*; returns it from the caller when it failed. */
#define RLX_TRY(expr)                  \
  do {                                 \
    rlx_status *rlx_try_st_ = (expr);  \
    if (rlx_try_st_) return rlx_try_st_; \
  } while (0)

/* true when a and b have the same dtype and shape. */
static inline bool rlx_type_same(const rlx_type *a, const rlx_type *b) {
  if (a->dtype != b->dtype || a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

/* Formats a type for messages into a temporary buffer (valid for the full expression). */
#define RLX_TYPE_STR(t) rlx_type_str((t), (char[160]){0}, 160)

/* strdup that returns NULL for NULL input and on allocation failure. */
char *rlx_strdup(const char *s);

/* Grows *buf (element size `elem`) so that it holds at least `need` elements; *cap is updated.
 * Returns false on overflow or allocation failure (the buffer is left as it was). */
bool rlx_grow(void **buf, size_t *cap, size_t need, size_t elem);

/* Overflow-checked arithmetic: false when the result does not fit. */
bool rlx_mul_size(size_t a, size_t b, size_t *out);
bool rlx_mul_i64(int64_t a, int64_t b, int64_t *out);
bool rlx_add_i64(int64_t a, int64_t b, int64_t *out);

/* Normalizes a possibly negative axis against rank; false when outside [-rank, rank). */
bool rlx_norm_axis(int64_t axis, int64_t rank, int64_t *out);

/* Reads a whole file into a malloc'ed buffer (*out, *len; free with free()). NOT_FOUND when it
 * cannot be opened, DATA_LOSS on a read error (both name the path). */
RLX_MUST_USE rlx_status *rlx_read_file(const char *path, unsigned char **out, size_t *len);

/* Monotonic clock in nanoseconds. */
uint64_t rlx_now_ns(void);

#endif
