/* util.c: small internal helpers. */
#include "base/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

char *rlx_strdup(const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

bool rlx_grow(void **buf, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return true;
  size_t ncap = *cap ? *cap : 8;
  while (ncap < need) {
    if (ncap > SIZE_MAX / 2) return false;
    ncap *= 2;
  }
  size_t bytes;
  if (!rlx_mul_size(ncap, elem, &bytes)) return false;
  void *p = realloc(*buf, bytes);
  if (!p) return false;
  *buf = p;
  *cap = ncap;
  return true;
}

bool rlx_mul_size(size_t a, size_t b, size_t *out) {
  if (a != 0 && b > SIZE_MAX / a) return false;
  *out = a * b;
  return true;
}

bool rlx_mul_i64(int64_t a, int64_t b, int64_t *out) {
  return !__builtin_mul_overflow(a, b, out);
}

bool rlx_add_i64(int64_t a, int64_t b, int64_t *out) {
  return !__builtin_add_overflow(a, b, out);
}

bool rlx_norm_axis(int64_t axis, int64_t rank, int64_t *out) {
  if (axis < -rank || axis >= rank) return false;
  *out = axis < 0 ? axis + rank : axis;
  return true;
}

uint64_t rlx_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

rlx_status *rlx_read_file(const char *path, unsigned char **out, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return RLX_ERR(NOT_FOUND, "cannot open '%s': %s", path, strerror(errno));
  unsigned char *buf = NULL;
  size_t n = 0, cap = 0;
  for (;;) {
    if (!rlx_grow((void **)&buf, &cap, n + (1 << 20), 1)) {
      free(buf);
      fclose(f);
      return RLX_OOM();
    }
    size_t r = fread(buf + n, 1, cap - n, f);
    n += r;
    if (r == 0) break;
  }
  bool err = ferror(f);
  fclose(f);
  if (err) {
    free(buf);
    return RLX_ERR(DATA_LOSS, "error reading '%s'", path);
  }
  *out = buf;
  *len = n;
  return NULL;
}
