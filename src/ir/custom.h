/* custom.h: the custom-op registry's internal side (src/ir/registry.c), shared by the Custom op's
 * inference (src/ir/infer_custom.c) and lowering (src/mlx/lower_custom.c). */
#ifndef RLX_IR_CUSTOM_H
#define RLX_IR_CUSTOM_H

#include "ir/ir.h"
#include "rlx/registry.h"

/* One registration; lives until its last reference is released. */
typedef struct rlx_custom_entry rlx_custom_entry;

/* The registration of `name` with a reference taken (release it with rlx_custom_release), or
 * NULL when none is registered. */
const rlx_custom_entry *rlx_custom_acquire(const char *name);
void rlx_custom_release(const rlx_custom_entry *e);
/* The definition of a registration (valid while the reference is held). */
const rlx_custom_op_def *rlx_custom_def(const rlx_custom_entry *e);

/* The attributes of Custom node n other than `name`, as borrowed rlx_attr values in a malloc'ed
 * array (*out, *n; free it). RESOURCE_EXHAUSTED on allocation failure. */
RLX_MUST_USE rlx_status *rlx_custom_attrs(const rlx_node *n, rlx_attr **out, size_t *count);

/* Checks a CUDA launch against the limits of rlx/registry.h (INVALID_ARGUMENT saying which). */
rlx_status *rlx_custom_check_launch(const rlx_custom_cuda_launch *l);

/* Registers a built-in op (src/kernels/); only from the registry's start-up. */
rlx_status *rlx_custom_register_builtin(const rlx_custom_op_def *def);
/* src/kernels/batched_dense_solve.c */
rlx_status *rlx_kernel_register_batched_dense_solve(void);

#endif
