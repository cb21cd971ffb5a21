/* exec.h: the executable's state and run pipeline, shared by executable.c (modes, params, runs,
 * commits), exec_pipeline.c (the pipeline below), exec_handles.c (handles and feeds) and
 * exec_slots.c (slot arena). Internal.
 *
 * A run: the caller's entry point fills each input's source (a passed tensor, raw slot bytes or a
 * handle), then rlx_exec_execute binds symbols and types, builds the leaves, lowers the graph or
 * calls the compiled function and evaluates (or, for a commit, schedules) the outputs, and
 * rlx_exec_apply_feeds moves fed outputs into device handles. Everything runs under ex->mu. */
#ifndef RLX_MLX_EXEC_H
#define RLX_MLX_EXEC_H

#include <pthread.h>

#include "mlx/lower.h"
#include "rlx/dist.h"
#include "rlx/executable.h"

#define RLX_EXEC_MAX_SYMBOLS 64
#define RLX_EXEC_MAX_RNG 1024 /* Sample nodes per graph (sub-graphs included) */
/* Unsynced commits whose index checks wait for the sync; a further commit reads them first. */
#define RLX_EXEC_MAX_PENDING_CHECKS 64

/* A param of the graph or of any of its sub-graphs (sub-graph params resolve by name). */
typedef struct exec_param {
  const char *name;
  rlx_type type;
  rlx_mx_arr *val; /* kept, evaluated; NULL until set */
} exec_param;

typedef struct exec_input {
  const char *name;
  rlx_value val;
  const rlx_type *decl; /* declared type (dims may be symbolic) */
  rlx_tensor *host;     /* host handle (owned copy) or NULL */
  rlx_mx_arr *dev;      /* device handle (kept) or NULL */
  size_t feed;          /* output that becomes `dev` after each run, or RLX_NO_FEED */
  bool donate;          /* `dev` is given to the run that reads it (rlx_executable_set_handle_donation) */
  bool scatter_only;    /* read by one node only, a ScatterElements without reduction, as its data */
  bool attention_reads; /* ... whose result is read only by Attentions (as k or v, heads first) and graph outputs */
  /* this run's source (when `given`): a device array `arr`, else host bytes `data` (NULL for an
   * empty tensor), of type `type` */
  bool given;
  const void *data;
  rlx_mx_arr *arr;
  rlx_type type;
} exec_input;

struct rlx_executable {
  const rlx_graph *g;
  rlx_device device;
  rlx_mode mode;
  bool shapeless;
  rlx_precision precision; /* resolved: FP32 or TF32 (exec_precision.c) */
  pthread_mutex_t mu;

  exec_param *params;
  size_t n_params;
  size_t *gparam; /* per param node of g: its index in params */
  exec_input *in; /* per graph input, declaration order */
  rlx_value *consts; /* constant values, node order */
  size_t n_consts;
  rlx_mx_arr **const_arr; /* kept constant arrays, made on first use */

  /* types: `types` at the bound symbol sizes; `ext_types` with the active extent applied; `rt`
   * points at the types of the current run. */
  rlx_type *types;
  int64_t syms[RLX_EXEC_MAX_SYMBOLS];
  int64_t n_syms;
  bool bound;
  uint64_t bind_gen; /* bumped whenever `types` is re-bound */
  rlx_type *ext_types;
  const rlx_type *rt;

  rlx_mx_fn *compiled;
  size_t n_traces;

  /* random streams of the Sample nodes (exec_random.c): rng.keys are this run's current keys */
  rlx_rng rng;
  rlx_mx_arr **rng_state;     /* per stream: the key the next run starts from (kept), NULL until first use */
  rlx_mx_arr **rng_call_outs; /* the graph outputs, then the advanced keys, then the index check */
  bool rng_frozen;            /* warmup: runs leave the streams where they are */

