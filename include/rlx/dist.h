/* rlx/dist.h: distributed execution over MLX's distributed module (mlx::core::distributed).
 *
 * A group is the set of processes of one launch (`rlx launch`, `mpirun`, or MLX's own launcher).
 * rlx_dist_init joins it through one of MLX's backends:
 * - ring: TCP between neighbours on a ring. MLX reads MLX_HOSTFILE (a JSON list, per rank, of
 *   "ip:port" strings: [["127.0.0.1:5000"], ["127.0.0.1:5001"]]) and MLX_RANK. CPU only.
 *   Collectives: all_sum/max/min (every dtype), all_gather. Point to point only between ring
 *   neighbours (rank +- 1 mod size). No split, no sum_scatter.
 * - mpi: Open MPI, loaded by MLX at run time (dlopen of libmpi.so, or MLX_MPI_LIBNAME); detected
 *   through the variables mpirun sets (OMPI_COMM_WORLD_SIZE, PMIX_RANK). CPU only. Collectives:
 *   all_sum/max/min (not of bool: MPI has no arithmetic on MPI_C_BOOL), all_gather; point to
 *   point between any ranks; split. No sum_scatter. At most INT_MAX elements per call.
 * - nccl: NVIDIA NCCL on CUDA GPUs (the mlx-cuda wheels). MLX reads NCCL_HOST_IP, NCCL_PORT (rank
 *   0's bootstrap address), MLX_RANK and MLX_WORLD_SIZE; rank r uses GPU r % device count.
 *   Collectives: all_sum/max/min, all_gather, sum_scatter of int8/uint8/int32/uint32/int64/
 *   uint64/float16/bfloat16/float32 (NCCL has float64, MLX's CUDA backend does not); split. No
 *   point to point.
 * What a backend cannot do fails with UNIMPLEMENTED naming the backend and the op, before MLX is
 * called. MLX's NCCL backend ends the process (exit(1)) when a CUDA or NCCL call fails (e.g. a
 * peer that dies during a collective, a device out of memory); rlx cannot turn those into
 * statuses. Everything rlx can check beforehand (dtypes, shapes, ops, env) it checks.
 *
 * Singleton group: without a launcher (none of the variables above set) and `strict` false, init
 * returns a group of size 1 without touching MLX; every collective on it returns its input
 * (all_gather and sum_scatter too), barrier returns at once, and point to point fails (there is no
 * peer). With `strict` true the same situation is UNAVAILABLE.
 *
 * Host collectives (this header) copy host tensors in and out and return when the operation has
 * completed. The graph ops AllReduce, AllGather and ReduceScatter (rlx/op_table.h) run the same
 * MLX operations on device arrays inside executables; rlx_executable_set_group picks the group.
 *
 * Failures and timeouts: every call that communicates is bounded by the group's timeout
 * (rlx_dist_group_set_timeout; default RLX_DIST_TIMEOUT seconds from the environment, else 120).
 * When it expires, or when a collective fails while communicating (a peer exited: "[ring]
 * connection to a peer was lost"; errors INTERNAL, UNAVAILABLE, RESOURCE_EXHAUSTED, DATA_LOSS),
 * rlx aborts the group (errors found before any communication, e.g. UNIMPLEMENTED, do not): it shuts down the group's sockets (ring), so its neighbours fail
 * at once too and the failure travels around the ring; every later call on the group fails with
 * UNAVAILABLE naming the first failure. Initialization is bounded the same way (a rank that never
 * starts). The mpi backend has no sockets rlx can shut down: there Open MPI's own fault handling
 * applies (mpirun terminates every rank when one exits without MPI_Finalize: the others get no
 * error status), and rlx's timeout only turns a late completion into an error: a rank that hangs
 * leaves the others blocked inside MPI past the timeout (MPI has no cancellation; bound such
 * jobs from outside, e.g. mpirun --timeout). Shutting sockets down is how rlx interrupts MLX's ring
 * threads (MLX has no cancellation); the sockets are the ones opened during rlx_dist_init, so
 * other threads must not open sockets while a ring group initializes. MLX's ring writes to its
 * sockets without MSG_NOSIGNAL, so ring init sets SIGPIPE to ignored when its disposition is the
 * default (a dead peer then fails the collective instead of killing the process). A ring rank
 * that cannot reach its right neighbour waits for MLX's own connect retries (about 31 s) whatever
 * the timeout; one that waits for its left neighbour is bounded by the timeout.
 *
 * Thread-safety: init and free are serialized internally; calls on one group must come from one
 * thread at a time (collectives are matched by order across ranks, so concurrent calls on one group
 * would mismatch anyway). Distinct groups may be used concurrently.
 */
