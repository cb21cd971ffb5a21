/* exec_caps.h: what a graph allows its executable to do, decided per node (internal).
 *
 * - Shapeless compile: a node qualifies when its types never change with the symbols, or when its
 *   lowering composes only MLX ops that infer their output shapes from their inputs (nothing
 *   sized from the bound types is baked into the trace).
 * - Active extent: a node qualifies when it keeps the rows of axis 0 independent, so that
 *   computing the first `actual` rows of its inputs gives the first `actual` rows of its outputs.
 */
#ifndef RLX_MLX_EXEC_CAPS_H
#define RLX_MLX_EXEC_CAPS_H

#include "ir/ir.h"

/* NULL when every node of g qualifies for shapeless compile; else UNIMPLEMENTED naming the first
 * node that does not and why. */
RLX_MUST_USE rlx_status *rlx_exec_check_shapeless(const rlx_graph *g);

/* NULL when g keeps the rows of axis 0 independent for inputs whose declared dim 0 is `upper`;
 * else UNIMPLEMENTED naming the first node that does not and why, or saying that no input has
 * that dim 0 (naming an input whose dim 0 is symbolic). */
RLX_MUST_USE rlx_status *rlx_exec_check_extent(const rlx_graph *g, int64_t upper);

#endif