  /* per-run scratch, sized once */
  rlx_mx *ctx;        /* reused by every run (rlx_mx_reset) */
  rlx_mx_arr **vals;  /* per value */
  bool *cl;           /* per value: channels-last flags of the lowering (lower.h), when channels_last */
  bool channels_last; /* lower convolution chains channels-last (default on a GPU; RLX_LAYOUT) */
  /* weights in a kernel's layout (exec_layout.c): value, leaf of the constant or param it is made
   * from, the kept array (NULL until made; dropped when the param is set), kind (RLX_WL_*);
   * w_last / w_packed per value (the lowering's, lower.h) */
  rlx_value *wl_val;
  size_t *wl_leaf;
  rlx_mx_arr **wl_arr;
  unsigned char *wl_kind;
  size_t n_wl;
  rlx_mx_arr **w_last;
  rlx_mx_arr **w_packed;
  /* repacked DequantMatMul weights (exec_repack.c): per entry the first node reading them, the
   * leaves of its weight inputs and the kept operands (w NULL until made; dropped when one of
   * its params is set); per node its entry (SIZE_MAX: none); per value the lowering's (lower.h) */
  const rlx_node **rp_node;
  size_t (*rp_leaf)[3];
  rlx_l_qmm *rp_arr;
  size_t n_rp;
  size_t *rp_at;
  rlx_l_qmm *qmm;
  /* conv epilogues of lazy runs (lower.h, rlx_l_epilogue; made with the channels-last lowering) */
  rlx_l_epilogue epi;
  uint32_t *uses;
  bool *inplace;      /* per value: an input whose ScatterElements writes it in place (lower.h;
                       * rlx_exec_plan_inplace) */
  rlx_mx_arr **cur;   /* per param: what the current lowering reads (value or trace leaf) */
  rlx_mx_arr **leaves;/* inputs, constants, params */
  rlx_mx_arr **outs;  /* per output, in ctx; outs[n_outputs]: this run's index check vector (lower.h) or NULL */
  rlx_l_checks checks;/* index check sites, kept across runs and traces */
  bool no_index_checks; /* rlx_executable_set_index_checks(ex, false) */
  signed char *readback; /* per output: 1 on, 0 off, -1 default (off when it feeds a handle) */
  bool *unwanted;        /* per output: not evaluated nor read back unless it feeds a handle */
  rlx_type *out_types;/* per output: this run's output types */
  rlx_tensor **res;   /* per output: tensors being read back */

  /* the committed runs not yet synced, oldest first: run r's outputs at pending[r * n_outputs ..] */
  rlx_mx_arr **pending; /* per run and output, kept (room for one run more than max_pending) */
  rlx_type *pending_types;
  uint64_t pending_seq[RLX_MAX_PENDING + 1]; /* each run's commit number */
  size_t n_pending, max_pending;
  uint64_t n_commits;
  struct {
    rlx_mx_arr *vec; /* a kept index check vector of a run committed and not yet checked */
    uint64_t seq;    /* that run's commit number */
  } *pending_checks;
  size_t n_pending_checks, cap_pending_checks;

  /* slot arena: laid out at creation, allocated on first use; none when an output is symbolic */
  unsigned char *arena;
  size_t arena_size;
  size_t *slot_off, *slot_nbytes;
  const char *no_arena; /* name of the symbolic output, or NULL */

  /* active extent */
  int64_t ext_actual, ext_upper; /* 0, 0: none */
  char *ext_reason;              /* why it does not apply (owned), NULL when it does */
  bool ext_graph_ok;             /* the graph passed rlx_exec_check_extent for ext_upper */
  int64_t ext_cached_actual;     /* ext_types hold this extent ... */
  uint64_t ext_cached_gen;       /* ... at this binding; 0: nothing cached */
  bool ext_cached_ok;

  /* allocation limit (exec_memory.c): bytes, and the binding whose node outputs passed the check
   * (alloc_gen: bind_gen then, 0 for none; alloc_key: the active extent's actual size then, or -1) */
  size_t max_alloc;
  uint64_t alloc_gen;
  int64_t alloc_key;
  /* at that binding, some node output has no elements: a compiled executable then runs that
   * binding lazily (exec_pipeline.c) */
  bool empty_outputs;

  /* distributed (exec_dist.c) */
  rlx_dist_group *group; /* set by rlx_executable_set_group (borrowed), NULL: the default group */
  bool collective;       /* the graph has collective ops: runs go through the group's watchdog */
};

/* Index of param `name` in ex->params (ex->n_params when absent). */
size_t rlx_exec_param_index(const rlx_executable *ex, const char *name);
/* The leaf index (ex->leaves) of the constant or graph param holding value v, or SIZE_MAX. */
size_t rlx_exec_leaf_of(const rlx_executable *ex, rlx_value v);
/* The number of leaves of a run: inputs, constants, params, random keys, channels-last conv
 * weights, repacked DequantMatMul weights (3 per entry). */
