/* tokenizer.c: the SentencePiece-style (tokenizer.ggml.model "llama") tokenizer of rlx/llm.h,
 * from a GGUF file's vocabulary. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/gguf.h"
#include "rlx/llm.h"

struct rlx_tokenizer {
  int32_t n;
  char **text;       /* token strings (NUL-terminated copies) */
  size_t *len;
  float *score;
  int32_t *type;     /* tokenizer.ggml.token_type: 1 normal, 2 unknown, 3 control, 6 byte, ... */
  int32_t *table;    /* open-addressing hash of text -> id, cap entries (-1 empty) */
  size_t cap;
  int32_t byte_id[256];
  int32_t bos, eos, unk;
  bool add_bos, add_space_prefix;
};

static uint64_t hash(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
  return h;
}

static int32_t lookup(const rlx_tokenizer *t, const char *s, size_t n) {
  for (size_t i = hash(s, n) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
    int32_t id = t->table[i];
    if (id < 0) return -1;
    if (t->len[id] == n && !memcmp(t->text[id], s, n)) return id;
  }
}

static rlx_status *key_index(const rlx_gguf *f, const char *key, bool required, size_t *out, bool *found) {
  rlx_status *st = rlx_gguf_find_kv(f, key, out);
  *found = !st;
  if (st && !required) rlx_status_free(st), st = NULL;
  return st;
}

static rlx_status *opt_int(const rlx_gguf *f, const char *key, int64_t dflt, int64_t *out) {
  size_t i;
  bool found;
  rlx_status *st = key_index(f, key, false, &i, &found);
  *out = dflt;
  if (!st && found) st = rlx_gguf_kv_int(f, i, 0, out);
  return st;
}

