/* wire.c: a pre-scan of protobuf wire data (https://protobuf.dev/programming-guides/encoding/)
 * before protobuf-c unpacks it. protobuf-c unpacks nested messages recursively without a depth
 * limit, so a model whose messages nest thousands deep would overflow the stack there; the scan
 * measures the nesting first (a length-delimited field counts as a nested message when its bytes
 * parse as one) and rejects what nests deeper than the importer allows. */
#include "onnx/importer.h"

enum { TOO_DEEP = -2, NOT_A_MESSAGE = -1 };

/* Reads a varint at *p (before end); false when truncated or longer than 10 bytes. */
static bool varint(const uint8_t **p, const uint8_t *end, uint64_t *out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 70 && *p < end; shift += 7) {
    uint8_t b = *(*p)++;
    v |= (uint64_t)(b & 0x7f) << (shift < 64 ? shift : 63);
    if (!(b & 0x80)) return *out = v, true;
  }
  return false;
}

/* The deepest nesting below the message b[0..n) at `level` (0: it has no nested message),
 * NOT_A_MESSAGE when the bytes do not parse as a message, TOO_DEEP past `limit`. Recursion is
 * bounded by limit. */
static int depth(const uint8_t *b, size_t n, int level, int limit) {
  if (level > limit) return TOO_DEEP;
  const uint8_t *p = b, *end = b + n;
  int deepest = 0;
  while (p < end) {
    uint64_t tag, len;
    if (!varint(&p, end, &tag) || tag >> 3 == 0) return NOT_A_MESSAGE;
    switch (tag & 7) {
      case 0:
        if (!varint(&p, end, &len)) return NOT_A_MESSAGE;
        break;
      case 1:
        if (end - p < 8) return NOT_A_MESSAGE;
        p += 8;
        break;
      case 5:
        if (end - p < 4) return NOT_A_MESSAGE;
        p += 4;
        break;
      case 2: {
        if (!varint(&p, end, &len) || len > (uint64_t)(end - p)) return NOT_A_MESSAGE;
        int d = len ? depth(p, (size_t)len, level + 1, limit) : NOT_A_MESSAGE;
        if (d == TOO_DEEP) return TOO_DEEP;
        if (d >= 0 && d + 1 > deepest) deepest = d + 1;
        p += len;
        break;
      }
      default: /* groups (3, 4) are not used by ONNX; 6 and 7 are invalid */
        return NOT_A_MESSAGE;
    }
  }
  return deepest;
}

rlx_status *rlx_onnx_check_wire(const void *bytes, size_t n, const char *what) {
  int d = depth(bytes, n, 0, RLX_ONNX_MAX_NESTING);
  if (d == TOO_DEEP) return RLX_ERR(INVALID_ARGUMENT, "%s nests messages more than %d deep", what, RLX_ONNX_MAX_NESTING);
  return NULL; /* bytes that are no message at all are protobuf-c's to reject */
}
