/* tokenizer.c: the tokenizers of rlx/llm.h from a GGUF file's vocabulary: SentencePiece-style BPE
 * over scored pieces (tokenizer.ggml.model "llama") and GPT-2-style byte-level BPE over ranked
 * merges ("gpt2"; the pre-tokenizer regex run by PCRE2). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "rlx/gguf.h"
#include "rlx/llm.h"

/* strings (NUL-terminated copies) with an open-addressing hash of string -> index */
typedef struct strtab {
  int32_t n;
  char **s;
  size_t *len;
  int32_t *slot; /* cap entries, -1 empty */
  size_t cap;
} strtab;

struct rlx_tokenizer {
  strtab tok;
  float *score;
  int32_t *type;     /* tokenizer.ggml.token_type: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte */
  int32_t byte_id[256];
  int32_t bos, eos, unk;
  bool add_bos, add_space_prefix;
  /* byte-level BPE ("gpt2") */
  bool bpe, ignore_merges; /* ignore_merges: a pre-token that is a whole token is taken as is (llama3) */
  strtab merge;            /* "left right", rank = index */
  pcre2_code *re;          /* the pre-tokenizer */
  char byte_char[256][3];  /* GPT-2's byte -> printable character (UTF-8, NUL-terminated) */
  int16_t char_byte[324];  /* and back, by code point (-1: none) */
};

static uint64_t hash(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
  return h;
}

static int32_t strtab_find(const strtab *t, const char *s, size_t n) {
  for (size_t i = hash(s, n) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
    int32_t id = t->slot[i];
    if (id < 0) return -1;
    if (t->len[id] == n && !memcmp(t->s[id], s, n)) return id;
  }
}

static int32_t lookup(const rlx_tokenizer *t, const char *s, size_t n) { return strtab_find(&t->tok, s, n); }

