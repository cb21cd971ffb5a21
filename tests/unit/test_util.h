/* test_util.h: helpers shared by the cmocka unit tests. */
#ifndef RLX_TEST_UTIL_H
#define RLX_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
/* cmocka needs the headers above first */
#include <cmocka.h>

#include "rlx/rlx.h"

/* Asserts a call succeeded, printing its status otherwise. */
#define OK(expr)                                                                                    \
  do {                                                                                              \
    rlx_status *ok_st_ = (expr);                                                                    \
    if (ok_st_) fail_msg("%s failed: %s: %s", #expr, rlx_status_code_name(rlx_status_code_of(ok_st_)), \
                         rlx_status_message(ok_st_));                                               \
  } while (0)

/* Asserts a call failed with `code` and a message containing `needle`. */
#define FAILS(expr, code, needle)                                                                   \
  do {                                                                                              \
    rlx_status *f_st_ = (expr);                                                                     \
    if (!f_st_) fail_msg("%s succeeded, expected %s", #expr, #code);                                \
    if (rlx_status_code_of(f_st_) != RLX_STATUS_##code)                                             \
      fail_msg("%s: expected %s, got %s: %s", #expr, #code, rlx_status_code_name(rlx_status_code_of(f_st_)), \
               rlx_status_message(f_st_));                                                          \
    if (!strstr(rlx_status_message(f_st_), (needle)))                                               \
      fail_msg("%s: message '%s' lacks '%s'", #expr, rlx_status_message(f_st_), (needle));          \
    rlx_status_free(f_st_);                                                                         \
  } while (0)

static inline rlx_type ttype(rlx_dtype dt, int rank, const int64_t *dims) {
  rlx_type t = {.dtype = dt, .rank = rank};
  for (int i = 0; i < rank; i++) t.dims[i] = dims[i];
  return t;
}

#endif
