/* fuzz_gguf: libFuzzer target for the GGUF readers: rlx_gguf_open_bytes and every getter over
 * its metadata and tensor table; then, for bytes the reader accepts, the readers that take a path
 * (the bytes in a memfd): rlx_gguf_describe (`rlx info`), the tokenizer (open, encode, pieces)
 * and rlx_llm_open with a small KV cache and one decode step. Any bytes must end in a status,
 * never a crash, a leak or undefined behaviour. Seeds: small files from gguf-py (tests/fuzz/seeds.py). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_util.h" /* rlx's allocation limit */
#include "rlx/gguf.h"
#include "rlx/llm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The reader's own invariants (a getter disagreeing with the table is a bug, not a bad file). */
static void expect(bool ok) {
  if (!ok) __builtin_trap();
}

static volatile uint64_t sink;

/* Reads element j of pair i through every getter; only the one of its type may succeed. */
static void read_element(const rlx_gguf *f, size_t i, uint64_t j, rlx_gguf_type elem) {
  int64_t v;
  double d;
  const char *s = NULL;
  size_t len = 0;
  rlx_status *si = rlx_gguf_kv_int(f, i, j, &v), *sf = rlx_gguf_kv_float(f, i, j, &d), *ss = rlx_gguf_kv_string(f, i, j, &s, &len);
  expect(!ss == (elem == RLX_GGUF_STRING));
  if (!si) sink += (uint64_t)v;
  if (!sf) sink += (uint64_t)(d == d);
  for (size_t k = 0; !ss && k <= len; k++) sink += (unsigned char)s[k]; /* len bytes and the NUL */
  rlx_status_free(si);
  rlx_status_free(sf);
  rlx_status_free(ss);
}

static void walk(const rlx_gguf *f) {
  sink += rlx_gguf_version(f) + rlx_gguf_alignment(f) + rlx_gguf_data_offset(f);
  size_t n_kv = rlx_gguf_num_kv(f);
  expect(rlx_gguf_kv_key(f, n_kv) == NULL);
  for (size_t i = 0; i < n_kv; i++) {
    const char *key = rlx_gguf_kv_key(f, i);
    size_t found = SIZE_MAX;
    rlx_status *st = rlx_gguf_find_kv(f, key, &found);
    expect(!st && found == i);
    rlx_gguf_type type, elem;
    uint64_t count;
    st = rlx_gguf_kv_type(f, i, &type, &elem, &count);
    expect(!st);
    for (uint64_t j = 0; j < count && j < 4; j++) read_element(f, i, j, elem);
    if (count > 4) read_element(f, i, count - 1, elem);
    int64_t v;
    st = rlx_gguf_kv_int(f, i, count, &v); /* one past the end */
    expect(st && rlx_status_code_of(st) == RLX_STATUS_OUT_OF_RANGE);
    rlx_status_free(st);
  }
  size_t n_t = rlx_gguf_num_tensors(f);
  rlx_gguf_tensor t;
  rlx_status *st = rlx_gguf_tensor_info(f, n_t, &t);
  expect(st != NULL);
  rlx_status_free(st);
  for (size_t i = 0; i < n_t; i++) {
    size_t found = SIZE_MAX;
    expect(!rlx_gguf_tensor_info(f, i, &t));
    st = rlx_gguf_find_tensor(f, t.name, &found);
    expect(!st && found == i);
    expect(t.n_dims >= 1 && t.n_dims <= 4);
    if (t.nbytes) sink += ((const uint8_t *)t.data)[0] + ((const uint8_t *)t.data)[t.nbytes - 1];
  }
}

static void tokenize(const char *path) {
  rlx_tokenizer *tok = NULL;
  rlx_status *st = rlx_tokenizer_open(path, &tok);
  if (!st) {
    static const char text[] = "Hello  w\xc3\xb6rld \xe4\xb8\xad\xe6\x96\x87 \xff\x80 <0x0A>\n\t";
    int32_t ids[256];
    size_t n = 0;
    st = rlx_tokenizer_encode(tok, text, sizeof text - 1, true, ids, 256, &n);
    char buf[16];
    for (size_t i = 0; !st && i < n; i++) sink += rlx_tokenizer_piece(tok, ids[i], buf, sizeof buf);
    int32_t V = rlx_tokenizer_vocab_size(tok);
    sink += rlx_tokenizer_piece(tok, -1, buf, sizeof buf) + rlx_tokenizer_piece(tok, V, buf, sizeof buf);
    for (int32_t i = 0; i < V && i < 64; i++) sink += rlx_tokenizer_piece(tok, i, buf, sizeof buf);
    sink += (uint64_t)rlx_tokenizer_bos(tok) + (uint64_t)rlx_tokenizer_eos(tok);
  }
  rlx_status_free(st);
  rlx_tokenizer_close(tok);
}

static void model(const char *path) {
  rlx_llm *m = NULL;
  rlx_llm_options o = {.device = RLX_DEVICE_CPU, .mode = RLX_MODE_LAZY, .capacity = 4};
  rlx_status *st = rlx_llm_open(path, &o, &m);
  if (!st) {
    const rlx_llm_config *c = rlx_llm_get_config(m);
    /* one decode step when its logits are small (valid but huge work is not what this looks for) */
    if (c->vocab <= 4096 && c->dim <= 4096) {
      int32_t next = 0;
      st = rlx_llm_step(m, (const int32_t[]){0}, 1, NULL, &next);
    }
  }
  rlx_status_free(st);
  rlx_llm_close(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static FILE *devnull;
  if (!devnull) devnull = fopen("/dev/null", "w");
  rlx_gguf *f = NULL;
  rlx_status *st = rlx_gguf_open_bytes(data, size, &f);
  rlx_status_free(st);
  if (st) return 0;
  walk(f);
  rlx_gguf_close(f);
  /* the path readers map the same bytes from a memfd */
  int fd = memfd_create("fuzz.gguf", MFD_CLOEXEC);
  if (fd < 0 || write(fd, data, size) != (ssize_t)size) {
    if (fd >= 0) close(fd);
    return 0;
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  if (devnull) {
    st = rlx_gguf_describe(path, devnull);
    expect(!st); /* the same bytes opened from memory */
  }
  tokenize(path);
  model(path);
  close(fd);
  return 0;
}
