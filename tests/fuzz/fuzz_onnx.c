/* fuzz_onnx: libFuzzer target for the ONNX importer: import from bytes (rlx_onnx_import_bytes),
 * then one lazy run on small zero inputs. Any bytes must end in a status, never a crash, a leak
 * or undefined behaviour. Seeds: the ONNX backend test models (scripts/fuzz.sh). */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static rlx_status *params(void *ud, rlx_executable *ex) { return rlx_onnx_model_set_params(ud, ex); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  rlx_onnx_model *m = NULL;
  rlx_status *st = rlx_onnx_import_bytes(data, size, NULL, NULL, &m);
  if (!st) fuzz_run(rlx_onnx_model_graph(m), RLX_MODE_LAZY, params, m);
  rlx_status_free(st);
  rlx_onnx_model_free(m);
  return 0;
}