size_t rlx_exec_num_leaves(const rlx_executable *ex);
/* Clears every input's source for a new run. */
void rlx_exec_clear_sources(rlx_executable *ex);
/* Makes tensors values[j] the sources of inputs names[j] (NOT_FOUND for an unknown name,
 * INVALID_ARGUMENT for a repeated or NULL one), then the handles those of the other inputs. */
RLX_MUST_USE rlx_status *rlx_exec_source_named(rlx_executable *ex, size_t n, const char *const *names, rlx_tensor *const *values);
/* Gives inputs without a source their device or host handle; INVALID_ARGUMENT naming an input
 * that has neither. */
RLX_MUST_USE rlx_status *rlx_exec_source_handles(rlx_executable *ex);
/* Binds, lowers (or calls the compiled function) and evaluates the outputs and the index checks,
 * failing with their OUT_OF_RANGE; async schedules them instead (mlx::core::async_eval) and leaves
 * reading the checks to the sync. On success ex->outs hold the outputs (in the graph's declared
 * dtypes) and the check, and ex->rt their types. */
RLX_MUST_USE rlx_status *rlx_exec_execute(rlx_executable *ex, bool async);
/* Moves fed outputs (ex->outs) into their inputs' device handles; checks every feed first. */
RLX_MUST_USE rlx_status *rlx_exec_apply_feeds(rlx_executable *ex);
/* Drops the executable's references to the device handles this run reads that are donated
 * (rlx_executable_set_handle_donation): called once the outputs are built, before evaluating. */
void rlx_exec_donate_handles(rlx_executable *ex);
/* In-place cache writes (kernel_scatter.cpp). Init: marks the inputs whose only reader is a
 * ScatterElements without reduction reading them as its data. Plan (each run, before lowering):
 * such an input is written in place when the run is lazy or compiled and its device handle is
 * donated and fed by an output that is not read back, is no other output and feeds no other input;
 * a change of plan drops the compiled function. Leaves (after make_leaves): the leaf of such an
 * input is replaced by a copy of its own when it is not row-contiguous or shares its buffer with
 * a result a pending run will read back. */
rlx_status *rlx_exec_inplace_init(rlx_executable *ex);
void rlx_exec_plan_inplace(rlx_executable *ex);
void rlx_exec_inplace_leaves(rlx_executable *ex, rlx_mx *c);
/* Uploads `value` to the device, evaluates it and makes it *slot (releasing the old array); *slot
 * is unchanged on failure. */
RLX_MUST_USE rlx_status *rlx_exec_upload(rlx_executable *ex, const rlx_tensor *value, rlx_mx_arr **slot);
/* Index of input `name`, or NOT_FOUND listing the inputs. */
RLX_MUST_USE rlx_status *rlx_exec_find_input(const rlx_executable *ex, const char *name, size_t *out);
/* Whether runs copy output i back to the host (rlx_executable_set_output_readback's rule). */
bool rlx_exec_reads_back(const rlx_executable *ex, size_t i);
/* Whether runs evaluate output i: wanted (rlx_executable_set_output_wanted), or feeding a handle. */
bool rlx_exec_output_seen(const rlx_executable *ex, size_t i);
/* Records why the active extent does not apply (takes `why`; NULL: it applies). */
void rlx_exec_set_extent_reason(rlx_executable *ex, rlx_status *why);
/* exec_dist.c: whether g has collective ops (AllReduce, AllGather, ReduceScatter, the custom op
 * collective.all_reduce), and the group a run of ex uses (NULL when none). */
bool rlx_exec_has_collective(const rlx_graph *g);
rlx_dist_group *rlx_exec_group(const rlx_executable *ex);
/* Drops the compiled function (its trace holds arrays and groups of the old settings). */
void rlx_exec_drop_compiled(rlx_executable *ex);
/* Random streams (exec_random.c): finds the Sample nodes (at creation); frees the streams; writes
 * the keys each stream starts this run with to keys[0..rng.n) (making the first ones); keeps the
 * advanced keys ex->rng.keys (arrays of c) as the streams' next keys. */
