/* dequant.h: the weight-quantization schemes of DequantMatMul and DequantGroupedMatMul (see
 * rlx/op_table.h), shared by their shape inference and their MLX lowering. */
#ifndef RLX_IR_DEQUANT_H
#define RLX_IR_DEQUANT_H

#include <stdint.h>

/* How a scheme's weight comes in (the inputs after x):
 * INT:  q[N,K] int8/uint8, scale[N,K/bs] float, [zero_point[N,K/bs] float] (bs = block_size);
 * GGUF: packed uint8[N, K/QK*B], the rows of a GGUF tensor (scales inside the blocks);
 * MX:   w uint8[N, K*bits/8] (codes packed low bits first), scales uint8[N, K/QK] (E8M0);
 * NV:   w uint8[N, K/2] (E2M1 codes, low nibble first), scales uint8[N, K/16] (E4M3),
 *       global_scale float (one value);
 * FP8:  q uint8[N,K] (FP8 codes), scale[N,K/bs] float. */
typedef enum rlx_dq_kind { RLX_DQK_INT, RLX_DQK_GGUF, RLX_DQK_MX, RLX_DQK_NV, RLX_DQK_FP8 } rlx_dq_kind;

/* X(ID, name, kind, block elements QK, block bytes B, bits). GGUF block sizes are those of
 * ggml-common.h's block_* structs (QK_K = 256); QK 0: the block_size attribute. */
#define RLX_DEQUANT_SCHEMES(X)                        \
  X(INT8_BLOCK, "int8_block", INT, 0, 0, 8)           \
  X(INT8_BLOCK_ASYM, "int8_block_asym", INT, 0, 0, 8) \
  X(INT4_BLOCK, "int4_block", INT, 0, 0, 4)           \
  X(INT4_BLOCK_ASYM, "int4_block_asym", INT, 0, 0, 4) \
  X(Q4_0, "gguf_q4_0", GGUF, 32, 18, 0)               \
  X(Q4_1, "gguf_q4_1", GGUF, 32, 20, 0)               \
  X(Q5_0, "gguf_q5_0", GGUF, 32, 22, 0)               \
  X(Q5_1, "gguf_q5_1", GGUF, 32, 24, 0)               \
  X(Q8_0, "gguf_q8_0", GGUF, 32, 34, 0)               \
  X(Q2_K, "gguf_q2k", GGUF, 256, 84, 0)               \
  X(Q3_K, "gguf_q3k", GGUF, 256, 110, 0)              \
  X(Q4_K, "gguf_q4k", GGUF, 256, 144, 0)              \
  X(Q5_K, "gguf_q5k", GGUF, 256, 176, 0)              \
  X(Q6_K, "gguf_q6k", GGUF, 256, 210, 0)              \
  X(Q8_K, "gguf_q8k", GGUF, 256, 292, 0)              \
  X(MXFP4_GGUF, "gguf_mxfp4", GGUF, 32, 17, 0)        \
  X(NVFP4_GGUF, "gguf_nvfp4", GGUF, 64, 36, 0)        \
  X(MXFP4, "mxfp4", MX, 32, 0, 4)                     \
  X(MXFP8, "mxfp8", MX, 32, 0, 8)                     \
  X(NVFP4, "nvfp4", NV, 16, 0, 4)                     \
  X(FP8_E4M3, "fp8_e4m3", FP8, 0, 0, 8)               \
  X(FP8_E5M2, "fp8_e5m2", FP8, 0, 0, 8)

typedef enum rlx_dq_scheme {
#define RLX_X(id, name, kind, qk, bb, bits) RLX_DQ_##id,
  RLX_DEQUANT_SCHEMES(RLX_X)
#undef RLX_X
      RLX_DQ_COUNT
} rlx_dq_scheme;

typedef struct rlx_dq_info {
  const char *name;
  rlx_dq_kind kind;
  int64_t block_elems, block_bytes; /* 0: see the table */
  int bits;
} rlx_dq_info;

/* The scheme named `name`; RLX_DQ_COUNT when unknown. */
rlx_dq_scheme rlx_dq_scheme_of(const char *name);
const rlx_dq_info *rlx_dq_info_of(rlx_dq_scheme s);

#endif
