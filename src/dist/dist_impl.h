/* dist_impl.h: what the MLX lowering and the executable need from src/dist. Internal. */
#ifndef RLX_DIST_DIST_IMPL_H
#define RLX_DIST_DIST_IMPL_H

#include "mlx/shim/shim_dist.h"
#include "rlx/dist.h"

/* The default group (rlx/dist.h) or NULL. Borrowed. */
rlx_dist_group *rlx_dist_default_group(void);

/* The MLX group of g; NULL for the singleton group (collectives are the identity there). */
rlx_mx_group *rlx_dist_mx(const rlx_dist_group *g);

/* UNAVAILABLE (naming the first failure) when g was aborted earlier; NULL otherwise. */
RLX_MUST_USE rlx_status *rlx_dist_check_failed(const rlx_dist_group *g);

/* Checks that g can run collective `kind` on an operand of type t (see rlx/dist.h): UNAVAILABLE
 * when g failed earlier, UNIMPLEMENTED for what the backend lacks (naming backend, op and dtype),
 * INVALID_ARGUMENT for a sum_scatter operand whose axis 0 does not split into size chunks. NULL
 * when the call may go to MLX (or needs no communication: size 1). */
RLX_MUST_USE rlx_status *rlx_dist_check(const rlx_dist_group *g, rlx_mx_coll kind, const rlx_type *t);

/* Arms g's timeout for a communicating evaluation about to start. */
void rlx_dist_watch_begin(rlx_dist_group *g);
/* Disarms it. `st` is the evaluation's result (consumed). When the timeout expired, or st is an
 * error raised while communicating (INTERNAL, UNAVAILABLE, RESOURCE_EXHAUSTED, DATA_LOSS), the
 * group is aborted and the returned status says why; other errors come back unchanged. */
RLX_MUST_USE rlx_status *rlx_dist_watch_end(rlx_dist_group *g, rlx_status *st);

#endif