#ifndef RLX_DIST_H
#define RLX_DIST_H

#include "rlx/executable.h"
#include "rlx/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rlx_dist_backend {
  RLX_DIST_ANY = 0, /* the launcher's: nccl (GPU and its variables), else ring, else mpi */
  RLX_DIST_RING = 1,
  RLX_DIST_MPI = 2,
  RLX_DIST_NCCL = 3,
  RLX_DIST_SINGLETON = 4, /* only reported by rlx_dist_group_backend: no launcher */
} rlx_dist_backend;

/* "any", "ring", "mpi", "nccl", "singleton"; "invalid" outside the enum. */
const char *rlx_dist_backend_name(rlx_dist_backend b);
/* Parses "any", "ring", "mpi" or "nccl". INVALID_ARGUMENT naming the text otherwise. */
RLX_MUST_USE rlx_status *rlx_dist_backend_from_name(const char *name, rlx_dist_backend *out);
/* Whether MLX has backend b (built in, and for mpi: libmpi loadable). RLX_DIST_ANY: any of them.
 * Says nothing about a launcher. */
bool rlx_dist_is_available(rlx_dist_backend b);

typedef struct rlx_dist_group rlx_dist_group;

/* Joins the launch's group through `backend` (see above for what each reads). Checks first:
 * ring: MLX_HOSTFILE readable JSON of the documented form (every rank the same number of
 * "host:port" addresses, ports 1..65535), MLX_RANK an integer in [0, entries); nccl:
 * MLX_WORLD_SIZE an integer >= 1 and MLX_RANK in [0, it). A hostfile of one entry gives the
 * singleton group. Errors: INVALID_ARGUMENT (a bad hostfile or variable, naming it and the
 * problem), UNAVAILABLE (strict without a launcher, a backend MLX lacks, MLX's own init failure
 * such as a peer that cannot be reached, or no peer within the timeout). *out untouched on
 * failure. Release with rlx_dist_group_free. */
RLX_MUST_USE rlx_status *rlx_dist_init(rlx_dist_backend backend, bool strict, rlx_dist_group **out);

/* Releases the handle (MLX keeps the backend's connections until the process exits; a later
 * init returns the same group). Clears it as the default group if it was. NULL accepted. */
void rlx_dist_group_free(rlx_dist_group *g);

/* This process's rank in [0, size), the group size, the backend in use. g not NULL. */
int rlx_dist_group_rank(const rlx_dist_group *g);
int rlx_dist_group_size(const rlx_dist_group *g);
rlx_dist_backend rlx_dist_group_backend(const rlx_dist_group *g);

/* Sets the timeout in seconds (> 0, finite) of every later communicating call on g. Errors:
 * INVALID_ARGUMENT for other values. */
RLX_MUST_USE rlx_status *rlx_dist_group_set_timeout(rlx_dist_group *g, double seconds);

/* Group::split: processes passing the same color form a new group, ordered by key (key < 0: by
 * rank in g). Every process of g must call it. Errors: UNIMPLEMENTED (ring, naming it), UNAVAILABLE
 * (g failed earlier, MLX failure). The singleton group splits into a singleton. */
RLX_MUST_USE rlx_status *rlx_dist_split(rlx_dist_group *g, int color, int key, rlx_dist_group **out);

/* ---- collectives on host tensors: every rank calls them in the same order with tensors of the
 * same dtype and shape (not checked across ranks: a mismatch is undefined, as in MPI). The result
 * is a new tensor (*out, caller-owned). Common errors: INVALID_ARGUMENT (NULL arguments),
 * UNIMPLEMENTED (op or dtype the backend lacks, naming both), UNAVAILABLE (the group failed now or
 * earlier, or the timeout expired, naming the cause). *out untouched on failure. ---- */

/* Elementwise sum / maximum / minimum over the ranks; result of x's type. Integer sums wrap. The
 * low-precision storage types (rlx_dtype_is_lowp: float8, float4, int4, ...) are UNIMPLEMENTED
 * (they have no device arithmetic; all_gather and point to point move them as bytes). The
 * ring backend reduces a tensor with fewer elements than ranks only when ranks * element size
 * <= 1024 bytes (MLX's fixed buffer), else UNIMPLEMENTED. */
