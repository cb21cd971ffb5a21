/* import_ops_importer.h: the mapping functions of the importer's decomposition files, registered
 * in rlx_onnx_importer_ops (import_ops_importer.c). */
#ifndef RLX_ONNX_IMPORT_OPS_IMPORTER_H
#define RLX_ONNX_IMPORT_OPS_IMPORTER_H

#include "onnx/import_ops.h"

/* import_ops_rnn.c */
rlx_status *rlx_onnx_map_rnn(rlx_imp *I, const Onnx__NodeProto *n);
rlx_status *rlx_onnx_map_gru(rlx_imp *I, const Onnx__NodeProto *n);
rlx_status *rlx_onnx_map_lstm(rlx_imp *I, const Onnx__NodeProto *n);

#endif
