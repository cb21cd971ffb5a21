/* rlx/op_table.h: the op vocabulary of the rlx IR, written once.
 *
 * X(ENUM, "Name", family, min_inputs, max_inputs, "attribute schema")
 *
 * The table generates the rlx_op enum (RLX_OP_<ENUM>), the op names, the arity checks, the
 * attribute validation, and the dispatch to shape inference (src/ir/infer_<family>.c) and to the
 * MLX lowering (src/mlx/lower_<family>.c). Adding an op is one row here, one case in its family's
 * inference and lowering, one importer mapping and one test.
 *
 * Attribute schema: space-separated `name:type` (required) or `name:type=default` (optional).
 * Types: i = int64, f = float (double), is = int64 list, fs = float list, s = string,
 * g = sub-graph (owned by the node once added). A list default is comma-separated ("=0,1"; "="
 * is the empty list). A schema that ends in "*" accepts further attributes (custom ops).
 *
 * Conventions for every op (documented here once):
 * - Axes are int64; negative axes count from the end (axis + rank).
 * - Elementwise ops broadcast their inputs with NumPy rules
 *   (https://numpy.org/doc/stable/user/basics.broadcasting.html); every input must have the same
 *   dtype (the importer inserts Casts); compares return bool.
 * - Index outputs (TopK, ArgMax, ArgMin, Sample) are int64; index inputs accept any integer dtype
 *   (negative indices count from the end of the axis, as in ONNX).
 * - Ops are defined on static shapes after symbol binding; "x[N,C,H,W]" names dims for the doc.
 * - Float formulas use the input dtype unless stated; formula sources are cited per op.
 */
#ifndef RLX_OP_TABLE_H
#define RLX_OP_TABLE_H