static rlx_status *strtab_alloc(strtab *t, uint64_t count) {
  t->n = (int32_t)count;
  for (t->cap = 16; t->cap < 2 * count; t->cap *= 2) {}
  t->s = calloc(count, sizeof *t->s);
  t->len = calloc(count, sizeof *t->len);
  t->slot = malloc(t->cap * sizeof *t->slot);
  if (!t->s || !t->len || !t->slot) return rlx_status_make(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  memset(t->slot, 0xff, t->cap * sizeof *t->slot);
  return NULL;
}

/* Stores string i (a duplicate of an earlier one stays out of the hash: the first wins). */
static rlx_status *strtab_set(strtab *t, int32_t i, const char *s, size_t n) {
  if (!(t->s[i] = malloc(n + 1))) return rlx_status_make(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  memcpy(t->s[i], s, n);
  t->s[i][n] = 0;
  t->len[i] = n;
  if (strtab_find(t, s, n) >= 0) return NULL;
  size_t h = hash(s, n) & (t->cap - 1);
  while (t->slot[h] >= 0) h = (h + 1) & (t->cap - 1);
  t->slot[h] = i;
  return NULL;
}

static void strtab_free(strtab *t) {
  for (int32_t i = 0; t->s && i < t->n; i++) free(t->s[i]);
  free(t->s), free(t->len), free(t->slot);
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

/* The pre-tokenizer regexes of the byte-level BPE vocabularies, by tokenizer.ggml.pre (published
 * with the models' tokenizer.json files: GPT-2 (Radford et al. 2019), Llama 3, Qwen2). */
static const struct {
  const char *pre[4];
  const char *regex;
  bool ignore_merges, add_bos;
} bpe_pre[] = {
    {{"gpt-2"}, "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)", false, false},
    {{"llama3", "llama-v3", "llama-bpe"},
     "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
     true, true},
    {{"qwen2"},
     "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
     false, false},
};

/* Writes code point c (< 0x800) as UTF-8 into out (NUL-terminated). */
static void utf8_put(uint32_t c, char out[3]) {
  if (c < 0x80) out[0] = (char)c, out[1] = 0;
  else out[0] = (char)(0xC0 | (c >> 6)), out[1] = (char)(0x80 | (c & 0x3F)), out[2] = 0;
}

/* GPT-2's bytes_to_unicode: printable bytes ('!'..'~', 0xA1..0xAC, 0xAE..0xFF) stand for
 * themselves, the other 68 for U+0100.. in byte order. */
static void byte_map(rlx_tokenizer *t) {
  uint32_t next = 256;
  for (size_t c = 0; c < sizeof t->char_byte / sizeof *t->char_byte; c++) t->char_byte[c] = -1;
  for (uint32_t b = 0; b < 256; b++) {
    bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    uint32_t c = printable ? b : next++;
    utf8_put(c, t->byte_char[b]);
    t->char_byte[c] = (int16_t)b;
  }
}

static rlx_status *load_bpe(const rlx_gguf *f, rlx_tokenizer *t) {
  size_t i;
  bool found;
  const char *pre = "";
  size_t plen;
  rlx_status *st = key_index(f, "tokenizer.ggml.pre", false, &i, &found);
  if (!st && found) st = rlx_gguf_kv_string(f, i, 0, &pre, &plen);
  if (st) return st;
  size_t k = 0, nk = sizeof bpe_pre / sizeof *bpe_pre;
  for (; k < nk; k++) {
    size_t j = 0;
    while (j < 4 && bpe_pre[k].pre[j] && strcmp(bpe_pre[k].pre[j], pre)) j++;
    if (j < 4 && bpe_pre[k].pre[j]) break;
  }
  if (k == nk)
    return rlx_status_make(RLX_STATUS_UNIMPLEMENTED, "tokenizer.ggml.pre '%s': rlx knows the byte-level BPE pre-tokenizers gpt-2, llama3 (llama-bpe) and qwen2",
                           pre);
  t->bpe = true;
  t->ignore_merges = bpe_pre[k].ignore_merges;
  t->add_bos = bpe_pre[k].add_bos;
  t->add_space_prefix = false;
  int err;
  PCRE2_SIZE off;
  t->re = pcre2_compile((PCRE2_SPTR)bpe_pre[k].regex, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &err, &off, NULL);
  if (!t->re) return rlx_status_make(RLX_STATUS_INTERNAL, "pre-tokenizer '%s': PCRE2 error %d at %zu", pre, err, (size_t)off);
  byte_map(t);
  rlx_gguf_type ty, elem;
  uint64_t count;
  if ((st = key_index(f, "tokenizer.ggml.merges", true, &i, &found)) || (st = rlx_gguf_kv_type(f, i, &ty, &elem, &count))) return st;
  if (ty != RLX_GGUF_ARRAY || elem != RLX_GGUF_STRING || count > INT32_MAX / 2)
    return rlx_status_make(RLX_STATUS_DATA_LOSS, "tokenizer.ggml.merges: expected an array of strings");
  if ((st = strtab_alloc(&t->merge, count))) return st;
  for (uint64_t m = 0; m < count; m++) {
    const char *s;
    size_t n;
    if ((st = rlx_gguf_kv_string(f, i, m, &s, &n)) || (st = strtab_set(&t->merge, (int32_t)m, s, n))) return st;
  }
  return NULL;
}

static rlx_status *load(const rlx_gguf *f, rlx_tokenizer *t) {
  size_t i, ti, si, yi;
  bool found, has_scores, has_types;
  const char *model;
  size_t mlen;
  rlx_status *st = key_index(f, "tokenizer.ggml.model", true, &i, &found);
  if (!st) st = rlx_gguf_kv_string(f, i, 0, &model, &mlen);
  if (st) return st;
  t->add_bos = t->add_space_prefix = true;
  if (!strcmp(model, "gpt2")) st = load_bpe(f, t);
  else if (strcmp(model, "llama"))
    st = rlx_status_make(RLX_STATUS_UNIMPLEMENTED, "tokenizer.ggml.model '%s': rlx reads the 'llama' (SentencePiece-style) and 'gpt2' (byte-level BPE) vocabularies",
                         model);
  if (st) return st;
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
  if ((st = strtab_alloc(&t->tok, count))) return st;
  t->score = calloc(count, sizeof *t->score);
  t->type = calloc(count, sizeof *t->type);
  if (!t->score || !t->type) return rlx_status_make(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  for (int b = 0; b < 256; b++) t->byte_id[b] = -1;
  for (int32_t id = 0; id < t->tok.n; id++) {
    const char *s;
    size_t n;
    double sc = 0;
    int64_t type = 1;
    if ((st = rlx_gguf_kv_string(f, ti, (uint64_t)id, &s, &n))) return st;
    if (has_scores && (st = rlx_gguf_kv_float(f, si, (uint64_t)id, &sc))) return st;
    if (has_types && (st = rlx_gguf_kv_int(f, yi, (uint64_t)id, &type))) return st;
    if ((st = strtab_set(&t->tok, id, s, n))) return st;
    t->score[id] = (float)sc, t->type[id] = (int32_t)type;
    unsigned byte;
    /* "<0xHH>": two hex digits (sscanf's %X alone also takes a sign: "<0x-A>" indexed byte_id at 2^32 - 10) */
    if (type == 6 && n == 6 && isxdigit((unsigned char)s[3]) && isxdigit((unsigned char)s[4]) && sscanf(s, "<0x%2X>", &byte) == 1)
      t->byte_id[byte] = id;
  }
  int64_t v;
  if ((st = opt_int(f, "tokenizer.ggml.bos_token_id", t->bpe ? -1 : 1, &v))) return st;
  t->bos = (int32_t)(v >= 0 && v < t->tok.n ? v : -1);
  if ((st = opt_int(f, "tokenizer.ggml.eos_token_id", t->bpe ? -1 : 2, &v))) return st;
  t->eos = (int32_t)(v >= 0 && v < t->tok.n ? v : -1);
  if ((st = opt_int(f, "tokenizer.ggml.unknown_token_id", t->bpe ? -1 : 0, &v))) return st;
  t->unk = (int32_t)(v >= 0 && v < t->tok.n ? v : -1);
  if ((st = opt_int(f, "tokenizer.ggml.add_bos_token", t->add_bos, &v))) return st;
  t->add_bos = v != 0;
  if (!t->bpe) {
    if ((st = opt_int(f, "tokenizer.ggml.add_space_prefix", 1, &v))) return st;
    t->add_space_prefix = v != 0;
  }
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
  strtab_free(&t->tok);
  strtab_free(&t->merge);
  pcre2_code_free(t->re);
  free(t->score), free(t->type);
  free(t);
}

int32_t rlx_tokenizer_vocab_size(const rlx_tokenizer *t) { return t->tok.n; }
int32_t rlx_tokenizer_bos(const rlx_tokenizer *t) { return t->bos; }
int32_t rlx_tokenizer_eos(const rlx_tokenizer *t) { return t->eos; }
bool rlx_tokenizer_space_prefix(const rlx_tokenizer *t) { return t->add_space_prefix; }

/* Length of the UTF-8 character starting with byte c (1 for a stray continuation byte). */
static size_t utf8_len(uint8_t c) { return c < 0xC0 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4; }

typedef struct sym {
  size_t start, len;
} sym;

/* SentencePiece-style: merge the adjacent pair whose concatenation is the highest-scoring token,
 * leftmost on ties; then ids, a piece that is no token spelled in byte tokens (else unknown). */
static size_t encode_spm(const rlx_tokenizer *t, const char *s, size_t n, sym *y, int32_t *ids) {
  size_t ny = 0, m = 0;
  for (size_t i = 0; i < n; ny++) {
    size_t l = utf8_len((uint8_t)s[i]);
    if (l > n - i) l = n - i;
    y[ny] = (sym){i, l};
    i += l;
  }
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
  for (size_t i = 0; i < ny; i++) {
    int32_t id = lookup(t, s + y[i].start, y[i].len);
    if (id >= 0) {
      ids[m++] = id;
      continue;
    }
    for (size_t j = 0; j < y[i].len; j++) {
      int32_t b = t->byte_id[(uint8_t)s[y[i].start + j]];
      if (b >= 0) ids[m++] = b;
      else if (t->unk >= 0) {
        ids[m++] = t->unk;
        break;
      }
    }
  }
  return m;
}

/* Byte-level BPE of one pre-token w[0..n): its bytes as GPT-2 characters, then the adjacent pair
 * of the lowest merge rank merged (leftmost on ties) until no pair is a merge; each symbol's id
 * (a symbol that is no token: its single bytes' ids where those are tokens). mapped holds 2n
 * bytes, y n symbols, key 4n + 2 bytes. */
static size_t encode_bpe_word(const rlx_tokenizer *t, const char *w, size_t n, char *mapped, sym *y, char *key, int32_t *ids) {
  size_t len = 0, ny = 0, m = 0;
  for (size_t i = 0; i < n; i++) {
    const char *c = t->byte_char[(uint8_t)w[i]];
    size_t l = strlen(c);
    y[ny++] = (sym){len, l};
    memcpy(mapped + len, c, l), len += l;
  }
  int32_t whole = t->ignore_merges ? lookup(t, mapped, len) : -1;
  if (whole >= 0) {
    ids[0] = whole;
    return 1;
  }
  for (;;) {
    size_t best = SIZE_MAX;
    int32_t best_rank = 0;
    for (size_t i = 0; i + 1 < ny; i++) {
      memcpy(key, mapped + y[i].start, y[i].len);
      key[y[i].len] = ' ';
      memcpy(key + y[i].len + 1, mapped + y[i + 1].start, y[i + 1].len);
      int32_t r = strtab_find(&t->merge, key, y[i].len + 1 + y[i + 1].len);
      if (r >= 0 && (best == SIZE_MAX || r < best_rank)) best = i, best_rank = r;
    }
    if (best == SIZE_MAX) break;
    y[best].len += y[best + 1].len;
    memmove(&y[best + 1], &y[best + 2], sizeof(sym) * (ny - best - 2));
    ny--;
  }
  for (size_t i = 0; i < ny; i++) {
    int32_t id = lookup(t, mapped + y[i].start, y[i].len);
    if (id >= 0) ids[m++] = id;
    else
      for (size_t j = 0; j < y[i].len; j++)
        if ((id = lookup(t, mapped + y[i].start + j, 1)) >= 0) ids[m++] = id;
  }
  return m;
}

/* Splits text[0..len) into pre-tokens (the regex's non-empty matches, and any text between
 * them) and encodes each. Scratch as for encode_bpe_word with n = len. */
static rlx_status *encode_bpe(const rlx_tokenizer *t, const char *text, size_t len, char *mapped, sym *y, char *key, int32_t *ids,
                              size_t *out_m) {
  pcre2_match_data *md = pcre2_match_data_create_from_pattern(t->re, NULL);
  if (!md) return rlx_status_make(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  size_t pos = 0, m = 0;
  rlx_status *st = NULL;
  while (pos < len) {
    int rc = pcre2_match(t->re, (PCRE2_SPTR)text, len, pos, PCRE2_NOTEMPTY, md, NULL);
    if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) {
      st = rlx_status_make(RLX_STATUS_INTERNAL, "pre-tokenizer: PCRE2 match error %d", rc);
      break;
    }
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    size_t a = rc < 0 ? len : ov[0], b = rc < 0 ? len : ov[1];
    if (a > pos) m += encode_bpe_word(t, text + pos, a - pos, mapped, y, key, ids + m); /* unmatched text */
    if (b > a) m += encode_bpe_word(t, text + a, b - a, mapped, y, key, ids + m);
    pos = b;
  }
  pcre2_match_data_free(md);
  *out_m = m;
  return st;
}

rlx_status *rlx_tokenizer_encode(const rlx_tokenizer *t, const char *text, size_t len, bool add_bos, int32_t *out_ids, size_t cap, size_t *out_n) {
  if (!t || (!text && len) || !out_n || (!out_ids && cap))
    return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "rlx_tokenizer_encode: NULL argument");
  /* SentencePiece normalization as llama.cpp: spaces become U+2581, one prepended */
  static const char ws[] = "\xE2\x96\x81";
  size_t spaces = t->add_space_prefix && len ? 1 : 0;
  for (size_t i = 0; !t->bpe && i < len; i++) spaces += text[i] == ' ';
  size_t n_max = len + 2 * spaces;
  char *s = malloc(2 * n_max + 1), *key = malloc(4 * n_max + 2);
  sym *y = malloc(sizeof(sym) * (n_max + 1));
  int32_t *ids = malloc(sizeof(int32_t) * (4 * n_max + 2));
  if (!s || !key || !y || !ids) {
    free(s), free(key), free(y), free(ids);
    return rlx_status_make(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  }
  size_t m = 0;
  if (add_bos && t->add_bos && t->bos >= 0) ids[m++] = t->bos;
  rlx_status *st = NULL;
  if (t->bpe) {
    size_t k = 0;
    st = encode_bpe(t, text, len, s, y, key, ids + m, &k);
    m += k;
  } else {
    size_t n = 0;
    if (spaces && t->add_space_prefix) memcpy(s, ws, 3), n = 3;
    for (size_t i = 0; i < len; i++)
      if (text[i] == ' ') memcpy(s + n, ws, 3), n += 3;
      else s[n++] = text[i];
    m += encode_spm(t, s, n, y, ids + m);
  }
  if (!st && m > cap) st = rlx_status_make(RLX_STATUS_OUT_OF_RANGE, "rlx_tokenizer_encode: %zu tokens, room for %zu", m, cap);
  else if (!st) memcpy(out_ids, ids, sizeof(int32_t) * m);
  if (!st || rlx_status_code_of(st) == RLX_STATUS_OUT_OF_RANGE) *out_n = m;
  free(s), free(key), free(y), free(ids);
  return st;
}

/* Decodes UTF-8 at s[0..n) into one code point; *len gets its length (1 for a bad byte). */
static uint32_t utf8_get(const char *s, size_t n, size_t *len) {
  uint8_t c = (uint8_t)s[0];
  size_t l = utf8_len(c);
  if (l == 1 || l > n) {
    *len = 1;
    return c;
  }
  uint32_t cp = c & (0x7Fu >> l);
  for (size_t i = 1; i < l; i++) cp = (cp << 6) | ((uint8_t)s[i] & 0x3F);
  *len = l;
  return cp;
}

size_t rlx_tokenizer_piece(const rlx_tokenizer *t, int32_t id, char *buf, size_t cap) {
  if (!t || id < 0 || id >= t->tok.n || t->type[id] == 2 || t->type[id] == 3 || t->type[id] == 5) return 0; /* unknown, control, unused */
  char tmp[8];
  const char *s = t->tok.s[id];
  size_t n = t->tok.len[id], m = 0;
  unsigned byte;
  if (t->bpe && t->type[id] != 4) { /* GPT-2 characters back to bytes; user-defined tokens are plain text */
    for (size_t i = 0, l; i < n; i += l) {
      uint32_t c = utf8_get(s + i, n - i, &l);
      int b = c < sizeof t->char_byte / sizeof *t->char_byte ? t->char_byte[c] : -1;
      for (size_t j = 0; j < (b >= 0 ? 1 : l); j++, m++)
        if (m < cap) buf[m] = b >= 0 ? (char)b : s[i + j];
    }
    return m;
  }
  if (t->type[id] == 6 && sscanf(s, "<0x%2X>", &byte) == 1) tmp[0] = (char)byte, s = tmp, n = 1;
  for (size_t i = 0; i < n; i++) {
    bool w = i + 3 <= n && !memcmp(s + i, "\xE2\x96\x81", 3);
    if (m < cap) buf[m] = w ? ' ' : s[i];
    m++;
    if (w) i += 2;
  }
  return m;
}
