/* generate.c: `rlx generate MODEL.gguf --prompt TEXT [--max-tokens N] [--temperature T --top-k K
 * --top-p P --seed S] [--device cpu|gpu] [--mode lazy|eager|compiled] [--float-activations]`:
 * text from a Llama-family GGUF model (rlx/llm.h; --float-activations: rlx_llm_options'
 * float_activations). The prompt is encoded with the file's tokenizer (BOS first), run as one
 * prefill step, then one token per decode step until --max-tokens (default 32) or EOS; the prompt
 * and each new token's text go to stdout as produced; prefill and decode tokens/s to stderr at
 * the end. Temperature 0 (the default) is greedy. */
#include "generate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "rlx/rlx.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int usage(void) {
  fprintf(stderr, "usage: rlx generate MODEL.gguf --prompt TEXT [--max-tokens N] [--temperature T] [--top-k K] [--top-p P] [--seed S]\n"
                  "                    [--device cpu|gpu] [--mode lazy|eager|compiled] [--float-activations]\n");
  return 2;
}

static bool number(const char *s, double lo, double hi, double *out) {
  char *end;
  double v = strtod(s, &end);
  if (end == s || *end || !(v >= lo && v <= hi)) return false;
  *out = v;
  return true;
}

static void print_piece(const rlx_tokenizer *tok, int32_t id, bool first) {
  char buf[256];
  size_t n = rlx_tokenizer_piece(tok, id, buf, sizeof buf);
  if (n > sizeof buf) n = sizeof buf;
  size_t skip = first && n && buf[0] == ' ' && rlx_tokenizer_space_prefix(tok) ? 1 : 0; /* the prepended space */
  fwrite(buf + skip, 1, n - skip, stdout);
  fflush(stdout);
}

/* rlx_llm_generate's on_token: prints the piece of each id until the end-of-sequence one. */
static bool print_token(int32_t id, void *user) {
  const rlx_tokenizer *tok = user;
  if (id == rlx_tokenizer_eos(tok)) return false;
  print_piece(tok, id, false);
  return true;
}

int rlx_cli_generate(int argc, char **argv) {
  const char *model = NULL, *prompt = NULL;
  double max_tokens = 32, v;
  rlx_llm_options o = {0};
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--float-activations")) {
      o.float_activations = true;
      continue;
    }
    bool takes = a[0] == '-' && a[1] == '-';
    if (takes && !val) return fprintf(stderr, "rlx generate: %s needs a value\n", a), usage();
    if (!strcmp(a, "--prompt")) prompt = val;
    else if (!strcmp(a, "--max-tokens") && number(val, 1, 1 << 20, &max_tokens)) {}
    else if (!strcmp(a, "--temperature") && number(val, 0, 1e6, &o.temperature)) {}
    else if (!strcmp(a, "--top-k") && number(val, 0, 1 << 30, &v)) o.top_k = (int64_t)v;
    else if (!strcmp(a, "--top-p") && number(val, 0, 1, &o.top_p)) {}
    else if (!strcmp(a, "--seed") && number(val, 0, 9007199254740992.0, &v)) o.seed = (uint64_t)v;
    else if (!strcmp(a, "--device") || !strcmp(a, "--mode")) {
      rlx_status *st = a[2] == 'd' ? rlx_device_from_name(val, &o.device) : rlx_mode_from_name(val, &o.mode);
      if (st) return cli_fail(st), 2;
    } else if (!takes && !model) {
      model = a;
      continue;
    } else return fprintf(stderr, "rlx generate: bad argument '%s'%s%s\n", a, val ? " " : "", val ? val : ""), usage();
    i++;
  }
  if (!model || !prompt) return usage();
  rlx_tokenizer *tok = NULL;
  rlx_llm *m = NULL;
  int32_t *ids = NULL;
  size_t n = 0, len = strlen(prompt);
  rlx_status *st = rlx_tokenizer_open(model, &tok);
  if (!st) {
    ids = malloc(sizeof(int32_t) * (4 * len + 8));
    st = ids ? rlx_tokenizer_encode(tok, prompt, len, true, ids, 4 * len + 8, &n)
             : rlx_status_make(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  }
  if (!st && n == 0) st = rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "rlx generate: the prompt encodes to no tokens");
  o.capacity = (int64_t)n + (int64_t)max_tokens;
  if (!st) st = rlx_llm_open(model, &o, &m);
  if (st) {
    free(ids);
    rlx_tokenizer_close(tok);
    return cli_fail(st);
  }
  for (size_t i = 0; i < n; i++) print_piece(tok, ids[i], i == 0 || (i == 1 && ids[0] == rlx_tokenizer_bos(tok)));
  int32_t next = 0;
  double t0 = now();
  st = rlx_llm_step(m, ids, (int64_t)n, NULL, &next);
  double t1 = now(), t2 = t1;
  int64_t steps = 0; /* decode steps run */
  bool more = !st && next != rlx_tokenizer_eos(tok);
  if (more) print_piece(tok, next, false);
  if (more && max_tokens > 1) { /* each token printed as it is read back, until EOS */
    st = rlx_llm_generate(m, next, (int64_t)max_tokens - 1, print_token, tok, &steps);
    t2 = now();
  }
  printf("\n");
  int rc = 0;
  if (st) rc = cli_fail(st);
  else
    fprintf(stderr, "prefill: %zu tokens in %.3f s (%.1f tokens/s); decode: %lld tokens in %.3f s (%.1f tokens/s)\n", n, t1 - t0,
            (double)n / (t1 - t0), (long long)steps, t2 - t1, steps ? (double)steps / (t2 - t1) : 0.0);
  rlx_llm_close(m);
  rlx_tokenizer_close(tok);
  free(ids);
  return rc;
}
