/* strmap.h: a small string-keyed hash map (open addressing) holding pointers. Internal. */
#ifndef RLX_BASE_STRMAP_H
#define RLX_BASE_STRMAP_H

#include <stdbool.h>
#include <stddef.h>

typedef struct rlx_strmap {
  char **keys;
  void **vals;
  size_t cap, len;
} rlx_strmap;

/* Looks `key` up; NULL when absent. */
void *rlx_strmap_get(const rlx_strmap *m, const char *key);
/* Inserts or replaces; the key is copied. false on allocation failure. */
bool rlx_strmap_put(rlx_strmap *m, const char *key, void *val);
/* Frees keys and tables (not the values). */
void rlx_strmap_clear(rlx_strmap *m);

#endif