/* clang-format off */
#define RLX_OP_TABLE(X) \
  /* ---- leaves: built with rlx_graph_input / _param / _constant (see rlx/graph.h) ---- */ \
  X(INPUT,    "Input",    leaf, 0, 0, "") /* a named runtime input of a declared type */ \
  X(PARAM,    "Param",    leaf, 0, 0, "") /* a named weight, set on the executable (rlx_executable_set_param) */ \
  X(CONSTANT, "Constant", leaf, 0, 0, "") /* raw little-endian bytes in the node's dtype */ \
  \
  /* ---- elementwise unary: x of any shape -> y of x's shape, y[i] = f(x[i]), y in x's dtype  \
   * unless noted. "float": float16/bfloat16/float32/float64 (half types computed by MLX in their \
   * own precision); "numeric": float or integer (integers wrap like C). No attributes unless     \
   * shown. Formulas: the ONNX operator of the same name (https://onnx.ai/onnx/operators/) and C \
   * <math.h> for the transcendental functions (radians); a float dtype outside the listed class \
   * fails with INVALID_ARGUMENT naming the dtype. ---- */ \
  X(ABS,         "Abs",        unary, 1, 1, "") /* |x|; numeric */ \
  X(NEG,         "Neg",        unary, 1, 1, "") /* -x; numeric */ \
  X(EXP,         "Exp",        unary, 1, 1, "") /* e^x; float */ \
  X(LOG,         "Log",        unary, 1, 1, "") /* natural log; float (log 0 = -inf, x < 0: NaN) */ \
  X(SQRT,        "Sqrt",       unary, 1, 1, "") /* float (x < 0: NaN) */ \
  X(RSQRT,       "Rsqrt",      unary, 1, 1, "") /* 1/sqrt(x); float */ \
  X(SIN,         "Sin",        unary, 1, 1, "") /* float */ \
  X(COS,         "Cos",        unary, 1, 1, "") /* float */ \
  X(TAN,         "Tan",        unary, 1, 1, "") /* float */ \
  X(ASIN,        "Asin",       unary, 1, 1, "") /* float, [-1, 1] -> [-pi/2, pi/2] (NaN outside) */ \
  X(ACOS,        "Acos",       unary, 1, 1, "") /* float, [-1, 1] -> [0, pi] (NaN outside) */ \
  X(ATAN,        "Atan",       unary, 1, 1, "") /* float -> (-pi/2, pi/2) */ \
  X(SINH,        "Sinh",       unary, 1, 1, "") /* float */ \
  X(COSH,        "Cosh",       unary, 1, 1, "") /* float */ \
  X(TANH,        "Tanh",       unary, 1, 1, "") /* float */ \
  X(ASINH,       "Asinh",      unary, 1, 1, "") /* float */ \
  X(ACOSH,       "Acosh",      unary, 1, 1, "") /* float, x >= 1 (NaN below) */ \
  X(ATANH,       "Atanh",      unary, 1, 1, "") /* float, (-1, 1) (+-inf at +-1, NaN outside) */ \
  X(SIGMOID,     "Sigmoid",    unary, 1, 1, "") /* 1/(1+exp(-x)); float */ \
  X(RELU,        "Relu",       unary, 1, 1, "") /* max(x, 0); numeric */ \
  X(GELU,        "Gelu",       unary, 1, 1, "") /* exact: x/2 (1 + erf(x/sqrt 2)); float; Hendrycks & Gimpel 2016 */ \
  X(GELU_APPROX, "GeluApprox", unary, 1, 1, "") /* tanh form: x/2 (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3))); float; same paper */ \
  X(SILU,        "Silu",       unary, 1, 1, "") /* x * sigmoid(x); float (Elfwing et al. 2018) */ \
  X(HARD_SIGMOID, "HardSigmoid", unary, 1, 1, "alpha:f=0.2 beta:f=0.5") /* max(0, min(1, alpha x + beta)); float (ONNX HardSigmoid) */ \
  X(HARD_SWISH,  "HardSwish",  unary, 1, 1, "") /* x max(0, min(1, x/6 + 1/2)) = x relu6(x + 3) / 6; float (ONNX HardSwish; Howard et al. 2019, MobileNetV3) */ \
  X(ROUND,       "Round",      unary, 1, 1, "") /* to nearest, ties to even (ONNX Round); float */ \
  X(FLOOR,       "Floor",      unary, 1, 1, "") /* float */ \
  X(CEIL,        "Ceil",       unary, 1, 1, "") /* float */ \
  X(SIGN,        "Sign",       unary, 1, 1, "") /* -1, 0 or 1 in x's dtype; numeric */ \
  X(RECIPROCAL,  "Reciprocal", unary, 1, 1, "") /* 1/x; float (1/0 = inf) */ \
  X(ERF,         "Erf",        unary, 1, 1, "") /* Gauss error function 2/sqrt(pi) int_0^x exp(-t^2) dt; float */ \
  X(SOFTPLUS,    "Softplus",   unary, 1, 1, "") /* log(1 + exp(x)) as logaddexp(x, 0), overflow-safe; float */ \
  X(NOT,         "Not",        unary, 1, 1, "") /* logical not; bool -> bool */ \
  X(IS_NAN,      "IsNaN",      unary, 1, 1, "") /* x != x; float -> bool */ \
  X(IS_INF,      "IsInf",      unary, 1, 1, "detect_negative:i=1 detect_positive:i=1") /* float -> bool: x is -inf (when detect_negative) or +inf (when detect_positive); both 0: all false (ONNX IsInf) */ \
  X(BITWISE_NOT, "BitwiseNot", unary, 1, 1, "") /* ~x; integers */ \
  \
  /* ---- elementwise binary: (a, b) of one dtype, NumPy-broadcast shapes -> y of the broadcast \
   * shape in that dtype ("numeric" and formulas as for the unary ops; ONNX operators of the    \
   * same names). Errors: dtypes differ or outside the class, shapes do not broadcast           \
   * (INVALID_ARGUMENT). ---- */ \
  X(ADD,         "Add",        binary, 2, 2, "") /* a + b; numeric */ \
  X(SUB,         "Sub",        binary, 2, 2, "") /* a - b; numeric */ \
  X(MUL,         "Mul",        binary, 2, 2, "") /* a * b; numeric */ \
  X(DIV,         "Div",        binary, 2, 2, "") /* a / b; numeric; integers truncate toward zero (ONNX/C semantics) */ \
  X(MAX,         "Max",        binary, 2, 2, "") /* NaN-propagating maximum; numeric */ \
  X(MIN,         "Min",        binary, 2, 2, "") /* NaN-propagating minimum; numeric */ \
  X(POW,         "Pow",        binary, 2, 2, "") /* a^b; numeric (the importer casts ONNX's exponent to a's dtype) */ \
  X(MOD,         "Mod",        binary, 2, 2, "fmod:i=0") /* numeric; fmod=0: sign of divisor (Python %); fmod=1: sign of dividend (C fmod); ONNX Mod */ \
  X(AND,         "And",        binary, 2, 2, "") /* logical and; bool */ \
  X(OR,          "Or",         binary, 2, 2, "") /* logical or; bool */ \
  X(XOR,         "Xor",        binary, 2, 2, "") /* logical xor (a != b); bool */ \
  X(BITWISE_AND, "BitwiseAnd", binary, 2, 2, "") /* a & b; integers or bool */ \
  X(BITWISE_OR,  "BitwiseOr",  binary, 2, 2, "") /* a | b; integers or bool */ \
  X(BITWISE_XOR, "BitwiseXor", binary, 2, 2, "") /* a ^ b; integers or bool */ \
  X(BIT_SHIFT,   "BitShift",   binary, 2, 2, "direction:s=left") /* a << b ("left") or a >> b ("right"; other values INVALID_ARGUMENT); integers (ONNX defines unsigned ones; a signed right shift is arithmetic) */ \
  \
  /* ---- compares: (a, b) of one dtype, NumPy-broadcast shapes -> bool of the broadcast shape; \
   * Equal/NotEqual take any dtype, the orderings numeric ones (IEEE: NaN compares false except \
   * NotEqual) ---- */ \
  X(EQUAL,         "Equal",          binary, 2, 2, "") /* a == b */ \
  X(NOT_EQUAL,     "NotEqual",       binary, 2, 2, "") /* a != b */ \
  X(LESS,          "Less",           binary, 2, 2, "") /* a < b */ \
  X(LESS_EQUAL,    "LessOrEqual",    binary, 2, 2, "") /* a <= b */ \
  X(GREATER,       "Greater",        binary, 2, 2, "") /* a > b */ \
  X(GREATER_EQUAL, "GreaterOrEqual", binary, 2, 2, "") /* a >= b */ \
  \
  /* Where(cond bool, x, y) -> cond ? x : y, the three shapes broadcast together (NumPy rules), x \
   * and y of one dtype (any), the output in it (numpy.where). Errors: cond not bool, x/y dtypes  \
   * differ, shapes do not broadcast (INVALID_ARGUMENT). */ \
  X(WHERE, "Where", where, 3, 3, "") \
  /* Cast(x) -> x's shape in dtype `to` (an rlx_dtype value; others INVALID_ARGUMENT): values     \
   * converted as MLX astype (C conversions): float->int truncates toward zero; x->bool is x != 0; \
   * bool->number is 0/1. The low-precision storage types (rlx_dtype_is_lowp) convert as ml_dtypes \
   * and ONNX Cast do: to a float8/float4 type round to nearest even, with saturate = 1 values    \
   * beyond the largest finite one (infinities included) clamp to it, with 0 they overflow to NaN \
   * (E4M3FN, FNUZ types) or inf (E5M2); float4 E2M1 always saturates, NaN -> -0; to int4/uint4/  \
   * int2/uint2 truncate toward zero and keep the low bits (NaN/inf -> 0); from them exact. */ \
  X(CAST,  "Cast",  cast, 1, 1, "to:i saturate:i=1") \
  /* ElementwiseRegion(x0..xn-1): a chain of elementwise steps lowered into one MLX trace so MLX   \
   * can fuse it. `chain` holds 5 ints per step: kind, sub-op, a, b, c. kind: 0 unary (sub-op = an \
   * attribute-free RLX_OP_ unary enum value; operand a), 1 cast (sub-op = dtype; a), 2 binary or \
   * compare (sub-op = an attribute-free RLX_OP_ binary/compare value; a, b), 3 where (a = cond, \
   * b, c). Operands: k >= 0 is input \
   * k; k < 0 is the result of step -k-1 (earlier steps only); fields past a step's operand count \
   * are ignored. At most 256 steps; each step follows the single op's dtype rules. The result is \
   * the last step's. Errors: malformed chain (INVALID_ARGUMENT naming the step). */ \
  X(ELEMENTWISE_REGION, "ElementwiseRegion", region, 1, 16, "chain:is") \
  \
  /* ---- linear algebra ---- */ \
  /* MatMul(a, b) -> y: numpy.matmul (https://numpy.org/doc/stable/reference/generated/numpy.matmul.html). \
   * a[..., M, K] @ b[..., K, N] -> [batch..., M, N] with the batch dims broadcast (NumPy rules); a  \
   * 1-D a is [1,K] and a 1-D b is [K,1], the added dim removed from y (1-D @ 1-D gives rank 0).     \
   * Ranks >= 1; equal dtypes, float or integer (not bool); y has that dtype. Integer operands are  \
   * exact while every partial sum stays below 2^53 in magnitude (CPU: float64 accumulation; GPU:   \
   * float32, 2^24) and wrap to the dtype like NumPy. Errors: K mismatch, non-broadcastable batch   \
   * dims, dtype mismatch or bool, rank 0 (INVALID_ARGUMENT). */ \
  X(MATMUL, "MatMul", matmul, 2, 2, "") \
  /* DotGeneral(lhs, rhs) -> y: jax.lax.dot_general. lhs_batch[i] pairs with rhs_batch[i] and      \
   * lhs_contracting[i] with rhs_contracting[i] (equal sizes; negative dims count from the end; no  \
   * dim listed twice); contracting pairs are summed over. y dims: the batch dims (lhs order), then \
   * lhs's remaining (free) dims, then rhs's, each in their original order; no contracting dims    \
   * give an outer product. Dtypes as MatMul. Errors: list lengths differ, sizes differ, a dim      \
   * repeated (INVALID_ARGUMENT), a dim outside the rank (OUT_OF_RANGE). */ \
  X(DOT_GENERAL, "DotGeneral", matmul, 2, 2, "lhs_contracting:is rhs_contracting:is lhs_batch:is= rhs_batch:is=") \
  /* FusedMatMulBiasAct(x[...,K], w[K,N], [b[N]]) -> y[...,N] = act(x @ w + b); float, equal       \
   * dtypes. activation: "none" or the name of a float unary op without attributes (Relu, Gelu,     \
   * GeluApprox, Silu, Sigmoid, Tanh, Exp, ...; see the unary rows above for their formulas).       \
   * Errors: unknown or non-float activation, w not [K,N], b not [N] (INVALID_ARGUMENT). */ \
  X(FUSED_MATMUL_BIAS_ACT, "FusedMatMulBiasAct", matmul, 2, 3, "activation:s=none") \
  /* LoraMatMul(x[...,K], W[K,N], A[K,r], B[r,N]) -> [...,N] = x@W + scale * (x@A)@B; float, equal   \
   * dtypes (Hu et al. 2021, LoRA: Low-Rank Adaptation). Errors: mismatched K, r or N. */ \
  X(LORA_MATMUL, "LoraMatMul", matmul, 4, 4, "scale:f=1") \
  /* GroupedMatMul(x[M,K], w[E,K,N], idx[M]) -> y[M,N], y[m] = x[m] @ w[idx[m]] (mixture-of-experts   \
   * routing; MLX gather_mm). x, w float of equal dtype; idx any integer dtype, negative indices     \
   * count from the end, indices still outside [0, E) are clamped into it. */ \
  X(GROUPED_MATMUL, "GroupedMatMul", matmul, 3, 3, "") \
  /* DequantMatMul(x[...,K], weight inputs by scheme) -> y[...,N] = x @ W^T, W[N,K] the        \
   * dequantized weight; x float, y has x's dtype (float16/bfloat16 x: W is dequantized in float32 \
   * and cast to x's dtype; float64 x: W in float32, exact in float64, CPU only).                  \
   * Block-integer schemes (inputs x, q[N,K], scale[N,K/bs], [zero_point[N,K/bs]]):               \
   * W[n,k] = (q[n,k] - zp[n,k/bs]) * scale[n,k/bs], bs = block_size (32, 64 or 128; K a multiple). \
   * int8_block (q int8 in [-128,127], no zero point), int8_block_asym (q uint8 in [0,255],        \
   * zero_point input), int4_block (q int8 in [-8,7], one value per element, no zero point),       \
   * int4_block_asym (q uint8 in [0,15], zero_point input); scale and zero_point float, cast to x's \
   * dtype; q values outside the scheme's range wrap modulo 2^bits. Lowered to MLX's affine         \
   * quantized_matmul (w = scale * u + bias per group, u = q + 2^(bits-1) for the symmetric        \
   * schemes), float64 x by dequantizing first.                                                    \
   * GGUF schemes (inputs x, packed uint8[N, K/QK * B]): packed holds the rows of a GGUF/ggml       \
   * tensor of ggml shape [K, N] byte for byte (row n = its K/QK blocks, each B bytes, as in        \
   * ggml-common.h's block_* structs; little-endian). scheme (ggml type, QK elements, B bytes):     \
   * gguf_q4_0 (Q4_0, 32, 18), gguf_q4_1 (Q4_1, 32, 20), gguf_q5_0 (Q5_0, 32, 22), gguf_q5_1       \
   * (Q5_1, 32, 24), gguf_q8_0 (Q8_0, 32, 34), gguf_q2k (Q2_K, 256, 84), gguf_q3k (Q3_K, 256, 110),   \
   * gguf_q4k (Q4_K, 256, 144), gguf_q5k (Q5_K, 256, 176), gguf_q6k (Q6_K, 256, 210), gguf_q8k      \
   * (Q8_K, 256, 292), gguf_mxfp4 (MXFP4, 32, 17), gguf_nvfp4 (NVFP4, 64, 36). W is what ggml's      \
   * dequantize_row_* (and gguf-py's gguf.quants.dequantize) give, bit for bit in float32 up to    \
   * fused multiply-adds: the bytes stay packed on the device; gguf_q4_0, q4_1, q8_0 and q4k are   \
   * repacked there by MLX ops into MLX's affine layout (groups of 32, the same formulas) and run   \
   * on quantized_matmul; the others are unpacked and dequantized by MLX ops (one fused kernel in   \
   * compiled mode), then one matmul; nothing goes through the host. block_size is ignored.         \
   * OCP MX schemes (OCP Microscaling Formats v1.0): mxfp4 (x, w uint8[N,K/2], scales uint8[N,K/32]) \
   * and mxfp8 (x, w uint8[N,K], scales uint8[N,K/32]): w holds FP4 E2M1 codes (two per byte, low   \
   * nibble = even element) or FP8 E4M3 codes, scales are E8M0 (2^(e-127), 0xFF NaN), W = code * \
   * scale per 32 elements. nvfp4 (NVIDIA NVFP4: x, w uint8[N,K/2] E2M1 codes, scales uint8[N,K/16] \
   * FP8 E4M3 per 16 elements, global_scale one float): W = code * scale * global_scale. These map \
   * onto MLX's quantized_matmul in its mxfp4/mxfp8/nvfp4 modes with the bytes as they are (viewed \
   * as uint32 words); NaN scales give NaN (MLX reads E8M0 0xFF as 2^128: rows holding one are set \
   * to NaN). fp8_e4m3 / fp8_e5m2 (OCP 8-bit FP spec: E4M3 without infinities, NaN S.1111.111;     \
   * E5M2 IEEE-like): x, q uint8[N,K] codes, scale float[N,K/bs] (any block_size dividing K): W =   \
   * code * scale, dequantized with MLX ops, then matmul. float64 x: every scheme dequantizes on   \
   * the device (float32 codes, float64 products) and multiplies in float64 (CPU only). On the CPU  \
   * an x of more than 4 rows takes that dequantize-then-matmul path for every scheme (MLX's CPU    \
   * quantized_matmul goes row by row; BLAS is faster for prefill); float32 x times gguf_q8_0,     \
   * q4_0, q4_1, q2k, q3k, q4k, q5k or q6k runs rlx's matvec kernel on the packed bytes instead  \
   * (decoding; past 4 rows through tiles it dequantizes).                                         \
   * activations: "float" (default) multiplies x as it is; "q8_0" first rounds x to GGUF Q8_0       \
   * blocks along K (K a multiple of 32), as llama.cpp's CPU matmuls do: x is replaced by           \
   * gguf-py's dequantize(quantize(x, Q8_0)) computed in float32 (per 32 values d = max|x| / 127,   \
   * q = round(x / d) half away from zero, x = q * float16(d)), a block holding an infinite or NaN \
   * value staying as it is. On the CPU, float32 x times gguf_q8_0, q4_0, q4_1 or q4k then meets  \
   * the codes in integer dot products: any number of rows where the executable keeps the weights \
   * (a constant or param) in blocks of 8 rows and the CPU has AVX-512 VNNI, else at most 4 rows   \
   * (a row whose result is not finite is redone in float32); elsewhere MLX ops round x, then the  \
   * scheme's path runs.                                                                          \
   * Errors (INVALID_ARGUMENT, naming the input and the expected dtype/shape): unknown scheme,       \
   * wrong input count, q/packed/scales dtype or shape (a GGUF row of the wrong byte count, K not a \
   * multiple of the block), a global_scale of more than one value, activations other than float   \
   * or q8_0, or q8_0 with K not a multiple of 32; block sizes MLX lacks for the                   \
   * int schemes (UNIMPLEMENTED). */ \
  X(DEQUANT_MATMUL, "DequantMatMul", dequant, 2, 4, "scheme:s block_size:i=32 activations:s=float") \
  /* DequantGroupedMatMul(x[M,K], weight inputs, idx[M]) -> y[M,N], y[m] = x[m] @ W[idx[m]]^T: the \
   * mixture-of-experts GroupedMatMul over quantized experts. The weight inputs are DequantMatMul's \
   * for `scheme` stacked over E experts on a new first axis (GGUF: packed uint8[E,N,K/QK*B], the  \
   * bytes of a ggml [K,N,E] tensor; int schemes q[E,N,K], scale[E,N,K/bs], ...; nvfp4's           \
   * global_scale one value or [E]); idx (last input) any integer dtype, negative indices count   \
   * from the end, the rest clamped into [0, E). Int, MX and NVFP4 schemes run on MLX's gather_qmm; \
   * GGUF and FP8 dequantize on the device, only the M selected experts' rows when M <= E, else all \
   * experts once, then a batched (gather) matmul. Errors as DequantMatMul, plus the expert axis  \
   * and idx shape (INVALID_ARGUMENT). */ \
  X(DEQUANT_GROUPED_MATMUL, "DequantGroupedMatMul", dequant, 3, 5, "scheme:s block_size:i=32") \
  /* Dequantize(packed[..., K/QK*B]) -> float32[..., K]: the GGUF blocks of each row (the last axis) \
   * dequantized, the W of DequantMatMul's GGUF schemes (same scheme names and formulas; e.g. an   \
   * LLM's quantized token embedding after a Gather of its packed rows). Errors: a scheme that is  \
   * not GGUF, packed not uint8 of rank >= 1, its last dim not a whole number of blocks          \
   * (INVALID_ARGUMENT). */ \
  X(DEQUANTIZE, "Dequantize", dequant, 1, 1, "scheme:s") \
  \
  /* ---- normalization (float x; gamma/beta in x's dtype) ---- */ \
  /* LayerNorm(x, gamma, [beta]) over the single axis `axis` (not necessarily the last):           \
   * (x - mean) / sqrt(var + epsilon) * gamma + beta, biased variance, gamma/beta [x.shape[axis]]  \
   * broadcast along that axis (Ba et al. 2016). Lowered to MLX fast::layer_norm on the axis moved \
   * last. ONNX LayerNormalization (several trailing axes) is imported as a reshape to one axis. */ \
  X(LAYER_NORM, "LayerNorm", norm, 2, 3, "axis:i=-1 epsilon:f=1e-5") \
  /* LayerNorm2d(x[N,C,H,W], gamma[C], [beta[C]]): LayerNorm over the channels C at every (n, h, w) \
   * (ConvNeXt's channels-first LayerNorm; Liu et al. 2022) = LayerNorm with axis 1. */ \
  X(LAYER_NORM_2D, "LayerNorm2d", norm, 2, 3, "epsilon:f=1e-5") \
  /* RmsNorm(x, gamma, [beta]) over `axis`: x / sqrt(mean(x^2) + epsilon) * gamma [+ beta], gamma and \
   * beta [x.shape[axis]] (Zhang & Sennrich 2019; beta, when given, is added). MLX fast::rms_norm. */ \
  X(RMS_NORM, "RmsNorm", norm, 2, 3, "axis:i=-1 epsilon:f=1e-6") \
  /* GroupNorm(x[N,C,...], gamma[C], beta[C]), rank >= 2: the C channels form num_groups groups of  \
   * C/num_groups consecutive channels; each (n, group) is normalized over its channels and every   \
   * spatial position, (x - mean) / sqrt(var + epsilon) (biased variance), then scaled and shifted  \
   * per channel (Wu & He 2018; ONNX GroupNormalization-21). num_groups = C is InstanceNorm. */ \
  X(GROUP_NORM, "GroupNorm", norm, 3, 3, "num_groups:i epsilon:f=1e-5") \
  /* Softmax / LogSoftmax along one axis (rank >= 1, float): exp(x - max) / sum(exp(x - max)) and   \
   * x - logsumexp(x), computed stably (MLX precise softmax / logsumexp). */ \
  X(SOFTMAX,     "Softmax",    norm, 1, 1, "axis:i=-1") \
  X(LOG_SOFTMAX, "LogSoftmax", norm, 1, 1, "axis:i=-1") \
  \
  /* ---- attention ---- */ \
  /* Attention(q, k, v, [mask]) = softmax(M(cap(scale * q k^T))) v per head (Vaswani et al. 2017). \
   * Layouts: rank 4 q[B,Hq,Sq,D], k[B,Hkv,Sk,D], v[B,Hkv,Sk,Dv] -> y[B,Hq,Sq,Dv]; rank 3 packed   \
   * q[B,Sq,Hq*D], k[B,Sk,Hkv*D], v[B,Sk,Hkv*Dv] -> y[B,Sq,Hq*Dv] (heads split from the last dim  \
   * as [H,D]). Float dtypes, all three equal; computed in that dtype (softmax precise).           \
   * num_heads = Hq; num_kv_heads = Hkv (0 -> Hq), Hq % Hkv == 0: grouped-query attention, query   \
   * head h uses kv head h / (Hq/Hkv) (Ainslie et al. 2023). scale = score_scale (0 -> 1/sqrt(D)).  \
   * cap(s) = softcap * tanh(s / softcap) when softcap > 0 (Gemma 2 logit soft-capping), applied    \
   * before the mask. M, by `mask`:                                                                 \
   *   none;                                                                                        \
   *   causal: query i sees key j iff j <= i + Sk - Sq (bottom-right aligned, as MLX "causal" and   \
   *     FlashAttention 2; the last query sees every key; for Sq > Sk the first Sq - Sk rows see    \
   *     none);                                                                                     \
   *   sliding_window: causal and j >= i + Sk - Sq - window (window > 0: the diagonal key and the   \
   *     `window` keys before it);                                                                  \
   *   custom: 4th input, bool or numeric, nonzero = may attend;                                    \
   *   bias: 4th input, float, added to the capped scores (cast to q's dtype; -inf hides a key).    \
   * Hidden keys get probability 0; a query row that sees no key at all (causal with Sq > Sk, or  \
   * an all-zero custom row) yields 0 (a bias row of -inf everywhere yields NaN, as ONNX). Mask    \
   * inputs have rank 2..4 and broadcast to [B,Hq,Sq,Sk] with NumPy rules (rank 2 = [Sq,Sk],      \
   * rank 3 = [Hq,Sq,Sk]). scores_output (none | raw | capped | masked | probs) adds a second      \
   * output [B,Hq,Sq,Sk]: scale q k^T, after cap, after M (-inf where hidden), or the probabilities \
   * (ONNX Attention's qk_matmul_output). Lowered to MLX fast::scaled_dot_product_attention        \
   * (composed with matmul/softmax when softcap > 0 or scores are output). */ \
  X(ATTENTION, "Attention", attention, 3, 4, "num_heads:i num_kv_heads:i=0 mask:s=none window:i=0 score_scale:f=0 softcap:f=0 scores_output:s=none") \
  /* Rope(x, cos, sin): rotary position embedding (Su et al. 2021, RoFormer) of the first R =      \
   * n_rot (0 -> D) dims of each head; dims R..D-1 pass through. x is [..,S,D] (head_dim 0) or     \
   * packed [..,S,H*D] (head_dim = D), float; cos/sin (x's dtype, same shape) are [S',R'] (row p  \
   * for position p, rows 0..S-1 used) or [B|1,S',R'] (a table per batch entry, e.g. gathered by  \
   * position ids; x needs rank >= 3 and batch dim 0), S' >= S, R' >= R/2, columns 0..R/2-1 used. \
   * Pairs: interleaved = 0 (GPT-NeoX halves): x1 = x[:R/2], x2 = x[R/2:R]; interleaved = 1 (GPT-J \
   * pairs, MLX "traditional"): x1 = x[0:R:2], x2 = x[1:R:2]. y1 = x1 cos - x2 sin, y2 = x2 cos +   \
   * x1 sin, written back to the positions x1 / x2 came from (ONNX RotaryEmbedding-23 formula). */ \
  X(ROPE, "Rope", attention, 3, 3, "head_dim:i=0 n_rot:i=0 interleaved:i=0") \
  \
  /* ---- shape and data movement ---- */ \
  /* Shape ops take any dtype and keep it. */ \
  /* Reshape(x) to `shape`: row-major, same element count; dims are explicit (no -1 or 0 copies:  \
   * the importer resolves them) and may be symbols, bound with the inputs' (ONNX Reshape). */ \
  X(RESHAPE,   "Reshape",   shape, 1, 1, "shape:is") \
  /* Transpose(x): y.shape[i] = x.shape[perm[i]], y[i..] = x[perm-permuted i..]; perm entries     \
   * distinct (negative count from the end); empty = reversed axes (numpy.transpose). */ \
  X(TRANSPOSE, "Transpose", shape, 1, 1, "perm:is=") \
  /* Narrow(x) = x[.., start:start+length, ..] along axis; 0 <= start, start + length <= dim. */ \
  X(NARROW,    "Narrow",    shape, 1, 1, "axis:i start:i length:i") \
  /* Slice(x): ONNX Slice-13 with constant starts/ends/axes/steps: per listed axis (each once;     \
   * default 0..n-1), negative starts/ends count from the end, then clamp to [0, dim] ([-1, dim-1] \
   * for negative steps); steps != 0 (default 1), negative steps walk backwards. */ \
  X(SLICE,     "Slice",     shape, 1, 1, "starts:is ends:is axes:is= steps:is=") \
  /* Concat(x0..xn-1) along axis: same dtype and rank, equal dims off the axis (numpy.concatenate). */ \
  X(CONCAT,    "Concat",    shape, 1, 256, "axis:i") \
  /* Expand(x) to broadcast(x.shape, shape) by NumPy rules in both directions (ONNX Expand-13: a 1  \
   * in `shape` keeps x's dim). */ \
  X(EXPAND,    "Expand",    shape, 1, 1, "shape:is") \
  /* Pad: pads = [x1_begin, x2_begin, ..., x1_end, x2_end, ...] (ONNX Pad-19 layout; negative     \
   * pads crop first); mode constant (value, cast to x's dtype), edge (repeat the border), reflect \
   * (mirror without the border, repeatedly: numpy.pad 'reflect') or wrap (periodic); pads of any  \
   * size. Non-constant modes need a non-empty axis to pad. */ \
  X(PAD,       "Pad",       shape, 1, 1, "pads:is mode:s=constant value:f=0") \
  /* Tile(x): x repeated repeats[i] >= 0 times along each axis (numpy.tile with len(repeats) = rank). \
   * Errors: a repeats length other than the rank or a negative entry (INVALID_ARGUMENT), an output \
   * dim overflowing int64 (RESOURCE_EXHAUSTED). */ \
  X(TILE,      "Tile",      shape, 1, 1, "repeats:is") \
  /* The gather/scatter ops below (and GatherBackward): an index outside [-n, n) of              \
   * its axis of size n ([0, n) for unsigned dtypes) is an error (ONNX): constant indices fail the \
   * build with OUT_OF_RANGE, run-time ones fail the run with OUT_OF_RANGE naming the node, the    \
   * input, an offending index and n (memory outside the data is never touched).                  \
   * Gather(data[r >= 1], idx[int]): ONNX Gather-13 (numpy.take) along axis; out = data.shape[:axis] \
   * + idx.shape + data.shape[axis+1:]; negative indices count from the end of the axis. */ \
  X(GATHER,          "Gather",         gather, 2, 2, "axis:i=0") \
  /* GatherElements(data, idx[int], same rank): ONNX GatherElements-13 (numpy.take_along_axis):   \
   * out[.., i, ..] = data[.., idx[.., i, ..], ..] with out.shape = idx.shape; off the axis idx may \
   * be smaller than data (the leading window is addressed), not larger. */ \
  X(GATHER_ELEMENTS, "GatherElements", gather, 2, 2, "axis:i=0") \
  /* GatherND(data, idx[.., k] int): ONNX GatherND-13; the first batch_dims dims of data and idx   \
   * match, each index tuple of depth k picks a slice: out = idx.shape[:-1] + data.shape[b+k:]. */ \
  X(GATHER_ND,       "GatherND",       gather, 2, 2, "batch_dims:i=0") \
  /* ScatterAdd(updates, idx[n] int): zeros(shape) of updates' dtype, then out[.., idx[i], ..] +=  \
   * updates[.., i, ..] along axis (updates.shape = shape with n at axis); duplicates accumulate. */ \
  X(SCATTER_ADD,      "ScatterAdd",      gather, 2, 2, "shape:is axis:i=0") \
  /* ScatterElements(data, idx[int], updates): ONNX ScatterElements-18: out = data, then           \
   * out[.., idx[.., i, ..], ..] = updates[.., i, ..] (reduction none; duplicates undefined) or     \
   * combined with add|mul|max|min; idx and updates share a shape, off the axis no larger than     \
   * data's. */ \
  X(SCATTER_ELEMENTS, "ScatterElements", gather, 3, 3, "axis:i=0 reduction:s=none") \
  /* ScatterND(data, idx[.., k] int, updates): ONNX ScatterND-18: out = data, then each index tuple \
   * of depth k addresses a slice set from (or combined by reduction with) updates; updates.shape = \
   * idx.shape[:-1] + data.shape[k:]. */ \
  X(SCATTER_ND,       "ScatterND",       gather, 3, 3, "reduction:s=none") \
  \
  /* ---- reductions, scans, sorting ---- */ \
  /* Reduce(x) over `axes` (empty = all; each axis once) with kind sum|mean|max|min|prod;         \
   * keepdims keeps size-1 dims. x: a real numeric dtype, or bool for max/min (false < true); the \
   * output keeps x's dtype (integer mean = sum / count truncated toward zero). An empty          \
   * reduction gives sum 0, prod 1, max the lowest value (-inf, false), min the highest (+inf,    \
   * true), mean NaN (0 for integers) (ONNX ReduceMax-20/ReduceMin-20, numpy for the rest). */ \
  X(REDUCE,  "Reduce",  reduce, 1, 1, "kind:s axes:is= keepdims:i=0") \
  /* Cumsum(x[r >= 1], numeric): inclusive (y[i] = sum x[..i]) or exclusive (sum x[..i-1], 0 for  \
   * the first) along axis; reverse sums from the end (ONNX CumSum-14). Output dtype = x's. */ \
  X(CUMSUM,  "Cumsum",  reduce, 1, 1, "axis:i exclusive:i=0 reverse:i=0") \
  /* ArgMax / ArgMin(x[r >= 1]) -> int64 index of the first (select_last_index: last) extreme along \
   * a non-empty axis; keepdims keeps the axis as size 1 (ONNX ArgMax-13). */ \
  X(ARG_MAX, "ArgMax",  reduce, 1, 1, "axis:i=0 keepdims:i=1 select_last_index:i=0") \
  X(ARG_MIN, "ArgMin",  reduce, 1, 1, "axis:i=0 keepdims:i=1 select_last_index:i=0") \
  /* TopK(x[r >= 1]) -> (values, int64 indices) of the k (0 <= k <= axis size) largest            \
   * (largest=0: smallest) along axis, ordered descending (ascending for smallest) with ties in   \
   * index order (the lower index first); rlx returns this order also when sorted = 0 (which      \
   * allows any) (ONNX TopK-11). */ \
  X(TOPK,    "TopK",    reduce, 1, 1, "k:i axis:i=-1 largest:i=1 sorted:i=1") \
  \
  /* ---- convolution and pooling (channels first) ---- */ \
  /* Conv(x[N,Ci,d1..dn], w[Co,Ci/group,k1..kn], [b[Co]]) -> y[N,Co,o1..on], n = 1..3: ONNX Conv     \
   * (cross-correlation). y[n,o,p] = b[o] + sum over c in o's group, j < k of                       \
   * xpad[n,c,p*s + j*d] * w[o,c,j]; groups split Ci and Co evenly (group = Ci: depthwise; Co = m Ci: \
   * channel multiplier m). o_i = floor((d_i + pb_i + pe_i - dil_i (k_i - 1) - 1) / s_i) + 1.        \
   * pads = [begin d1..dn, end d1..dn] >= 0 (may be asymmetric; zeros); empty strides/dilations = 1, \
   * empty pads = 0. Equal dtypes: float, or integer (exact like MatMul, wrapping to the dtype).    \
   * activation: "none" or a float unary op without attributes applied to y (as                    \
   * FusedMatMulBiasAct's; the optimizer's epilogue pass moves it in, rlx's CPU kernels apply it in  \
   * place). Errors: group not dividing Ci/Co, weight/bias shape, kernel larger than the padded     \
   * input, bad attribute lengths or values, an activation on integers (INVALID_ARGUMENT); other    \
   * spatial ranks (UNIMPLEMENTED). */ \
  X(CONV,           "Conv",          conv, 2, 3, "strides:is= pads:is= dilations:is= group:i=1 activation:s=none") \
  /* ConvTranspose(x[N,Ci,d1..dn], w[Ci,Co/group,k..], [b[Co]]) -> y[N,Co,o..], n = 1..3: ONNX     \
   * ConvTranspose with explicit pads, the adjoint of Conv: every x[n,c,i] adds x * w[c,o,j] at      \
   * position i*s + j*d - pb of y's channel o in c's group; o_i = s(d_i - 1) + op_i + dil(k - 1) + 1 \
   * - pb - pe; output_padding op_i (< stride or dilation) extends the end. Float, equal dtypes.     \
   * Errors as Conv, plus output_padding too large and pads exceeding the output. */ \
  X(CONV_TRANSPOSE, "ConvTranspose", conv, 2, 3, "strides:is= pads:is= dilations:is= output_padding:is= group:i=1") \
  /* Pool(x[N,C,d1..dn]) -> y[N,C,o..], n = 1..3: kind max|min|sum|mean|prod over the windows       \
   * {p*s + j*dil - pb : j < kernel_shape} of every channel; positions in the pads (and past the end \
   * in ceil_mode) are skipped (neutral). mean divides by the number of real elements, or, with     \
   * count_include_pad = 1, by the positions inside [-pb, d + pe) (ONNX AveragePool). Output size as \
   * Conv, with ceil_mode = 1 rounding up but never starting a window past d + pb (ONNX MaxPool).    \
   * pads must be smaller than the dilated window. x float or integer (mean: float); y has x's      \
   * dtype. Errors: unknown kind, kernel_shape length, window larger than the padded input, pads >= \
   * window, mean of integers, bool (INVALID_ARGUMENT); other spatial ranks (UNIMPLEMENTED). */ \
  X(POOL,           "Pool",          conv, 1, 1, "kind:s kernel_shape:is strides:is= pads:is= dilations:is= count_include_pad:i=0 ceil_mode:i=0") \
  /* Resize(x) to `sizes` (same rank), separably per axis (ONNX Resize-19): mode nearest (any     \
   * dtype), linear or cubic (Keys 1981 kernel with cubic_coeff_a; float inputs). Per axis, scale \
   * = scales[i] when given (the ONNX scales), else sizes[i] / in; output index o maps to the    \
   * source coordinate x by coordinate_transformation_mode: half_pixel (o+.5)/scale-.5,          \
   * half_pixel_symmetric, pytorch_half_pixel (0 when the output length is 1), align_corners      \
   * o (in-1)/(scale in - 1), asymmetric o/scale, tf_half_pixel_for_nn (o+.5)/scale (opset 11),   \
   * tf_crop_and_resize (roi = [starts.., ends..] in normalized input coordinates, default        \
   * [0..,1..]; coordinates outside [0, in-1] give extrapolation_value). nearest rounds x by       \
   * nearest_mode (round_prefer_floor|round_prefer_ceil|floor|ceil); linear/cubic weight the      \
   * taps around x by the kernel, stretched by 1/scale when antialias = 1 and scale < 1 (then    \
   * renormalized); exclude_outside = 1 zeroes taps outside the input and renormalizes; indices  \
   * clamp to the edge. Weights are computed in float64, applied in x's dtype. */ \
  X(RESIZE,         "Resize",        conv, 1, 1, "sizes:is scales:fs= roi:fs= mode:s=nearest coordinate_transformation_mode:s=half_pixel nearest_mode:s=round_prefer_floor cubic_coeff_a:f=-0.75 exclude_outside:i=0 extrapolation_value:f=0 antialias:i=0") \
  \
  /* ---- fused blocks (float; every input in x's dtype) ---- */ \
  /* FusedResidualLN(x[..,E], r, [bias[E]], gamma[E], beta[E]) = LayerNorm over the last axis of    \
   * x + r [+ bias] (r has x's shape; bias present iff has_bias = 1). */ \
  X(FUSED_RESIDUAL_LN, "FusedResidualLN", fused, 4, 5, "has_bias:i=0 epsilon:f=1e-5") \
  /* FusedResidualRmsNorm(x[..,E], r, [bias[E]], gamma[E], [beta[E]]) = RmsNorm over the last axis \
   * of x + r [+ bias] [+ beta] (bias present iff has_bias = 1; beta when one more input is given). */ \
  X(FUSED_RESIDUAL_RMS_NORM, "FusedResidualRmsNorm", fused, 3, 5, "has_bias:i=0 epsilon:f=1e-6") \
  /* FusedSwiGLU(x[..,2N]) -> [..,N] = up * silu(gate) (Shazeer 2020): gate_first = 0: up =         \
   * x[..,:N], gate = x[..,N:]; gate_first = 1: gate = x[..,:N], up = x[..,N:]. cast_to = -1 keeps  \
   * x's dtype, else the result is cast to that float rlx_dtype. */ \
  X(FUSED_SWIGLU, "FusedSwiGLU", fused, 1, 1, "gate_first:i=0 cast_to:i=-1") \
  /* FusedAttentionBlock(h[B,S,E], qkv_w[E,3E], out_w[E,E], [mask], [qkv_b[3E], out_b[E]],        \
   * [cos, sin]) -> [B,S,E], H = num_heads, D = E/H: [q|k|v] = h qkv_w [+ qkv_b] (each [B,S,E],    \
   * packed heads [H,D]); q, k = Rope(q, k, cos, sin; head_dim D, NeoX halves) when has_rope = 1    \
   * (cos/sin [>=S, >=D/2]); a = Attention(q, k, v; num_heads H, scale 1/sqrt(D), mask, window) with \
   * exactly Attention's mask semantics (custom = nonzero may attend, bias = additive, causal /     \
   * sliding_window bottom-right aligned; the reference system passed every mask as an additive    \
   * tensor); y = a out_w [+ out_b]. Inputs in the order above: the mask iff mask is custom or bias; \
   * the biases iff has_bias = 1; cos, sin iff has_rope = 1. */ \
  X(FUSED_ATTENTION_BLOCK, "FusedAttentionBlock", fused, 3, 8, "num_heads:i has_bias:i=0 has_rope:i=0 mask:s=none window:i=0") \
  /* FusedTransformerLayer: a BERT post-norm encoder layer (Devlin et al. 2019). Inputs: h[B,S,E],  \
   * qkv_w[E,3E], [qkv_b], out_w[E,E], [out_b], ln1_g[E], ln1_b[E], ff1_w[E,F], [ff1_b[F]],        \
   * ff2_w[F,E], [ff2_b[E]], ln2_g[E], ln2_b[E], [mask] (biases iff has_bias = 1; mask iff mask is  \
   * custom or bias). a = the FusedAttentionBlock sub-block (no rope, same mask semantics);         \
   * y1 = LayerNorm(h + a; epsilon1); out = LayerNorm(y1 + act(y1 ff1_w + ff1_b) ff2_w + ff2_b;     \
   * epsilon2); activation: a float unary op name (Gelu, GeluApprox, Relu, ...) or none. */ \
  X(FUSED_TRANSFORMER_LAYER, "FusedTransformerLayer", fused, 9, 14, "num_heads:i epsilon1:f=1e-12 epsilon2:f=1e-12 activation:s=Gelu has_bias:i=1 mask:s=none window:i=0") \
  \
  /* ---- backward ops (gradients of the forward ops above; checked against finite differences) ---- */ \
  /* ReluBackward(x, dy) -> dy where x > 0, else 0 (x == 0 gives 0). x and dy of one shape and     \
   * dtype, float or integer. */ \
  X(RELU_BACKWARD, "ReluBackward", act_grad, 2, 2, "") \
  /* ActivationBackward(x, dy) -> dy * f'(x) for activation `kind` (x, dy float, one shape and      \
   * dtype). f': Gelu Phi(x) + x phi(x); GeluApprox (t = tanh(u), u = sqrt(2/pi)(x + 0.044715 x^3)) \
   * (1 + t)/2 + x/2 (1 - t^2) u'; Silu s(1 + x(1 - s)), s = sigmoid(x); Relu [x > 0]; Sigmoid s(1-s); \
   * Tanh 1 - tanh^2; Exp e^x; Log 1/x; Sqrt 1/(2 sqrt x) and Rsqrt -x^(-3/2)/2, both 0 where x <= 0;  \
   * Neg -1; Abs sign(x); Sin cos; Cos -sin; Tan 1 + tan^2; Atan 1/(1 + x^2); Round 1 (the straight- \
   * through estimator). Errors: other kinds, shape/dtype mismatch, non-float (INVALID_ARGUMENT). */ \
  X(ACTIVATION_BACKWARD, "ActivationBackward", act_grad, 2, 2, "kind:s") \
  /* SoftmaxCrossEntropyWithLogits(logits[...,C] float, labels[...] int) -> loss[...] =            \
   * logsumexp(logits) - logits[label] (stable); a label outside [0, C) selects no class (loss =    \
   * logsumexp). */ \
  X(SOFTMAX_CROSS_ENTROPY, "SoftmaxCrossEntropyWithLogits", norm_grad, 2, 2, "") \
  /* SoftmaxCrossEntropyBackward(logits, labels, dloss[...]) -> dlogits = (softmax(logits) -       \
   * onehot(labels)) * dloss[..., None], the gradient of the op above. */ \
  X(SOFTMAX_CROSS_ENTROPY_BACKWARD, "SoftmaxCrossEntropyBackward", norm_grad, 3, 3, "") \
  /* Normalization gradients; xhat = (x - mean) * rstd (RmsNorm: x * rstd, rstd = 1/rms), statistics \
   * over `axis` (LayerNorm, RmsNorm) or over each group's channels and spatial positions          \
   * (GroupNorm, x[N,C,...], parameters along C), g = dy * gamma:                                   \
   *   ...BackwardInput(x, gamma, dy) -> dx = rstd (g - mean(g) - xhat mean(g xhat)) (RmsNorm       \
   *     without the mean(g) term);                                                                 \
   *   ...BackwardGamma(x, dy) -> dgamma[D] = sum of dy * xhat over every axis but the parameter one; \
   *   ...BackwardBeta(dy) -> dbeta[D] = sum of dy over every axis but the parameter one.           \
   * Attributes as the forward op. Derivation: Ioffe & Szegedy 2015 §3, over the normalized axes. */ \
  X(LAYER_NORM_BACKWARD_INPUT, "LayerNormBackwardInput", norm_grad, 3, 3, "axis:i=-1 epsilon:f=1e-5") \
  X(LAYER_NORM_BACKWARD_GAMMA, "LayerNormBackwardGamma", norm_grad, 2, 2, "axis:i=-1 epsilon:f=1e-5") \
  X(LAYER_NORM_BACKWARD_BETA,  "LayerNormBackwardBeta",  norm_grad, 1, 1, "axis:i=-1") \
  X(RMS_NORM_BACKWARD_INPUT, "RmsNormBackwardInput", norm_grad, 3, 3, "axis:i=-1 epsilon:f=1e-6") \
  X(RMS_NORM_BACKWARD_GAMMA, "RmsNormBackwardGamma", norm_grad, 2, 2, "axis:i=-1 epsilon:f=1e-6") \
  X(RMS_NORM_BACKWARD_BETA,  "RmsNormBackwardBeta",  norm_grad, 1, 1, "axis:i=-1") \
  X(GROUP_NORM_BACKWARD_INPUT, "GroupNormBackwardInput", norm_grad, 3, 3, "num_groups:i epsilon:f=1e-5") \
  X(GROUP_NORM_BACKWARD_GAMMA, "GroupNormBackwardGamma", norm_grad, 2, 2, "num_groups:i epsilon:f=1e-5") \
  X(GROUP_NORM_BACKWARD_BETA,  "GroupNormBackwardBeta",  norm_grad, 1, 1, "num_groups:i") \
  /* AttentionBackward(q, k, v, dy, [mask]): the gradient of Attention (same attributes, layouts \
   * and mask semantics; dy has Attention's output type) with respect to wrt = query | key | value; \
   * the output has that operand's type. With s = scale q k^T, P the probabilities and y = P v:    \
   * dV = P^T dy, dP = dy v^T, dS = P * (dP - rowsum(dP * P)) * (1 - tanh^2(s / softcap) when      \
   * softcap > 0), dQ = scale dS k, dK = scale dS^T q; key/value gradients sum over the query heads \
   * sharing a kv head. Hidden keys and empty rows get no gradient. Probabilities are recomputed   \
   * (no saved forward state). */ \
  X(ATTENTION_BACKWARD, "AttentionBackward", attention_grad, 4, 5, "wrt:s num_heads:i num_kv_heads:i=0 mask:s=none window:i=0 score_scale:f=0 softcap:f=0") \
  /* RopeBackward(dy, cos, sin) = dx: Rope's transpose, the inverse rotation (Rope with -sin), for \
   * the same operand shapes and attributes. */ \
  X(ROPE_BACKWARD, "RopeBackward", attention_grad, 3, 3, "head_dim:i=0 n_rot:i=0 interleaved:i=0") \
  /* CumsumBackward(dy) -> dx: the gradient of Cumsum(x) with the same axis/exclusive/reverse:   \
   * the cumsum of dy in the opposite direction (dx_i = sum_{j >= i} dy_j for an inclusive forward \
   * scan, j > i exclusive; j <= i / j < i for a reverse one). dx has dy's type. */ \
  X(CUMSUM_BACKWARD, "CumsumBackward", index_grad, 1, 1, "axis:i exclusive:i=0 reverse:i=0") \
  /* GatherBackward(dy, idx) -> dx[shape]: the gradient of Gather(data[shape], idx, axis): zeros  \
   * with dy scatter-added at idx along axis (repeated indices accumulate; negative indices count \
   * from the end). dy is shape[:axis] + idx.shape + shape[axis+1:]; dx has dy's dtype. */ \
  X(GATHER_BACKWARD, "GatherBackward", index_grad, 2, 2, "axis:i=0 shape:is") \
  /* Conv2dBackwardInput(dy[N,Co,Ho,Wo], w[Co,Ci/g,kh,kw]) -> dx[N,Ci,H,W] = input_shape: the        \
   * gradient of Conv (same strides/pads/dilations/group) with respect to x, i.e. the transposed   \
   * convolution of dy with w; rows/columns that the forward floor division dropped get 0. dy must \
   * be Conv's output shape for input_shape. Float, equal dtypes. */ \
  X(CONV2D_BACKWARD_INPUT, "Conv2dBackwardInput", conv_grad, 2, 2, "input_shape:is strides:is= pads:is= dilations:is= group:i=1") \
  /* Conv2dBackwardWeight(x[N,Ci,H,W], dy[N,Co,Ho,Wo]) -> dw[Co,Ci/g,kh,kw] (kernel_shape = [kh,kw]):  \
   * the gradient of Conv with respect to w, dw[o,c,j] = sum over n and p of dy[n,o,p] *            \
   * xpad[n, c in o's group, p*s + j*d]. dy must be Conv's output shape. Float, equal dtypes. */ \
  X(CONV2D_BACKWARD_WEIGHT, "Conv2dBackwardWeight", conv_grad, 2, 2, "kernel_shape:is strides:is= pads:is= dilations:is= group:i=1") \
  /* MaxPool2dBackward(x[N,C,H,W], dy[N,C,Ho,Wo]) -> dx[N,C,H,W]: the gradient of max Pool (floor  \
   * mode, no dilation): each window's dy is added at its first maximum in row-major window order  \
   * (ties: first hit); pads never receive gradient. dy must be the pool's output shape. Float. */ \
  X(MAXPOOL2D_BACKWARD, "MaxPool2dBackward", conv_grad, 2, 2, "kernel_shape:is strides:is= pads:is=") \
  /* FakeQuantize(x, [scale]) -> clamp(round(x / s), -qmax, qmax) * s (round half to even), qmax =   \
   * 2^(bits-1) - 1, bits 8, 4 or 2 (Jacob et al. 2018, quantization-aware training). scale_mode     \
   * per_batch (one input): s = max(max|x| / qmax, 1e-12) over the whole tensor, or per channel along \
   * axis with per_channel = 1; fixed: s is the scale input (one value, or one per channel along    \
   * axis); ema (the running scale of Jacob et al. 2018 §3.1, PyTorch's MovingAverage observers): the \
   * scale input is the running scale r (same shapes as fixed; r <= 0 means none yet) and           \
   * s = decay r + (1 - decay) s_batch where r > 0, else s_batch (s_batch the per_batch scale); the   \
   * op then has a second output, s (r's type), to feed back as r on the next call (a device handle \
   * keeps it on the device). x float (half types computed in float32); y has x's type. ste is      \
   * validated here and used by FakeQuantizeBackward. Errors: bits, ste, scale_mode, input count,    \
   * scale shape, decay outside [0, 1] (INVALID_ARGUMENT), axis (OUT_OF_RANGE). */ \
  X(FAKE_QUANTIZE, "FakeQuantize", quant, 1, 2, "bits:i=8 per_channel:i=0 axis:i=0 ste:s=identity scale_mode:s=per_batch decay:f=0.9") \
  /* FakeQuantizeBackward(x, dy, [scale]) -> dx (dy's shape and dtype): the straight-through         \
   * estimator ste of FakeQuantize (Bengio et al. 2013): identity dy; clipped_identity dy where       \
   * |x| <= qmax s, else 0 (s as FakeQuantize with the same bits/per_channel/axis/scale_mode; a        \
   * per_batch s puts every x inside, so it equals identity); tanh dy (1 - tanh^2 x); hard_tanh dy    \
   * where |x| <= 1. scale_mode ema: the scale input is the scale the forward op used (its second   \
   * output), as with fixed. Errors as FakeQuantize, plus dy's shape. */ \
  X(FAKE_QUANTIZE_BACKWARD, "FakeQuantizeBackward", quant, 2, 3, "bits:i=8 per_channel:i=0 axis:i=0 ste:s=identity scale_mode:s=per_batch decay:f=0.9") \
  \
  /* ---- control flow and sequence/state (owned sub-graphs) ---- */ \
  /* Sub-graph attributes (g) are graphs owned by the node. Binding: the sub-graph's Input nodes, \
   * in declaration order, take the operands listed per op (their count must match; dtypes,     \
   * ranks and static dims must agree; a sub-graph symbol takes its operand's size); its Params  \
   * resolve by name against the executable's params (rlx_executable_set_param sets them, shared \
   * with the graph by name); its Constants are inline. Outer values a sub-graph needs are passed \
   * as operands (captures). Loops are unrolled when lowered (MLX graphs have no control flow). */ \
  /* If(cond bool, captures...) -> outputs of then_branch/else_branch, which both take the       \
   * captures and return the same number of outputs (>= 1) pairwise of one type (else            \
   * INVALID_ARGUMENT). output_i = where(cond, then_i, else_i): both branches are computed;       \
   * cond is a bool scalar (or single element), or a bool tensor that broadcasts into every      \
   * output without changing its shape (per-element selection). ONNX If. */ \
  X(IF, "If", control, 1, 256, "then_branch:g else_branch:g") \
  /* Assert(cond bool of any shape, xs...) -> xs unchanged, once every element of cond is true: a \
   * run where one is false fails with INVALID_ARGUMENT naming the node and its `message` (inside \
   * an If branch only when the branch is taken; an empty cond holds). The ONNX importer guards  \
   * the If branch it picks at import with it (rlx/onnx.h). Not folded or merged by the optimizer. */ \
  X(ASSERT, "Assert", control, 2, 256, "message:s") \
  /* While(carried...) -> the final carried values (all of them, same types). cond: carried ->   \
   * one bool element; body: carried -> carried (same count and types). Runs                     \
   * `while cond(c): c = body(c)` at most max_iterations (required, >= 0) times, unrolled:        \
   * active_k = cond held at steps 0..k, c = where(active_k, body(c), c), so the values freeze   \
   * once cond is false (the unrolled body's later results, NaN included, never leak); eager mode \
   * reads cond on the host and stops there. */ \
  X(WHILE, "While", control, 1, 256, "cond:g body:g max_iterations:i") \
  /* Scan(carries..., bcast..., xs...) (num_bcast, num_xs of the inputs; the carries first) ->  \
   * (final carries..., [trajectories...], ys...), jax.lax.scan with extra broadcast operands: \
   * for t < length: (carries, y_t...) = body(carries, bcast..., xs[t]...); every xs has leading \
   * dim `length` (>= 0) and the body sees xs[t] without it. The body returns the carries (same  \
   * types) then any per-step outputs ys, each stacked over t into [length, ...]. With          \
   * save_trajectory=1 each carry's value after every step is also stacked ([length, ...carry], \
   * before the ys). length 0 returns the initial carries and empty stacks. num_checkpoints      \
   * (>= 0) is a memory hint for a backward pass (rematerialization) and does not change the    \
   * forward result. ONNX Scan/Loop map onto it. */ \
  X(SCAN, "Scan", control, 1, 256, "body:g length:i save_trajectory:i=0 num_bcast:i=0 num_xs:i=0 num_checkpoints:i=0") \
  /* SelectiveScan(x[B,S,H], delta[B,S,H], A[H,N], Bm[B,S,N], Cm[B,S,N]) -> y[B,S,H], one float   \
   * dtype: the Mamba selective-scan recurrence (Gu & Dao 2023, h_t = A_bar h_{t-1} + B_bar x_t,  \
   * y_t = C h_t, A_bar = exp(delta A), B_bar simplified to delta Bm):                          \
   * h_t[b,h,n] = exp(delta_t[b,h] A[h,n]) h_{t-1}[b,h,n] + delta_t[b,h] x_t[b,h] Bm_t[b,n],      \
   * h_{-1} = 0, y_t[b,h] = sum_n Cm_t[b,n] h_t[b,h,n]. Lowered as a parallel prefix scan of the  \
   * linear recurrence (ceil(log2 S) doubling steps). No D skip term or output gate. */ \
  X(SELECTIVE_SCAN, "SelectiveScan", sequence, 5, 5, "") \
  /* GatedDeltaNet(q[B,S,H,K], k[B,S,H,K], v[B,S,H,V], g[B,S,H], beta[B,S,H], [state[B,H,V,K]]) \
   * -> (y[B,S,H,V], final state[B,H,V,K]), one float dtype: the gated delta rule (Yang, Kautz &  \
   * Hatamizadeh 2024, "Gated Delta Networks"), with S a [V,K] matrix per (b,h), alpha_t =        \
   * exp(g_t) (g is the log decay): S_t = alpha_t S_{t-1} + beta_t (v_t - alpha_t S_{t-1} k_t)    \
   * k_t^T, y_t = S_t q_t. state defaults to zeros. q/k normalization and scaling are the        \
   * caller's. Lowered to MLX's fast::gated_delta_update, which keeps the state in float32       \
   * (float64 inputs get float32 precision). */ \
  X(GATED_DELTA_NET, "GatedDeltaNet", sequence, 5, 6, "") \
  \
  /* ---- FFT, sampling, solvers ---- */ \
  /* Fft(x): the DFT X_k = sum_j x_j exp(-+ 2 pi i j k / N) along the last axis (numpy.fft.fft /  \
   * ifft semantics; sign + when inverse = 1). x is complex64 [..,N] or a real block [..,2N] of   \
   * float16/bfloat16/float32/float64 holding [re_0..re_N-1, im_0..im_N-1] (N >= 1); the output \
   * has x's layout and dtype. norm (numpy's names): backward = no scaling forward, 1/N inverse;  \
   * forward = 1/N forward, none inverse; ortho = 1/sqrt(N) both ways. complex64 and float32 use \
   * MLX's FFT in complex64; float16/bfloat16 compute in float32. float64 keeps float64 precision \
   * (MLX has no complex128): an exact DFT from float64 matmuls with host-computed cos/sin tables, \
   * factored by the four-step Cooley-Tukey algorithm for composite N and Bluestein's chirp-z for \
   * primes above 1024 (src/mlx/lower_fft64.c; error about 1e-15 sqrt(N) log N relative). */ \
  X(FFT, "Fft", fft, 1, 1, "inverse:i=0 norm:s=backward") \
  /* Rfft(x real [..,N]) -> real block [..,2(N/2+1)] in x's dtype: the one-sided spectrum        \
   * (numpy.fft.rfft; bins 0..N/2). norm and precision as Fft. */ \
  X(RFFT, "Rfft", fft, 1, 1, "norm:s=backward") \
  /* Irfft(x) -> real [..,n]: the inverse of Rfft (numpy.fft.irfft with n). x is a real block     \
   * [..,2M] (output in its dtype) or complex64 [..,M] (output float32) holding bins 0..M-1; they \
   * are cut or zero-padded to n/2+1 bins, the imaginary parts of bin 0 (and of bin n/2 for even  \
   * n) are ignored. norm and precision as Fft. */ \
  X(IRFFT, "Irfft", fft, 1, 1, "n:i norm:s=backward") \
  /* Sample(logits[..,V] float) -> int64 token ids [..] drawn along the last axis: logits /      \
   * temperature (temperature 0 = greedy argmax, first maximum); top_k > 0 keeps the logits >= the \
   * k-th largest (ties with it kept; 0 or >= V keeps all); top_p < 1 keeps, from the softmax of   \
   * what is left, the smallest set of most probable tokens whose probability reaches top_p (the   \
   * nucleus, Holtzman et al. 2020; tokens tied with its least probable member kept); then draws  \
   * from the categorical distribution of the kept logits (mx::random::categorical, Gumbel-max).   \
   * Random stream: in an executable each Sample node draws from its own stream of keys         \
   * (mx::random::split of the previous key at each draw, JAX's scheme), an input of the run in   \
   * every mode: it starts at mx::random::key(seed) (taken as uint64) when seed != 0, so the k-th  \
   * run of any executable of the graph draws the same tokens in eager, lazy and compiled mode;   \
   * with seed 0 it starts at a key drawn from MLX's global key sequence when the executable first \
   * runs, so each executable and each run draws fresh keys (compiled runs too). rlx_executable_ \
   * warmup does not advance the streams. temperature finite and                                 \
   * >= 0, 0 < top_p <= 1, top_k >= 0, V >= 1 (else INVALID_ARGUMENT). float16/bfloat16 logits are \
   * filtered in float32. */ \
  X(SAMPLE, "Sample", sample, 1, 1, "temperature:f=1 top_k:i=0 top_p:f=1 seed:i=0") \
  /* DenseSolve(A[n,n], b[n] or [n,k]) -> x of b's shape with A x = b (numpy.linalg.solve): LU   \
   * with partial pivoting (mx::linalg::solve, LAPACK) on MLX's CPU stream even when the         \
   * executable runs on a GPU. float32/float64 (float16/bfloat16 solve in float32); A and b share \
   * a dtype. A singular A (an exactly zero pivot) fails with INVALID_ARGUMENT "singular matrix" \
   * when the result is evaluated; nearly singular systems are not detected. */ \
  X(DENSE_SOLVE, "DenseSolve", linalg, 2, 2, "") \
  /* BatchedDenseSolve(A[B,n,n], b[B,n]) -> x[B,n]: B independent DenseSolve systems. */ \
  X(BATCHED_DENSE_SOLVE, "BatchedDenseSolve", linalg, 2, 2, "") \
  \
  /* ---- collectives over the executable's process group (rlx/dist.h, rlx_executable_set_group; \
   * MLX's distributed ops on device arrays, every mode compiled included). group_size is the     \
   * number of ranks the graph is written for: the run fails with FAILED_PRECONDITION when the     \
   * group has another size (0 = any, AllReduce only). A group of size 1 makes each op the         \
   * identity. Every rank runs the same graph; the ops are matched across ranks by order. What the \
   * group's backend lacks (dtype, op) fails the run with UNIMPLEMENTED naming backend and op. */  \
  /* AllReduce(x) -> x's type: the elementwise sum | max | min (kind) of x over the ranks          \
   * (NCCL/MPI AllReduce; mx::distributed::all_sum/all_max/all_min). Integer sums wrap. */ \
  X(ALL_REDUCE, "AllReduce", collective, 1, 1, "kind:s=sum group_size:i=0") \
  /* AllGather(x[r >= 1]) -> the ranks' x concatenated along axis in rank order: dim axis times   \
   * group_size (NCCL AllGather; mx::distributed::all_gather on axis 0, other axes moved there). */ \
  X(ALL_GATHER, "AllGather", collective, 1, 1, "axis:i=0 group_size:i") \
  /* ReduceScatter(x[r >= 1]) -> the sum of x over the ranks, split along axis into group_size     \
   * equal chunks; rank r gets chunk r (dim axis / group_size; it must divide). NCCL ReduceScatter \
   * with sum; mx::distributed::sum_scatter (nccl backend only in MLX 0.32). */ \
  X(REDUCE_SCATTER, "ReduceScatter", collective, 1, 1, "axis:i=0 group_size:i") \
  \
  /* ---- extension and host-only ops ---- */ \
  /* Custom(inputs...) -> the outputs of the custom op registered under `name` (rlx/registry.h): \
   * its arity and infer function give the outputs (any number); its graph kernel expands into rlx \
   * ops at lowering time, or its host kernel runs on host copies of the inputs (eager and lazy    \
   * modes only). Every other attribute is passed to the op's functions. Unknown names fail with  \
   * NOT_FOUND naming the op. */ \
  X(CUSTOM, "Custom", custom, 0, 256, "name:s *") \
  /* Llada2GroupLimitedGate(logits[T,E], [bias[E]]) -> weights[T,top_k] (logits' dtype),          \
   * indices[T,top_k] int32: the group-limited mixture-of-experts router of LLaDA2 / Ling 2.0 and   \
   * DeepSeek-V3 (DeepSeek-V3 technical report, 2.1.2). s = sigmoid(logits) (score_func sigmoid) or \
   * softmax over E (softmax); c = s + bias (bias 0 when absent: the load-balancing bias only picks  \
   * experts); the E experts form n_group consecutive groups, each scored by the sum of its two     \
   * largest c (its largest when a group has one expert); the topk_group best groups are kept and   \
   * the top_k experts by c among theirs are chosen, in decreasing c (ties: the lower index first); \
   * weights = s of the chosen experts, divided by their sum (+1e-20) when norm_topk_prob, times    \
   * routed_scaling_factor. Errors (INVALID_ARGUMENT): logits not float [T,E], bias not [E], E not a \
   * multiple of n_group, topk_group outside [1, n_group], top_k outside [1, topk_group E/n_group],  \
   * score_func. */ \
  X(LLADA2_GROUP_LIMITED_GATE, "Llada2GroupLimitedGate", gate, 1, 2, "top_k:i n_group:i=1 topk_group:i=1 score_func:s=sigmoid norm_topk_prob:i=1 routed_scaling_factor:f=1") \
  /* ---- 3-D Gaussian splatting (the reference's GaussianSplatRender family; it runs them as host \
   * code, rlx as MLX ops). Scene of N Gaussians, inputs in the reference's order and layout:      \
   * positions[N,3] (centres mu), scales[N,3] (log standard deviations), rotations[N,4]          \
   * (quaternions w,x,y,z, normalized here; |q| < 1e-12 culls the Gaussian), opacities[N]       \
   * (clamped to [0,1]), colors[N,3] (RGB), sh_coeffs[N,K,3] (spherical-harmonics coefficients, \
   * K >= 0), meta[M >= 15]: camera position c (0..2), target (3..5), up (6..8), vertical field  \
   * of view in degrees (9), near (10), far (11), background RGB bg (12..14); the reference's     \
   * builder writes M = 23 with the render attributes repeated (15..22), which rlx ignores. Every \
   * input has positions' dtype: float32, float16 or bfloat16 (computed in float32).             \
   * Camera (the reference's look_at camera): f = normalize(target - c), r = normalize(up x f),  \
   * u = f x r, focal length F = 0.5 height / tan(fov / 2) pixels, principal point at the image   \
   * centre; pixel (px, py) (row py, column px) casts the ray c + t d, d = r (px + 0.5 - width/2)/F \
   * + u (py + 0.5 - height/2)/F + f. Gaussian i is drawn only when its centre's depth            \
   * f.(mu_i - c) lies in (near, far) and q_i is nonzero. Its density is                          \
   * exp(-0.5 |A_i (x - mu_i)|^2), A_i = S_i^-1 R_i^T, R_i the rotation matrix of q_i and          \
   * S_i = radius_scale diag(exp(scales_i)) (covariance R S S^T R^T, Kerbl et al., 3D Gaussian     \
   * Splatting, SIGGRAPH 2023); a ray takes the density's maximum along it (the reference's        \
   * ray-splat evaluation): alpha_i = opacity_i exp(-0.5 m), m = |o|^2 - (o.e)^2/|e|^2 with          \
   * o = A_i (c - mu_i), e = A_i d, and alpha_i = 0 when that maximum lies behind the camera       \
   * (o.e >= 0) or alpha_i < alpha_cutoff. Colour (the reference's SH bands 0 and 1, 3DGS's        \
   * constants C0 = 0.28209479177387814, C1 = 0.4886025119029199): rgb_i = 0.5 + C0 sh[i,0] -      \
   * C1 y sh[i,1] + C1 z sh[i,2] - C1 x sh[i,3] with (x,y,z) = normalize(c - mu_i) and the         \
   * coefficients beyond K taken as 0 (those of bands >= 2, k >= 4, are not used); when K = 0 or \
   * every |sh[i,0,ch]| <= 1e-8 (no DC term anywhere), the reference's rule puts clamp(colors_i,    \
   * 0, 1) in place of 0.5 + C0 sh[i,0]. Compositing (front to back, Gaussians sorted by their     \
   * distance |mu_i - c|, ties in any order): T = 1; for each Gaussian with alpha_i > 0 in turn:    \
   * acc += T alpha_i rgb_i, T *= 1 - alpha_i, and stop once T < transmittance_threshold. Pixel    \
   * = (max(acc + T bg, 0)^2.2 per channel, 1 - T) (the reference's output gamma 2.2).            \
   * Lowered densely (every pixel against every Gaussian, a cumulative product for T): its        \
   * temporaries hold height x width x N floats each, so height x width x max(N,1) is bounded by   \
   * 2^24 (RESOURCE_EXHAUSTED beyond). tile_size, max_splat_steps and max_list_entries size the    \
   * reference's tile lists and are only checked (>= 1, >= 0, >= 1): rlx never drops a Gaussian  \
   * from a full list (the reference's host rasterizer ignores max_splat_steps too). Errors        \
   * (INVALID_ARGUMENT): shapes, dtypes, width or height < 1, alpha_cutoff or                      \
   * transmittance_threshold outside [0,1], radius_scale not > 0. Differences from the reference:  \
   * no Gaussians (N = 0) render the background with alpha 0 (the reference returns zeros), a      \
   * pixel's alpha is always 1 - T (the reference gives 1 to pixels of empty tiles), culling is by \
   * near/far (the reference: depth > 1e-4 and a fitted screen ellipse). ---- */ \
  /* GaussianSplatRender(positions, scales, rotations, opacities, colors, sh_coeffs, meta) ->       \
   * image[height*width*4] RGBA, row-major pixels (py*width + px)*4, in positions' dtype.          \
   * Defaults: the reference's GaussianSplatRenderParams. */ \
  X(GAUSSIAN_SPLAT_RENDER, "GaussianSplatRender", splat, 7, 7, "width:i height:i tile_size:i=16 radius_scale:f=1.6 alpha_cutoff:f=0.00392156862745098 max_splat_steps:i=32 transmittance_threshold:f=0.01 max_list_entries:i=576") \
  /* GaussianSplatRenderBackward(the 7 inputs, d_image[height*width*4]) -> the gradient of         \
   * sum(d_image * GaussianSplatRender(...)) packed as the reference packs it: d_positions[N*3],    \
   * d_scales[N*3], d_rotations[N*4], d_opacities[N], d_colors[N*3], d_sh_coeffs[N*max(K,1)*3]     \
   * (zeros when K = 0) concatenated, in positions' dtype; meta gets no gradient. The exact        \
   * gradient of the render above (MLX's vjp of its lowering; the sorting order, the cutoffs and   \
   * the stop are piecewise constant), all four channels of d_image included (the reference drops  \
   * the alpha channel's). loss_grad_clip > 0 clamps d_image to [-loss_grad_clip, loss_grad_clip]  \
   * first (0: no clamp); sh_band 0 zeroes the gradients of the band-1 coefficients (k >= 1);     \
   * max_anisotropy is accepted and unused (it belongs to the reference's training step). Defaults \
   * give the exact gradient (the reference's bundle defaults to loss_grad_clip 1, sh_band 0). */ \
  X(GAUSSIAN_SPLAT_RENDER_BACKWARD, "GaussianSplatRenderBackward", splat, 8, 8, "width:i height:i tile_size:i=16 radius_scale:f=1.6 alpha_cutoff:f=0.00392156862745098 max_splat_steps:i=32 transmittance_threshold:f=0.01 max_list_entries:i=576 loss_grad_clip:f=0 sh_band:i=1 max_anisotropy:f=10")

/* clang-format on */
#endif