static rlx_status *load(const rlx_gguf *f, rlx_tokenizer *t) {
  size_t i, ti, si, yi;
  bool found, has_scores, has_types;
  const char *model;
  size_t mlen;
  rlx_status *st = key_index(f, "tokenizer.ggml.model", true, &i, &found);
  if (!st) st = rlx_gguf_kv_string(f, i, 0, &model, &mlen);
  if (st) return st;
  if (strcmp(model, "llama"))
    return rlx_status_make(RLX_STATUS_UNIMPLEMENTED, "tokenizer.ggml.model '%s': rlx reads the SentencePiece-style 'llama' vocabulary", model);
  if ((st = key_index(f, "tokenizer.ggml.tokens", true, &ti, &found))) return st;
  if ((st = key_index(f, "tokenizer.ggml.scores", false, &si, &has_scores))) return st;
  if ((st = key_index(f, "tokenizer.ggml.token_type", false, &yi, &has_types))) return st;
  rlx_gguf_type ty, elem;
  uint64_t count, c2;
  if ((st = rlx_gguf_kv_type(f, ti, &ty, &elem, &count))) return st;
  if (ty != RLX_GGUF_ARRAY || elem != RLX_GGUF_STRING || count < 1 || count > INT32_MAX / 2)
    return rlx_status_make(RLX_STATUS_DATA_LOSS, "tokenizer.ggml.tokens: expected a non-empty array of strings");
  if (has_scores && ((st = rlx_gguf_kv_type(f, si, &ty, &elem, &c2)) || c2 != count))
    return st ? st : rlx_status_make(RLX_STATUS_DATA_LOSS, "tokenizer.ggml.scores: %llu values for %llu tokens", (unsigned long long)c2,
                                     (unsigned long long)count);
  if (has_types && ((st = rlx_gguf_kv_type(f, yi, &ty, &elem, &c2)) || c2 != count))
    return st ? st : rlx_status_make(RLX_STATUS_DATA_LOSS, "tokenizer.ggml.token_type: %llu values for %llu tokens", (unsigned long long)c2,
                                     (unsigned long long)count);
  t->n = (int32_t)count;
  for (t->cap = 16; t->cap < 2 * count; t->cap *= 2) {}
  t->text = calloc(count, sizeof *t->text);
  t->len = calloc(count, sizeof *t->len);
  t->score = calloc(count, sizeof *t->score);
  t->type = calloc(count, sizeof *t->type);
  t->table = malloc(t->cap * sizeof *t->table);
  if (!t->text || !t->len || !t->score || !t->type || !t->table) return rlx_status_make(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  memset(t->table, 0xff, t->cap * sizeof *t->table);
  for (int b = 0; b < 256; b++) t->byte_id[b] = -1;
  for (int32_t id = 0; id < t->n; id++) {
    const char *s;
    size_t n;
    double sc = 0;
    int64_t type = 1;
    if ((st = rlx_gguf_kv_string(f, ti, (uint64_t)id, &s, &n))) return st;
    if (has_scores && (st = rlx_gguf_kv_float(f, si, (uint64_t)id, &sc))) return st;
    if (has_types && (st = rlx_gguf_kv_int(f, yi, (uint64_t)id, &type))) return st;
    if (!(t->text[id] = malloc(n + 1))) return rlx_status_make(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    memcpy(t->text[id], s, n);
    t->text[id][n] = 0;
    t->len[id] = n, t->score[id] = (float)sc, t->type[id] = (int32_t)type;
    unsigned byte;
    if (type == 6 && n == 6 && sscanf(s, "<0x%2X>", &byte) == 1) t->byte_id[byte] = id;
    if (lookup(t, s, n) >= 0) continue; /* a duplicate string: the first id wins */
    size_t h = hash(s, n) & (t->cap - 1);
    while (t->table[h] >= 0) h = (h + 1) & (t->cap - 1);
    t->table[h] = id;
  }
  int64_t v;
  if ((st = opt_int(f, "tokenizer.ggml.bos_token_id", 1, &v))) return st;
  t->bos = (int32_t)(v >= 0 && v < t->n ? v : -1);
  if ((st = opt_int(f, "tokenizer.ggml.eos_token_id", 2, &v))) return st;
  t->eos = (int32_t)(v >= 0 && v < t->n ? v : -1);
  if ((st = opt_int(f, "tokenizer.ggml.unknown_token_id", 0, &v))) return st;
  t->unk = (int32_t)(v >= 0 && v < t->n ? v : -1);
  if ((st = opt_int(f, "tokenizer.ggml.add_bos_token", 1, &v))) return st;
  t->add_bos = v != 0;
  if ((st = opt_int(f, "tokenizer.ggml.add_space_prefix", 1, &v))) return st;
  t->add_space_prefix = v != 0;
  return NULL;
}

rlx_status *rlx_tokenizer_open(const char *path, rlx_tokenizer **out) {
  if (!path || !out) return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "rlx_tokenizer_open: NULL %s", path ? "out" : "path");
  rlx_gguf *f;
  rlx_status *st = rlx_gguf_open(path, &f);
  if (st) return st;
  rlx_tokenizer *t = calloc(1, sizeof *t);
  st = t ? load(f, t) : rlx_status_make(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  rlx_gguf_close(f);
  if (st) {
    rlx_tokenizer_close(t);
    return st;
  }
  *out = t;
  return NULL;
}

void rlx_tokenizer_close(rlx_tokenizer *t) {
  if (!t) return;
  for (int32_t i = 0; t->text && i < t->n; i++) free(t->text[i]);
  free(t->text), free(t->len), free(t->score), free(t->type), free(t->table);
  free(t);
}

int32_t rlx_tokenizer_vocab_size(const rlx_tokenizer *t) { return t->n; }
int32_t rlx_tokenizer_bos(const rlx_tokenizer *t) { return t->bos; }
int32_t rlx_tokenizer_eos(const rlx_tokenizer *t) { return t->eos; }

/* Length of the UTF-8 character starting with byte c (1 for a stray continuation byte). */
static size_t utf8_len(uint8_t c) { return c < 0xC0 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4; }

typedef struct sym {
  size_t start, len;
} sym;

rlx_status *rlx_tokenizer_encode(const rlx_tokenizer *t, const char *text, size_t len, bool add_bos, int32_t *out_ids, size_t cap, size_t *out_n) {
  if (!t || (!text && len) || !out_n || (!out_ids && cap))
    return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "rlx_tokenizer_encode: NULL argument");
  /* SentencePiece normalization as llama.cpp: spaces become U+2581, one prepended */
  static const char ws[] = "\xE2\x96\x81";
  size_t spaces = t->add_space_prefix && len ? 1 : 0;
  for (size_t i = 0; i < len; i++) spaces += text[i] == ' ';
  char *s = malloc(len + 2 * spaces + 1);
  sym *y = malloc(sizeof(sym) * (len + spaces + 1));
  int32_t *ids = malloc(sizeof(int32_t) * (4 * (len + spaces) + 2));
  if (!s || !y || !ids) {
    free(s), free(y), free(ids);
    return rlx_status_make(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  }
  size_t n = 0;
  if (spaces && t->add_space_prefix) memcpy(s, ws, 3), n = 3;
  for (size_t i = 0; i < len; i++)
    if (text[i] == ' ') memcpy(s + n, ws, 3), n += 3;
    else s[n++] = text[i];
  size_t ny = 0;
  for (size_t i = 0; i < n; ny++) {
    size_t l = utf8_len((uint8_t)s[i]);
    if (l > n - i) l = n - i;
    y[ny] = (sym){i, l};
    i += l;
  }
  /* merge the adjacent pair whose concatenation is the highest-scoring token, leftmost on ties */
  for (;;) {
    size_t best = SIZE_MAX;
    float best_score = 0;
    for (size_t i = 0; i + 1 < ny; i++) {
      int32_t id = lookup(t, s + y[i].start, y[i].len + y[i + 1].len);
      if (id >= 0 && (best == SIZE_MAX || t->score[id] > best_score)) best = i, best_score = t->score[id];
    }
    if (best == SIZE_MAX) break;
    y[best].len += y[best + 1].len;
    memmove(&y[best + 1], &y[best + 2], sizeof(sym) * (ny - best - 2));
    ny--;
  }
  size_t m = 0;
  if (add_bos && t->add_bos && t->bos >= 0) ids[m++] = t->bos;
  for (size_t i = 0; i < ny; i++) {
    int32_t id = lookup(t, s + y[i].start, y[i].len);
    if (id >= 0) {
      ids[m++] = id;
      continue;
    }
    for (size_t j = 0; j < y[i].len; j++) { /* byte fallback, else the unknown token */
      int32_t b = t->byte_id[(uint8_t)s[y[i].start + j]];
      if (b >= 0) ids[m++] = b;
      else if (t->unk >= 0) {
        ids[m++] = t->unk;
        break;
      }
    }
  }
  rlx_status *st = NULL;
  if (m > cap) st = rlx_status_make(RLX_STATUS_OUT_OF_RANGE, "rlx_tokenizer_encode: %zu tokens, room for %zu", m, cap);
  else memcpy(out_ids, ids, sizeof(int32_t) * m);
  *out_n = m;
  free(s), free(y), free(ids);
  return st;
}

size_t rlx_tokenizer_piece(const rlx_tokenizer *t, int32_t id, char *buf, size_t cap) {
  if (!t || id < 0 || id >= t->n || t->type[id] == 3 || t->type[id] == 5) return 0; /* control and unused: no text */
  char tmp[8];
  const char *s = t->text[id];
  size_t n = t->len[id], m = 0;
  unsigned byte;
  if (t->type[id] == 6 && sscanf(s, "<0x%2X>", &byte) == 1) tmp[0] = (char)byte, s = tmp, n = 1;
  for (size_t i = 0; i < n; i++) {
    bool w = i + 3 <= n && !memcmp(s + i, "\xE2\x96\x81", 3);
    if (m < cap) buf[m] = w ? ' ' : s[i];
    m++;
    if (w) i += 2;
  }
  return m;
}
