/* registry.c: the process-wide custom-op registry (rlx/registry.h): a list of reference-counted
 * registrations under a reader-writer lock. A lookup takes a reference under the read lock and
 * releases it after the call, so replacing or unregistering an op never frees a registration in
 * use; the last release frees it and calls free_user_data. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "ir/custom.h"

struct rlx_custom_entry {
  rlx_custom_op_def def; /* def.name points to the entry's own copy */
  atomic_size_t refs;    /* one for the registry while registered, one per lookup in flight */
};

static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
static rlx_custom_entry **entries;
static size_t n_entries, cap_entries;

static void entry_unref(rlx_custom_entry *e) {
  if (atomic_fetch_sub(&e->refs, 1) != 1) return;
  if (e->def.free_user_data) e->def.free_user_data(e->def.user_data);
  free((char *)e->def.name);
  free(e);
}

/* Index of `name` in the list (lock held), or n_entries. */
static size_t find(const char *name) {
  size_t i = 0;
  while (i < n_entries && strcmp(entries[i]->def.name, name)) i++;
  return i;
}

static rlx_status *check_def(const rlx_custom_op_def *d) {
  if (!d) return RLX_ERR(INVALID_ARGUMENT, "rlx_custom_op_register: def is NULL");
  if (!d->name || !*d->name) return RLX_ERR(INVALID_ARGUMENT, "rlx_custom_op_register: the op needs a non-empty name");
  if (!d->infer) return RLX_ERR(INVALID_ARGUMENT, "custom op '%s': infer (shape inference) is required", d->name);
  if (!d->expand == !d->host)
    return RLX_ERR(INVALID_ARGUMENT, "custom op '%s': give exactly one kernel (expand or host), got %s", d->name,
                   d->expand ? "both" : "neither");
  if (d->min_inputs < 0 || d->min_inputs > d->max_inputs || d->max_inputs > 256)
    return RLX_ERR(INVALID_ARGUMENT, "custom op '%s': arity [%d, %d] is outside 0 <= min <= max <= 256", d->name, (int)d->min_inputs,
                   (int)d->max_inputs);
  return NULL;
}

rlx_status *rlx_custom_op_register(const rlx_custom_op_def *def, bool *out_replaced) {
  RLX_TRY(check_def(def));
  rlx_custom_entry *e = calloc(1, sizeof *e);
  char *name = rlx_strdup(def->name);
  if (!e || !name) {
    free(e);
    free(name);
    return RLX_OOM();
  }
  e->def = *def;
  e->def.name = name;
  atomic_init(&e->refs, 1);
  rlx_custom_entry *old = NULL;
  pthread_rwlock_wrlock(&lock);
  size_t i = find(name);
  bool ok = i < n_entries || rlx_grow((void **)&entries, &cap_entries, n_entries + 1, sizeof *entries);
  if (ok) {
    if (i < n_entries) old = entries[i];
    else n_entries++;
    entries[i] = e;
  }
  pthread_rwlock_unlock(&lock);
  if (!ok) {
    e->def.free_user_data = NULL; /* the caller keeps user_data on failure */
    entry_unref(e);
    return RLX_OOM();
  }
  if (out_replaced) *out_replaced = old != NULL;
  if (old) entry_unref(old);
  return NULL;
}

rlx_status *rlx_custom_op_unregister(const char *name) {
  if (!name) return RLX_ERR(INVALID_ARGUMENT, "rlx_custom_op_unregister: name is NULL");
  rlx_custom_entry *old = NULL;
  pthread_rwlock_wrlock(&lock);
  size_t i = find(name);
  if (i < n_entries) {
    old = entries[i];
    entries[i] = entries[--n_entries];
    if (!n_entries) { /* nothing registered: release the list too */
      free(entries);
      entries = NULL;
      cap_entries = 0;
    }
  }
  pthread_rwlock_unlock(&lock);
  if (!old) return RLX_ERR(NOT_FOUND, "no custom op named '%s' is registered", name);
  entry_unref(old);
  return NULL;
}

bool rlx_custom_op_is_registered(const char *name) {
  const rlx_custom_entry *e = rlx_custom_acquire(name);
  rlx_custom_release(e);
  return e != NULL;
}

const rlx_custom_entry *rlx_custom_acquire(const char *name) {
  if (!name) return NULL;
  rlx_custom_entry *e = NULL;
  pthread_rwlock_rdlock(&lock);
  size_t i = find(name);
  if (i < n_entries) {
    e = entries[i];
    atomic_fetch_add(&e->refs, 1);
  }
  pthread_rwlock_unlock(&lock);
  return e;
}

void rlx_custom_release(const rlx_custom_entry *e) {
  if (e) entry_unref((rlx_custom_entry *)e);
}

const rlx_custom_op_def *rlx_custom_def(const rlx_custom_entry *e) { return &e->def; }

const rlx_attr *rlx_attr_find(size_t n_attrs, const rlx_attr *attrs, const char *name) {
  for (size_t i = 0; attrs && name && i < n_attrs; i++)
    if (attrs[i].name && strcmp(attrs[i].name, name) == 0) return &attrs[i];
  return NULL;
}

rlx_status *rlx_custom_attrs(const rlx_node *n, rlx_attr **out, size_t *count) {
  rlx_attr *a = calloc(n->n_attrs ? n->n_attrs : 1, sizeof *a);
  if (!a) return RLX_OOM();
  size_t k = 0;
  for (uint32_t i = 0; i < n->n_attrs; i++) {
    const rlx_attr_val *v = &n->attrs[i];
    if (strcmp(v->name, "name") == 0) continue;
    a[k++] = (rlx_attr){.name = v->name, .kind = v->kind, .i = v->i, .f = v->f, .n = v->n, .ints = v->ints,
                        .floats = v->floats, .s = v->s, .graph = v->graph};
  }
  *out = a;
  *count = k;
  return NULL;
}
