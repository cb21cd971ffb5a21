/* import_ops_importer.h: the mapping functions of the importer's decomposition files, registered
 * in rlx_onnx_importer_ops (import_ops_importer.c). */
#ifndef RLX_ONNX_IMPORT_OPS_IMPORTER_H
#define RLX_ONNX_IMPORT_OPS_IMPORTER_H

#include "onnx/import_ops.h"

/* import_ops_einsum.c */
RLX_MUST_USE rlx_status *rlx_onnx_map_einsum(rlx_imp *I, const Onnx__NodeProto *n);

/* import_ops_rnn.c */
RLX_MUST_USE rlx_status *rlx_onnx_map_rnn(rlx_imp *I, const Onnx__NodeProto *n);
RLX_MUST_USE rlx_status *rlx_onnx_map_gru(rlx_imp *I, const Onnx__NodeProto *n);
RLX_MUST_USE rlx_status *rlx_onnx_map_lstm(rlx_imp *I, const Onnx__NodeProto *n);

/* import_ops_index.c */
RLX_MUST_USE rlx_status *rlx_onnx_map_cumprod(rlx_imp *I, const Onnx__NodeProto *n);
RLX_MUST_USE rlx_status *rlx_onnx_map_compress(rlx_imp *I, const Onnx__NodeProto *n);
RLX_MUST_USE rlx_status *rlx_onnx_map_center_crop_pad(rlx_imp *I, const Onnx__NodeProto *n);
RLX_MUST_USE rlx_status *rlx_onnx_map_col2im(rlx_imp *I, const Onnx__NodeProto *n);
RLX_MUST_USE rlx_status *rlx_onnx_map_reverse_sequence(rlx_imp *I, const Onnx__NodeProto *n);
RLX_MUST_USE rlx_status *rlx_onnx_map_max_unpool(rlx_imp *I, const Onnx__NodeProto *n);
RLX_MUST_USE rlx_status *rlx_onnx_map_tensor_scatter(rlx_imp *I, const Onnx__NodeProto *n);
RLX_MUST_USE rlx_status *rlx_onnx_map_non_zero(rlx_imp *I, const Onnx__NodeProto *n);
RLX_MUST_USE rlx_status *rlx_onnx_map_unique(rlx_imp *I, const Onnx__NodeProto *n);
RLX_MUST_USE rlx_status *rlx_onnx_map_non_max_suppression(rlx_imp *I, const Onnx__NodeProto *n);

/* import_ops_misc.c */
RLX_MUST_USE rlx_status *rlx_onnx_map_det(rlx_imp *I, const Onnx__NodeProto *n);
RLX_MUST_USE rlx_status *rlx_onnx_map_mel_weight_matrix(rlx_imp *I, const Onnx__NodeProto *n);
RLX_MUST_USE rlx_status *rlx_onnx_map_adagrad(rlx_imp *I, const Onnx__NodeProto *n);
RLX_MUST_USE rlx_status *rlx_onnx_map_adam(rlx_imp *I, const Onnx__NodeProto *n);
RLX_MUST_USE rlx_status *rlx_onnx_map_momentum(rlx_imp *I, const Onnx__NodeProto *n);
RLX_MUST_USE rlx_status *rlx_onnx_map_binarizer(rlx_imp *I, const Onnx__NodeProto *n);
RLX_MUST_USE rlx_status *rlx_onnx_map_array_feature_extractor(rlx_imp *I, const Onnx__NodeProto *n);
RLX_MUST_USE rlx_status *rlx_onnx_map_tfidf_vectorizer(rlx_imp *I, const Onnx__NodeProto *n);

/* import_ops_stateful.c */
RLX_MUST_USE rlx_status *rlx_onnx_map_causal_conv_with_state(rlx_imp *I, const Onnx__NodeProto *n);
RLX_MUST_USE rlx_status *rlx_onnx_map_linear_attention(rlx_imp *I, const Onnx__NodeProto *n);

/* import_ops_grid.c */
RLX_MUST_USE rlx_status *rlx_onnx_map_grid_sample(rlx_imp *I, const Onnx__NodeProto *n);
RLX_MUST_USE rlx_status *rlx_onnx_map_affine_grid(rlx_imp *I, const Onnx__NodeProto *n);
RLX_MUST_USE rlx_status *rlx_onnx_map_roi_align(rlx_imp *I, const Onnx__NodeProto *n);
RLX_MUST_USE rlx_status *rlx_onnx_map_deform_conv(rlx_imp *I, const Onnx__NodeProto *n);

#endif
