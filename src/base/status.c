/* status.c: rlx_status, the error value of the whole API. */
#include "rlx/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rlx_status {
  rlx_status_code code;
  char *message;
};

/* Returned when allocating a status fails; never freed. */
static struct rlx_status oom_status = {RLX_STATUS_RESOURCE_EXHAUSTED,
                                       (char *)"out of memory while reporting an error"};

static char *vformat(const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) return NULL;
  char *s = malloc((size_t)n + 1);
  if (s) vsnprintf(s, (size_t)n + 1, fmt, ap);
  return s;
}

rlx_status *rlx_status_makev(rlx_status_code code, const char *fmt, va_list ap) {
  if (code == RLX_STATUS_OK) return NULL;
  rlx_status *st = malloc(sizeof *st);
  if (!st) return &oom_status;
  st->code = code;
  st->message = vformat(fmt ? fmt : "", ap);
  if (!st->message) {
    free(st);
    return &oom_status;
  }
  return st;
}

rlx_status *rlx_status_make(rlx_status_code code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  rlx_status *st = rlx_status_makev(code, fmt, ap);
  va_end(ap);
  return st;
}

rlx_status *rlx_status_annotate(rlx_status *st, const char *fmt, ...) {
  if (!st || st == &oom_status) return st;
  va_list ap;
  va_start(ap, fmt);
  char *ctx = vformat(fmt, ap);
  va_end(ap);
  if (!ctx) return st;
  size_t n = strlen(ctx) + 2 + strlen(st->message) + 1;
  char *msg = malloc(n);
  if (msg) {
    snprintf(msg, n, "%s: %s", ctx, st->message);
    free(st->message);
    st->message = msg;
  }
  free(ctx);
  return st;
}

rlx_status_code rlx_status_code_of(const rlx_status *st) { return st ? st->code : RLX_STATUS_OK; }

const char *rlx_status_message(const rlx_status *st) { return st ? st->message : ""; }

const char *rlx_status_code_name(rlx_status_code code) {
  switch (code) {
    case RLX_STATUS_OK: return "OK";
    case RLX_STATUS_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case RLX_STATUS_NOT_FOUND: return "NOT_FOUND";
    case RLX_STATUS_ALREADY_EXISTS: return "ALREADY_EXISTS";
    case RLX_STATUS_OUT_OF_RANGE: return "OUT_OF_RANGE";
    case RLX_STATUS_FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case RLX_STATUS_UNIMPLEMENTED: return "UNIMPLEMENTED";
    case RLX_STATUS_RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case RLX_STATUS_UNAVAILABLE: return "UNAVAILABLE";
    case RLX_STATUS_DATA_LOSS: return "DATA_LOSS";
    case RLX_STATUS_INTERNAL: return "INTERNAL";
  }
  return "UNKNOWN";
}

void rlx_status_free(rlx_status *st) {
  if (!st || st == &oom_status) return;
  free(st->message);
  free(st);
}