RLX_MUST_USE rlx_status *rlx_dist_all_sum(rlx_dist_group *g, const rlx_tensor *x, rlx_tensor **out);
RLX_MUST_USE rlx_status *rlx_dist_all_max(rlx_dist_group *g, const rlx_tensor *x, rlx_tensor **out);
RLX_MUST_USE rlx_status *rlx_dist_all_min(rlx_dist_group *g, const rlx_tensor *x, rlx_tensor **out);
/* The ranks' tensors concatenated along axis 0 in rank order: x[d0, ...] -> [size*d0, ...]; a
 * rank-0 x gives [size]. */
RLX_MUST_USE rlx_status *rlx_dist_all_gather(rlx_dist_group *g, const rlx_tensor *x, rlx_tensor **out);
/* The sum over ranks of x[d0, ...], split along axis 0 into size equal chunks; rank r gets chunk
 * r, [d0/size, ...]. INVALID_ARGUMENT when x has rank 0 or d0 is not a multiple of the size;
 * UNIMPLEMENTED on ring and mpi (MLX has it on nccl only). */
RLX_MUST_USE rlx_status *rlx_dist_sum_scatter(rlx_dist_group *g, const rlx_tensor *x, rlx_tensor **out);
/* Returns when every rank has entered the barrier (an all_sum of one int32). */
RLX_MUST_USE rlx_status *rlx_dist_barrier(rlx_dist_group *g);

/* ---- point to point ----
 * A message is a frame: a fixed header (magic, format version, dtype, rank, dims, byte length;
 * int64 little-endian) followed by the payload bytes, so the receiver needs no prior knowledge
 * of the size or type. Ordering: messages from one sender to one receiver arrive in the order
 * they were sent (FIFO per ordered pair of ranks); there are no tags and no ordering between
 * different pairs. send returns when the frame has been handed to the transport; large frames
 * may wait there until the peer receives, so two ranks that exchange large messages must not
 * both send first (e.g. even ranks send first, odd ranks receive first). ring: only to and from
 * the two ring neighbours (any other peer is UNIMPLEMENTED naming both ranks); nccl:
 * UNIMPLEMENTED. Errors also: INVALID_ARGUMENT (peer outside [0, size) or equal to the own
 * rank; a received header that is not an rlx frame, naming what was wrong), UNAVAILABLE. */

/* Sends tensor x (borrowed for the call) to rank dst. */
RLX_MUST_USE rlx_status *rlx_dist_send(rlx_dist_group *g, const rlx_tensor *x, int dst);
/* Receives the next frame from rank src as a new tensor of the sender's dtype and shape. */
RLX_MUST_USE rlx_status *rlx_dist_recv(rlx_dist_group *g, int src, rlx_tensor **out);
/* Sends n raw bytes (a uint8[n] frame; data may be NULL when n is 0). */
RLX_MUST_USE rlx_status *rlx_dist_send_bytes(rlx_dist_group *g, int dst, const void *data, size_t n);
/* Receives the next frame from src as raw bytes: *out_data (malloc'ed, release with free(); NULL
 * when empty) and *out_n. Frames of any dtype are accepted (their bytes). Out params untouched
 * on failure. */
RLX_MUST_USE rlx_status *rlx_dist_recv_bytes(rlx_dist_group *g, int src, void **out_data, size_t *out_n);

/* ---- graphs ----
 * Executables whose graphs contain AllReduce, AllGather or ReduceScatter (or the custom op
 * "collective.all_reduce") run them over a group: the one set here, else the default group (the
 * first group rlx_dist_init returned that has not been freed). The group is borrowed: it must
 * outlive the executable's runs. A graph op whose group_size attribute is not 0 must match the
 * group's size (else the run fails with FAILED_PRECONDITION naming the node). Runs of such
 * executables, and syncs of their committed runs (rlx_executable_sync), are bounded by the
 * group's timeout and abort the group on failure, as above; once the group has failed, runs fail
 * before MLX is called.
 * Setting a group drops a compiled function (its trace holds the old one). Errors:
 * INVALID_ARGUMENT (NULL ex). g NULL goes back to the default. */
RLX_MUST_USE rlx_status *rlx_executable_set_group(rlx_executable *ex, rlx_dist_group *g);

/* Registers the custom op "collective.all_reduce" (the reference system's name; rlx/registry.h):
 * one input of any type, output of the same type, the sum over the executable's group (an
 * AllReduce node with kind sum). Idempotent. Errors: RESOURCE_EXHAUSTED. */
RLX_MUST_USE rlx_status *rlx_dist_register_ops(void);

#define RLX_DIST_ALL_REDUCE_OP "collective.all_reduce"

#ifdef __cplusplus
}
#endif
#endif
