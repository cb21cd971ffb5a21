/* fuzz_onnx: libFuzzer target for the ONNX importer: import from bytes (rlx_onnx_import_bytes),
 * then one lazy run on small zero inputs (symbolic dims 1) unless the cost model prices it above
 * FUZZ_MAX_FLOPS (fuzz_util.h). Any bytes must end in a status, never a crash, a leak
 * or undefined behaviour. Seeds: the ONNX backend test models (scripts/fuzz.sh). */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static rlx_status *params(void *ud, rlx_executable *ex) { return rlx_onnx_model_set_params(ud, ex); }

/* The model imported again with every symbolic input dim 1 (what fuzz_run binds them to): the
 * cost model prices only static types, so this is what fuzz_cheap sees of a model with symbolic
 * inputs (a ConvTranspose of 6 GFLOP behind one took 90 s under ASan). NULL when the import fails. */
static rlx_onnx_model *fixed_model(const uint8_t *data, size_t size, const rlx_graph *g) {
  rlx_onnx_options *o = NULL;
  rlx_onnx_model *m = NULL;
  rlx_status *st = rlx_onnx_options_create(&o);
  for (size_t i = 0; !st && i < rlx_graph_num_inputs(g); i++) {
    rlx_type t = *rlx_graph_value_type(g, rlx_graph_input_value(g, i));
    for (int d = 0; d < t.rank; d++) t.dims[d] = t.dims[d] < 0 ? 1 : t.dims[d];
    st = rlx_onnx_options_set_shape(o, rlx_graph_input_name(g, i), t.rank, t.dims);
  }
  if (!st) st = rlx_onnx_import_bytes(data, size, NULL, o, &m);
  rlx_status_free(st);
  rlx_onnx_options_free(o);
  return st ? NULL : m;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  rlx_onnx_model *m = NULL;
  rlx_status *st = rlx_onnx_import_bytes(data, size, NULL, NULL, &m);
  if (!st) {
    const rlx_graph *g = rlx_onnx_model_graph(m);
    bool symbolic = false;
    for (size_t i = 0; i < rlx_graph_num_inputs(g); i++) symbolic |= !rlx_type_is_static(rlx_graph_value_type(g, rlx_graph_input_value(g, i)));
    rlx_onnx_model *fixed = symbolic ? fixed_model(data, size, g) : NULL;
    if (!symbolic || (fixed && fuzz_cheap(rlx_onnx_model_graph(fixed)))) fuzz_run(g, RLX_MODE_LAZY, params, m);
    rlx_onnx_model_free(fixed);
  }
  rlx_status_free(st);
  rlx_onnx_model_free(m);
  return 0;
}
