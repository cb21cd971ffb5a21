/* rlx/rlx.h: the umbrella header of rlx, a C library that compiles ML graphs and runs them on
 * MLX (CPU backend by default, CUDA backend on NVIDIA GPUs).
 *
 * Conventions, for the whole API:
 * - Errors: every fallible function returns `rlx_status *`; NULL is success. A failure carries a
 *   canonical code and a message naming what was wrong (rlx/status.h). Nothing aborts, exits or
 *   throws on bad input.
 * - Ownership: each `_create` (and `rlx_onnx_import`) has one `_free`; `_free(NULL)` is a no-op.
 *   Out-parameters are the last parameters, named `out*`; a failed call leaves them untouched and
 *   leaks nothing. Objects returned through an out-parameter are owned by the caller. Pointers
 *   returned by accessors (names, types, tensor data) are borrowed and live as long as the object
 *   they came from, unchanged. Inputs passed by pointer are borrowed for the call only, unless a
 *   function says it copies or takes them (sub-graph attributes move into their node).
 * - Sizes: dims are int64_t, counts size_t, byte sizes size_t; arithmetic on sizes from files is
 *   overflow-checked.
 * - Threads: see each header; graphs and tensors may be read concurrently, executables serialize
 *   calls on themselves and run concurrently with each other.
 */
#ifndef RLX_RLX_H
#define RLX_RLX_H

#define RLX_VERSION "0.1.0"

#include "rlx/dist.h"
#include "rlx/calibrate.h"
#include "rlx/executable.h"
#include "rlx/gguf.h"
#include "rlx/graph.h"
#include "rlx/llm.h"
#include "rlx/npy.h"
#include "rlx/onnx.h"
#include "rlx/optimize.h"
#include "rlx/registry.h"
#include "rlx/status.h"
#include "rlx/tensor.h"
#include "rlx/types.h"

#endif
