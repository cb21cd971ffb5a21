/* dequant.h: the weight-quantization schemes of DequantMatMul and DequantGroupedMatMul (see
 * rlx/op_table.h), shared by their shape inference and their MLX lowering. */
#ifndef RLX_IR_DEQUANT_H
#define RLX_IR_DEQUANT_H

#include <stdint.h>

/* X(ID, name, block elements, block bytes). GGUF block types carry their scales inside the block
 * bytes (sizes from ggml-common.h's block_* structs, QK_K = 256); the others take separate
 * scale inputs, block_size elements per scale (block bytes 0). */
#define RLX_DEQUANT_SCHEMES(X)            \
  X(INT8_BLOCK, "int8_block", 0, 0)       \
  X(INT8_BLOCK_ASYM, "int8_block_asym", 0, 0) \
  X(INT4_BLOCK, "int4_block", 0, 0)       \
  X(INT4_BLOCK_ASYM, "int4_block_asym", 0, 0) \
  X(Q4_0, "gguf_q4_0", 32, 18)            \
  X(Q4_1, "gguf_q4_1", 32, 20)            \
  X(Q5_0, "gguf_q5_0", 32, 22)            \
  X(Q5_1, "gguf_q5_1", 32, 24)            \
  X(Q8_0, "gguf_q8_0", 32, 34)            \
  X(Q2_K, "gguf_q2k", 256, 84)            \
  X(Q3_K, "gguf_q3k", 256, 110)           \
  X(Q4_K, "gguf_q4k", 256, 144)           \
  X(Q5_K, "gguf_q5k", 256, 176)           \
  X(Q6_K, "gguf_q6k", 256, 210)           \
  X(Q8_K, "gguf_q8k", 256, 292)           \
  X(MXFP4_GGUF, "gguf_mxfp4", 32, 17)     \
  X(NVFP4_GGUF, "gguf_nvfp4", 64, 36)

typedef enum rlx_dq_scheme {
#define RLX_X(id, name, qk, bb) RLX_DQ_##id,
  RLX_DEQUANT_SCHEMES(RLX_X)
#undef RLX_X
      RLX_DQ_COUNT
} rlx_dq_scheme;

typedef struct rlx_dq_info {
  const char *name;
  int64_t block_elems, block_bytes; /* 0 for schemes with separate scale inputs */
} rlx_dq_info;

/* The scheme named `name`; RLX_DQ_COUNT when unknown. */
rlx_dq_scheme rlx_dq_scheme_of(const char *name);
const rlx_dq_info *rlx_dq_info_of(rlx_dq_scheme s);

#endif
