/* strmap.c: string-keyed hash map with linear probing (FNV-1a hashes). */
#include "base/strmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

static size_t hash(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return (size_t)h;
}

void *rlx_strmap_get(const rlx_strmap *m, const char *key) {
  if (!m->cap) return NULL;
  for (size_t i = hash(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
    if (!m->keys[i]) return NULL;
    if (strcmp(m->keys[i], key) == 0) return m->vals[i];
  }
}

static bool grow(rlx_strmap *m) {
  size_t ncap = m->cap ? m->cap * 2 : 64;
  char **keys = calloc(ncap, sizeof *keys);
  void **vals = calloc(ncap, sizeof *vals);
  if (!keys || !vals) {
    free(keys);
    free(vals);
    return false;
  }
  for (size_t j = 0; j < m->cap; j++) {
    if (!m->keys[j]) continue;
    size_t i = hash(m->keys[j]) & (ncap - 1);
    while (keys[i]) i = (i + 1) & (ncap - 1);
    keys[i] = m->keys[j];
    vals[i] = m->vals[j];
  }
  free(m->keys);
  free(m->vals);
  m->keys = keys;
  m->vals = vals;
  m->cap = ncap;
  return true;
}

bool rlx_strmap_put(rlx_strmap *m, const char *key, void *val) {
  if ((m->len + 1) * 2 > m->cap && !grow(m)) return false;
  size_t i = hash(key) & (m->cap - 1);
  for (; m->keys[i]; i = (i + 1) & (m->cap - 1))
    if (strcmp(m->keys[i], key) == 0) return m->vals[i] = val, true;
  if (!(m->keys[i] = rlx_strdup(key))) return false;
  m->vals[i] = val;
  m->len++;
  return true;
}

void rlx_strmap_clear(rlx_strmap *m) {
  for (size_t i = 0; i < m->cap; i++) free(m->keys[i]);
  free(m->keys);
  free(m->vals);
  memset(m, 0, sizeof *m);
}
