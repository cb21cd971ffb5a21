/* dist_p2p.c: point-to-point send/recv of framed tensors and bytes (rlx/dist.h).
 *
 * Frame: a header int64[16] = {magic "RLXF", version 1, dtype, rank, payload bytes, dims[8], 0,
 * 0, 0}, then, when the payload is not empty, the payload as uint8[bytes]. Both go through MLX's
 * send/recv, which need the receiver to know each array's shape: the fixed header tells it the
 * payload's. */
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "dist/dist_impl.h"

#define FRAME_MAGIC 0x52584C52 /* "RLXR" little-endian */
#define FRAME_VERSION 1
#define FRAME_WORDS 16

/* Checks that this rank may exchange messages with `peer` on g. */
static rlx_status *check_peer(const rlx_dist_group *g, int peer, const char *op) {
  int rank = rlx_dist_group_rank(g), size = rlx_dist_group_size(g);
  rlx_dist_backend b = rlx_dist_group_backend(g);
  if (b == RLX_DIST_NCCL) return RLX_ERR(UNIMPLEMENTED, "the nccl backend has no %s (MLX: \"[nccl] %s not supported\")", op, op);
  if (peer < 0 || peer >= size || peer == rank)
    return RLX_ERR(INVALID_ARGUMENT, "%s: peer %d is not another rank of this group (rank %d of %d)", op, peer, rank, size);
  if (b == RLX_DIST_RING && peer != (rank + 1) % size && peer != (rank + size - 1) % size)
    return RLX_ERR(UNIMPLEMENTED, "the ring backend has %s only between ring neighbours; rank %d and rank %d are not (group of %d)", op, rank,
                   peer, size);
  return rlx_dist_check_failed(g);
}

/* Sends one array of type t from host bytes and waits for the send to complete. */
static rlx_status *send_array(rlx_dist_group *g, rlx_mx *c, const void *data, const rlx_type *t, int dst) {
  rlx_mx_arr *s = rlx_mx_dist_send(c, rlx_dist_mx(g), rlx_mx_from_bytes(c, data, t), dst);
  rlx_dist_watch_begin(g);
  rlx_mx_eval(c, &s, 1);
  return rlx_dist_watch_end(g, rlx_mx_take_error(c));
}

static rlx_status *recv_array(rlx_dist_group *g, rlx_mx *c, void *data, const rlx_type *t, int src) {
  rlx_mx_arr *r = rlx_mx_dist_recv(c, rlx_dist_mx(g), t, src);
  size_t nbytes = 0;
  RLX_TRY(rlx_type_nbytes(t, &nbytes));
  rlx_dist_watch_begin(g);
  rlx_mx_to_host(c, r, data, nbytes);
  return rlx_dist_watch_end(g, rlx_mx_take_error(c));
}

static rlx_status *send_frame(rlx_dist_group *g, const rlx_type *t, const void *data, size_t nbytes, int dst) {
  RLX_TRY(check_peer(g, dst, "send"));
  int64_t hdr[FRAME_WORDS] = {FRAME_MAGIC, FRAME_VERSION, t->dtype, t->rank, (int64_t)nbytes};
  for (int i = 0; i < t->rank; i++) hdr[5 + i] = t->dims[i];
  rlx_mx *c;
  RLX_TRY(rlx_mx_create(RLX_MX_CPU, &c));
  rlx_type ht = {.dtype = RLX_DTYPE_I64, .rank = 1, .dims = {FRAME_WORDS}};
  rlx_type pt = {.dtype = RLX_DTYPE_U8, .rank = 1, .dims = {(int64_t)nbytes}};
  rlx_status *st = send_array(g, c, hdr, &ht, dst);
  if (!st && nbytes) st = send_array(g, c, data, &pt, dst);
  rlx_mx_free(c);
  return rlx_status_annotate(st, "send to rank %d", dst);
}

