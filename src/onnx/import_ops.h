/* import_ops.h: shared pieces of the op mappings (import_ops*.c). */
#ifndef RLX_ONNX_IMPORT_OPS_H
#define RLX_ONNX_IMPORT_OPS_H

#include "onnx/importer.h"

extern const rlx_onnx_op rlx_onnx_tensor_ops[];
extern const size_t rlx_onnx_tensor_ops_len;
extern const rlx_onnx_op rlx_onnx_reduce_ops[];
extern const size_t rlx_onnx_reduce_ops_len;
extern const rlx_onnx_op rlx_onnx_nn_ops[];
extern const size_t rlx_onnx_nn_ops_len;
extern const rlx_onnx_op rlx_onnx_fftsample_ops[];
extern const size_t rlx_onnx_fftsample_ops_len;
extern const rlx_onnx_op rlx_onnx_attention_ops[];
extern const size_t rlx_onnx_attention_ops_len;
extern const rlx_onnx_op rlx_onnx_control_ops[];
extern const size_t rlx_onnx_control_ops_len;
extern const rlx_onnx_op rlx_onnx_importer_ops[];
extern const size_t rlx_onnx_importer_ops_len;
extern const rlx_onnx_op rlx_onnx_convquant_ops[];
extern const size_t rlx_onnx_convquant_ops_len;
/* A note rlx_onnx_describe shows next to a mapped op (what must be known at import time), or NULL. */
const char *rlx_onnx_op_note(const char *domain, const char *op_type);

/* y = the ONNX activation function `name` (case-insensitive: Relu, Tanh, Sigmoid, Softplus,
 * LeakyRelu, ThresholdedRelu, Elu, HardSigmoid, Softsign, Affine, ScaledTanh; the formulas of the
 * ONNX operators of those names and of the RNN docs for Affine and ScaledTanh) of x, with alpha /
 * beta (NULL: the operator's default). UNIMPLEMENTED naming other functions. */
RLX_MUST_USE rlx_status *imp_activation(rlx_imp *I, const Onnx__NodeProto *n, const char *name, const double *alpha, const double *beta, rlx_value x,
                           rlx_value *y);

/* LayerNormalization-shaped ops (x, scale, [bias]; attributes axis, epsilon): normalizes x over its
 * dims [axis, rank) with the rlx norm `op` (LayerNorm, RmsNorm) on x flattened to [outer, inner]. */
RLX_MUST_USE rlx_status *imp_trailing_norm(rlx_imp *I, const Onnx__NodeProto *n, rlx_op op, rlx_value *y);
/* Reduce x over axes (kind sum/mean/max/min/prod). */
RLX_MUST_USE rlx_status *imp_reduce(rlx_imp *I, const Onnx__NodeProto *n, const char *kind, rlx_value x, size_t na, const int64_t *axes,
                       bool keepdims, rlx_value *y);
/* Axes from an attribute (older opsets) or from input k (newer ones); *present false when neither. */
RLX_MUST_USE rlx_status *imp_axes(rlx_imp *I, const Onnx__NodeProto *n, const char *attr, size_t k, bool from_input, int64_t **axes,
                     size_t *cnt, bool *present);

/* Adds the rlx Conv (ConvTranspose when transpose) of in[0..nin) = x, w, [bias] with the ONNX
 * node's convolution attributes (auto_pad, pads, strides, dilations, group, output_padding,
 * output_shape; the kernel from w's shape). */
RLX_MUST_USE rlx_status *imp_conv(rlx_imp *I, const Onnx__NodeProto *n, bool transpose, size_t nin, const rlx_value *in, rlx_value *y);

/* MaxPool's Indices output for x pooled to type ty (kernel k, strides s, dilations d, explicit
 * pads, ceil_mode overhang from ty): the flat index into x (row-major, or column-major spatial
 * dims for storage_order 1) of each window's first maximum, int64. Pads hold the lowest value
 * (-inf, or the integer dtype's minimum): a window whose maximum equals it may name a pad. */
RLX_MUST_USE rlx_status *imp_pool_argmax(rlx_imp *I, const Onnx__NodeProto *n, rlx_value x, const rlx_type *ty, const int64_t *k,
                            const int64_t *s, const int64_t *d, const int64_t *pads, bool column_major, rlx_value *out);

#endif
