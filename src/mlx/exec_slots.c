/* exec_slots.c: the slot arena: positional raw-byte inputs, outputs written at fixed offsets. */
#include <stdlib.h>
#include <string.h>

#include "mlx/exec.h"

static rlx_status *no_arena(const rlx_executable *ex) {
  return RLX_ERR(FAILED_PRECONDITION, "no slot arena: output '%s' has symbolic dims", ex->no_arena);
}

/* Allocates the arena (zero-filled) on first use; call with ex->mu held. */
static rlx_status *ensure_arena(rlx_executable *ex) {
  if (ex->no_arena) return no_arena(ex);
  if (ex->arena) return NULL;
  ex->arena = aligned_alloc(64, ex->arena_size);
  if (!ex->arena) return RLX_ERR(RESOURCE_EXHAUSTED, "slot arena of %zu bytes: out of memory", ex->arena_size);
  memset(ex->arena, 0, ex->arena_size);
  return NULL;
}

rlx_status *rlx_executable_arena(rlx_executable *ex, rlx_arena *out) {
  if (!ex || !out) return RLX_ERR(INVALID_ARGUMENT, "rlx_executable_arena: NULL argument");
  pthread_mutex_lock(&ex->mu);
  rlx_status *st = ensure_arena(ex);
  if (!st) *out = (rlx_arena){.base = ex->arena, .nbytes = ex->arena_size};
  pthread_mutex_unlock(&ex->mu);
  return st;
}

rlx_status *rlx_executable_output_slot(const rlx_executable *ex, size_t i, size_t *out_offset, size_t *out_nbytes) {
  if (!ex || !out_offset || !out_nbytes) return RLX_ERR(INVALID_ARGUMENT, "rlx_executable_output_slot: NULL argument");
  if (i >= ex->g->n_outputs) return RLX_ERR(OUT_OF_RANGE, "output %zu: the graph has %zu outputs", i, ex->g->n_outputs);
  if (ex->no_arena) return no_arena(ex);
  *out_offset = ex->slot_off[i];
  *out_nbytes = ex->slot_nbytes[i];
  return NULL;
}

static rlx_status *source_slots(rlx_executable *ex, size_t n, const void *const *inputs) {
  const rlx_graph *g = ex->g;
  if (n != g->n_inputs) return RLX_ERR(INVALID_ARGUMENT, "run_slots: %zu inputs given, the graph has %zu", n, g->n_inputs);
  if (n && !inputs) return RLX_ERR(INVALID_ARGUMENT, "run_slots: inputs is NULL");
  for (size_t i = 0; i < n; i++) {
    exec_input *in = &ex->in[i];
    if (!inputs[i]) continue;
    if (!rlx_type_is_static(in->decl))
      return RLX_ERR(INVALID_ARGUMENT, "run_slots: input '%s' (%s) has symbolic dims: bind it as a handle and pass NULL", in->name,
                     RLX_TYPE_STR(in->decl));
    in->given = true;
    in->data = inputs[i];
    in->type = *in->decl;
  }
  return rlx_exec_source_handles(ex);
}

/* Copies the outputs whose readback is on into their slots (a row-cut output fills a prefix). */
static rlx_status *write_slots(rlx_executable *ex) {
  const rlx_graph *g = ex->g;
  for (size_t i = 0; i < g->n_outputs; i++) {
    if (!rlx_exec_reads_back(ex, i)) continue;
    size_t nb;
    RLX_TRY(rlx_type_nbytes(&ex->rt[g->outputs[i]], &nb));
    if (nb > ex->slot_nbytes[i]) return RLX_ERR(INTERNAL, "output %zu ('%s') outgrew its slot", i, g->output_names[i]);
    if (!rlx_mx_to_host(ex->ctx, ex->outs[i], ex->arena + ex->slot_off[i], nb))
      return rlx_status_annotate(rlx_mx_take_error(ex->ctx), "output %zu ('%s')", i, g->output_names[i]);
  }
  return NULL;
}

rlx_status *rlx_executable_run_slots(rlx_executable *ex, size_t n_inputs, const void *const *inputs) {
  if (!ex) return RLX_ERR(INVALID_ARGUMENT, "rlx_executable_run_slots: NULL executable");
  pthread_mutex_lock(&ex->mu);
  rlx_exec_clear_sources(ex);
  rlx_status *st = ensure_arena(ex);
  if (!st) st = source_slots(ex, n_inputs, inputs);
  if (!st) st = rlx_exec_execute(ex, false);
  if (!st) st = rlx_exec_apply_feeds(ex);
  if (!st) st = write_slots(ex);
  rlx_mx_reset(ex->ctx);
  pthread_mutex_unlock(&ex->mu);
  return st;
}