rlx_status *rlx_exec_rng_init(rlx_executable *ex);
void rlx_exec_rng_free(rlx_executable *ex);
void rlx_exec_rng_leaves(rlx_executable *ex, rlx_mx *c, rlx_mx_arr **keys);
rlx_status *rlx_exec_rng_commit(rlx_executable *ex, rlx_mx *c);
/* INVALID_ARGUMENT unless tensor type `got` fits declared type `want` (symbolic dims fit any size). */
RLX_MUST_USE rlx_status *rlx_exec_check_type(const char *what, const char *name, const rlx_type *want, const rlx_type *got);
/* Weights in a kernel's layout (exec_layout.c): whether the channels-last lowering is on for
 * `device` (RLX_LAYOUT); at creation, the weights that are (or are made from) constants or params
 * (after consts and params are known): the channels-last conv weights and the conv epilogue
 * function with that lowering, the packed MatMul right operands, the Winograd transforms of 3x3
 * Conv weights and the rows8 forms of DequantMatMul weights on the CPU; freeing; dropping the
 * weights made from param k; this run's weight leaves out[0..n_wl) (made and kept on first use,
 * from ex->leaves' constants and params; errors go to c); binding them to ex->w_last and
 * ex->w_packed. */
enum { /* channels-last; GEMM panels of W, of W^T; Winograd transform of a 3x3 conv's W; rows8 form of W, plus its
        * rlx_mx_matvec scheme */
       RLX_WL_LAST,
       RLX_WL_PACK,
       RLX_WL_PACK_T,
       RLX_WL_WINOGRAD,
       RLX_WL_ROWS8 };
RLX_MUST_USE rlx_status *rlx_exec_resolve_layout(rlx_device device, bool *out);
RLX_MUST_USE rlx_status *rlx_exec_layout_init(rlx_executable *ex);
void rlx_exec_layout_free(rlx_executable *ex);
void rlx_exec_layout_param_set(rlx_executable *ex, size_t k);
void rlx_exec_layout_leaves(rlx_executable *ex, rlx_mx *c, rlx_mx_arr **out);
void rlx_exec_layout_bind(rlx_executable *ex, rlx_mx_arr *const *leaves);
/* Repacked DequantMatMul weights (exec_repack.c), as the channels-last weights above: at creation,
 * the DequantMatMul / DequantGroupedMatMul nodes whose weight inputs are constants or params and
 * whose lowering may take quantized_matmul on repacked operands (rlx_l_dequant_repacks); freeing;
 * dropping those made from param k; this run's leaves out[0..3 n_rp) (made and kept on first use;
 * errors go to c); binding them to ex->qmm. */
RLX_MUST_USE rlx_status *rlx_exec_repack_init(rlx_executable *ex);
void rlx_exec_repack_free(rlx_executable *ex);
void rlx_exec_repack_param_set(rlx_executable *ex, size_t k);
void rlx_exec_repack_leaves(rlx_executable *ex, rlx_mx *c, rlx_mx_arr **out);
void rlx_exec_repack_bind(rlx_executable *ex, rlx_mx_arr *const *leaves);
/* The allocation limit (exec_memory.c): the default for `device` (RLX_MAX_ALLOCATION when set,
 * INVALID_ARGUMENT when it is not a size; else rlx_mx_device_memory), and the check of every node
 * output of the current run's types (ex->rt) against ex->max_alloc (RESOURCE_EXHAUSTED naming the
 * node, the output, its type, bytes and the limit); a binding that passed is not checked again. */
RLX_MUST_USE rlx_status *rlx_exec_default_max_allocation(rlx_device device, size_t *out);
RLX_MUST_USE rlx_status *rlx_exec_check_allocations(rlx_executable *ex);
/* What RLX_PRECISION_DEFAULT means now: TF32 when MLX_ENABLE_TF32 is set to a nonzero number, else FP32. */
rlx_precision rlx_exec_default_precision(void);
/* Before a GPU run: fixes this process's GPU float32 precision to p (FP32 or TF32) on first use,
 * FAILED_PRECONDITION when it is already fixed to the other (exec_precision.c). */
RLX_MUST_USE rlx_status *rlx_exec_claim_gpu_precision(rlx_precision p);

#endif