/* Receives a frame: its type and payload (malloc'ed, NULL when empty). */
static rlx_status *recv_frame(rlx_dist_group *g, int src, rlx_type *out_t, void **out_data, size_t *out_n) {
  RLX_TRY(check_peer(g, src, "recv"));
  int64_t hdr[FRAME_WORDS];
  rlx_mx *c;
  RLX_TRY(rlx_mx_create(RLX_MX_CPU, &c));
  rlx_type ht = {.dtype = RLX_DTYPE_I64, .rank = 1, .dims = {FRAME_WORDS}};
  rlx_status *st = recv_array(g, c, hdr, &ht, src);
  rlx_type t = {0};
  size_t n = 0;
  if (!st) {
    if (hdr[0] != FRAME_MAGIC || hdr[1] != FRAME_VERSION)
      st = RLX_ERR(INVALID_ARGUMENT, "the message is not an rlx frame (magic %#llx version %lld; expected %#x version %d)",
                   (unsigned long long)hdr[0], (long long)hdr[1], FRAME_MAGIC, FRAME_VERSION);
    else if (hdr[2] < 0 || hdr[2] >= RLX_DTYPE_COUNT || hdr[3] < 0 || hdr[3] > RLX_MAX_RANK)
      st = RLX_ERR(INVALID_ARGUMENT, "frame header has dtype %lld, rank %lld", (long long)hdr[2], (long long)hdr[3]);
    else
      st = rlx_type_make((rlx_dtype)hdr[2], (int32_t)hdr[3], hdr + 5, &t);
    if (!st) st = rlx_type_nbytes(&t, &n);
    if (!st && (int64_t)n != hdr[4])
      st = RLX_ERR(INVALID_ARGUMENT, "frame header says %lld payload bytes for %s (%zu bytes)", (long long)hdr[4], RLX_TYPE_STR(&t), n);
  }
  void *data = NULL;
  if (!st && n) {
    data = malloc(n);
    rlx_type pt = {.dtype = RLX_DTYPE_U8, .rank = 1, .dims = {(int64_t)n}};
    st = data ? recv_array(g, c, data, &pt, src) : RLX_OOM();
  }
  rlx_mx_free(c);
  if (st) {
    free(data);
    return rlx_status_annotate(st, "recv from rank %d", src);
  }
  *out_t = t;
  *out_data = data;
  *out_n = n;
  return NULL;
}

rlx_status *rlx_dist_send(rlx_dist_group *g, const rlx_tensor *x, int dst) {
  if (!g || !x) return RLX_ERR(INVALID_ARGUMENT, "rlx_dist_send: NULL argument");
  return send_frame(g, rlx_tensor_type(x), rlx_tensor_cdata(x), rlx_tensor_nbytes(x), dst);
}

rlx_status *rlx_dist_send_bytes(rlx_dist_group *g, int dst, const void *data, size_t n) {
  if (!g || (!data && n)) return RLX_ERR(INVALID_ARGUMENT, "rlx_dist_send_bytes: NULL argument");
  if (n > INT64_MAX) return RLX_ERR(INVALID_ARGUMENT, "rlx_dist_send_bytes: %zu bytes is too many", n);
  rlx_type t = {.dtype = RLX_DTYPE_U8, .rank = 1, .dims = {(int64_t)n}};
  return send_frame(g, &t, data, n, dst);
}

rlx_status *rlx_dist_recv(rlx_dist_group *g, int src, rlx_tensor **out) {
  if (!g || !out) return RLX_ERR(INVALID_ARGUMENT, "rlx_dist_recv: NULL argument");
  rlx_type t;
  void *data;
  size_t n;
  RLX_TRY(recv_frame(g, src, &t, &data, &n));
  rlx_status *st = rlx_tensor_create(t.dtype, t.rank, t.dims, data, n, out);
  free(data);
  return st;
}

rlx_status *rlx_dist_recv_bytes(rlx_dist_group *g, int src, void **out_data, size_t *out_n) {
  if (!g || !out_data || !out_n) return RLX_ERR(INVALID_ARGUMENT, "rlx_dist_recv_bytes: NULL argument");
  rlx_type t;
  return recv_frame(g, src, &t, out_data, out_n);
}
