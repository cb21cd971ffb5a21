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
  /* ---- elementwise unary: y[i] = f(x[i]); output dtype = input dtype except where noted ---- */ \
  X(ABS,         "Abs",        unary, 1, 1, "") \
  X(NEG,         "Neg",        unary, 1, 1, "") \
  X(EXP,         "Exp",        unary, 1, 1, "") \
  X(LOG,         "Log",        unary, 1, 1, "") /* natural log */ \
  X(SQRT,        "Sqrt",       unary, 1, 1, "") \
  X(RSQRT,       "Rsqrt",      unary, 1, 1, "") /* 1/sqrt(x) */ \
  X(SIN,         "Sin",        unary, 1, 1, "") \
  X(COS,         "Cos",        unary, 1, 1, "") \
  X(TAN,         "Tan",        unary, 1, 1, "") \
  X(ASIN,        "Asin",       unary, 1, 1, "") \
  X(ACOS,        "Acos",       unary, 1, 1, "") \
  X(ATAN,        "Atan",       unary, 1, 1, "") \
  X(SINH,        "Sinh",       unary, 1, 1, "") \
  X(COSH,        "Cosh",       unary, 1, 1, "") \
  X(TANH,        "Tanh",       unary, 1, 1, "") \
  X(ASINH,       "Asinh",      unary, 1, 1, "") \
  X(ACOSH,       "Acosh",      unary, 1, 1, "") \
  X(ATANH,       "Atanh",      unary, 1, 1, "") \
  X(SIGMOID,     "Sigmoid",    unary, 1, 1, "") /* 1/(1+exp(-x)) */ \
  X(RELU,        "Relu",       unary, 1, 1, "") /* max(x, 0) */ \
  X(GELU,        "Gelu",       unary, 1, 1, "") /* exact: x/2 (1 + erf(x/sqrt 2)); Hendrycks & Gimpel 2016 */ \
  X(GELU_APPROX, "GeluApprox", unary, 1, 1, "") /* tanh form: x/2 (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3))); same paper */ \
  X(SILU,        "Silu",       unary, 1, 1, "") /* x * sigmoid(x) */ \
  X(ROUND,       "Round",      unary, 1, 1, "") /* to nearest, ties to even (ONNX Round) */ \
  X(FLOOR,       "Floor",      unary, 1, 1, "") \
  X(CEIL,        "Ceil",       unary, 1, 1, "") \
  X(SIGN,        "Sign",       unary, 1, 1, "") /* -1, 0 or 1 */ \
  X(RECIPROCAL,  "Reciprocal", unary, 1, 1, "") \
  X(ERF,         "Erf",        unary, 1, 1, "") \
  X(SOFTPLUS,    "Softplus",   unary, 1, 1, "") /* log(1 + exp(x)), overflow-safe */ \
  X(NOT,         "Not",        unary, 1, 1, "") /* logical not; bool -> bool */ \
  X(IS_NAN,      "IsNaN",      unary, 1, 1, "") /* float -> bool */ \
  X(IS_INF,      "IsInf",      unary, 1, 1, "detect_negative:i=1 detect_positive:i=1") /* float -> bool (ONNX IsInf) */ \
  X(BITWISE_NOT, "BitwiseNot", unary, 1, 1, "") /* integers */ \
  \
  /* ---- elementwise binary (NumPy broadcasting, equal dtypes) ---- */ \
  X(ADD,         "Add",        binary, 2, 2, "") \
  X(SUB,         "Sub",        binary, 2, 2, "") \
  X(MUL,         "Mul",        binary, 2, 2, "") \
  X(DIV,         "Div",        binary, 2, 2, "") /* integers: truncates toward zero (ONNX/C semantics) */ \
  X(MAX,         "Max",        binary, 2, 2, "") /* NaN-propagating maximum */ \
  X(MIN,         "Min",        binary, 2, 2, "") \
  X(POW,         "Pow",        binary, 2, 2, "") /* a^b */ \
  X(MOD,         "Mod",        binary, 2, 2, "fmod:i=0") /* fmod=0: sign of divisor (Python %); fmod=1: sign of dividend (C fmod); ONNX Mod */ \
  X(AND,         "And",        binary, 2, 2, "") /* logical, bool */ \
  X(OR,          "Or",         binary, 2, 2, "") \
  X(XOR,         "Xor",        binary, 2, 2, "") \
  X(BITWISE_AND, "BitwiseAnd", binary, 2, 2, "") /* integers */ \
  X(BITWISE_OR,  "BitwiseOr",  binary, 2, 2, "") \
  X(BITWISE_XOR, "BitwiseXor", binary, 2, 2, "") \
  X(BIT_SHIFT,   "BitShift",   binary, 2, 2, "direction:s=left") /* unsigned integers; "left" or "right" */ \
  \
  /* ---- compares: bool output ---- */ \
  X(EQUAL,         "Equal",          binary, 2, 2, "") \
  X(NOT_EQUAL,     "NotEqual",       binary, 2, 2, "") \
  X(LESS,          "Less",           binary, 2, 2, "") \
  X(LESS_EQUAL,    "LessOrEqual",    binary, 2, 2, "") \
  X(GREATER,       "Greater",        binary, 2, 2, "") \
  X(GREATER_EQUAL, "GreaterOrEqual", binary, 2, 2, "") \
  \
  /* Where(cond bool, x, y) -> cond ? x : y, three-way broadcast. */ \
  X(WHERE, "Where", where, 3, 3, "") \
  /* Cast(x) to dtype `to` (an rlx_dtype value). float->int truncates toward zero; x->bool is x != 0. */ \
  X(CAST,  "Cast",  cast, 1, 1, "to:i") \
  /* ElementwiseRegion(x0..xn-1): a chain of elementwise steps lowered into one MLX trace so MLX   \
   * can fuse it. `chain` holds 5 ints per step: kind, sub-op, a, b, c. kind: 0 unary (sub-op = an \
   * RLX_OP_ unary enum value; operand a), 1 cast (sub-op = dtype; a), 2 binary or compare (sub-op \
   * = an RLX_OP_ binary/compare value; a, b), 3 where (a = cond, b, c). Operands: k >= 0 is input \
   * k; k < 0 is the result of step -k-1. The result is the last step's. */ \
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
  /* DequantMatMul(x[...,K], q[N,K], scale[N,K/bs], [zero_point[N,K/bs]]) -> y[...,N] = x @ W^T with \
   * W[n,k] = (q[n,k] - zp[n,k/bs]) * scale[n,k/bs], bs = block_size (32, 64 or 128; K a multiple).  \
   * scheme: int8_block (q int8 in [-128,127], no zero point), int8_block_asym (q uint8 in [0,255],  \
   * zero_point input), int4_block (q int8 in [-8,7], one value per element, no zero point),        \
   * int4_block_asym (q uint8 in [0,15], zero_point input). x float (float64 dequantizes first);     \
   * scale and zero_point float, cast to x's dtype; y has x's dtype. q values outside the scheme's  \
   * range wrap modulo 2^bits. Lowered to MLX's affine quantized_matmul (w = scale * u + bias per  \
   * group, u = q + 2^(bits-1) for the symmetric schemes). Errors: unknown scheme, wrong input      \
   * count, q dtype, scale/zero-point shape, K not a multiple of bs (INVALID_ARGUMENT); the GGUF     \
   * (gguf_q2k..gguf_q8k), nvfp4 and fp8 (fp8_e4m3, fp8_e5m2) schemes and other block sizes are      \
   * UNIMPLEMENTED, naming the scheme. */ \
  X(DEQUANT_MATMUL, "DequantMatMul", matmul, 3, 4, "scheme:s block_size:i=32") \
  \
  /* ---- normalization ---- */ \
  /* LayerNorm(x, gamma, [beta]) over the single axis `axis`: (x - mean)/sqrt(var + eps)*gamma +  \
   * beta, biased variance; gamma/beta have shape [x.shape[axis]] (Ba et al. 2016). */ \
  X(LAYER_NORM, "LayerNorm", norm, 2, 3, "axis:i=-1 epsilon:f=1e-5") \
  /* LayerNorm2d(x[N,C,H,W], gamma[C], [beta[C]]): LayerNorm over C at every (n, h, w). */ \
  X(LAYER_NORM_2D, "LayerNorm2d", norm, 2, 3, "epsilon:f=1e-5") \
  /* RmsNorm(x, gamma, [beta]) over `axis`: x / sqrt(mean(x^2) + eps) * gamma + beta (Zhang &   \
   * Sennrich 2019). */ \
  X(RMS_NORM, "RmsNorm", norm, 2, 3, "axis:i=-1 epsilon:f=1e-6") \
  /* GroupNorm(x[N,C,...], gamma[C], beta[C]): statistics over each group of C/num_groups channels \
   * and all spatial dims (Wu & He 2018; ONNX GroupNormalization-21). */ \
  X(GROUP_NORM, "GroupNorm", norm, 3, 3, "num_groups:i epsilon:f=1e-5") \
  /* Softmax / LogSoftmax along one axis: exp(x - max) / sum(exp(x - max)). */ \
  X(SOFTMAX,     "Softmax",    norm, 1, 1, "axis:i=-1") \
  X(LOG_SOFTMAX, "LogSoftmax", norm, 1, 1, "axis:i=-1") \
  \
  /* ---- attention ---- */ \
  /* Attention(q, k, v, [mask]): softmax(scale * q k^T + M) v, scale = score_scale (0 -> 1/sqrt(D)); \
   * softcap > 0 applies softcap * tanh(s / softcap) to the scaled scores first (Gemma 2).         \
   * Layouts: rank 4 q[B,Hq,Sq,D], k/v[B,Hkv,Sk,D]; rank 3 packed q[B,Sq,Hq*D], k/v[B,Sk,Hkv*D]   \
   * (output in q's layout). Hq % Hkv == 0 (grouped-query heads; num_kv_heads 0 -> num_heads).     \
   * mask: none; causal (query i attends keys j <= i + Sk - Sq); sliding_window (causal and        \
   * j >= i + Sk - Sq - window); custom (4th input, bool or 0/1: nonzero = may attend);            \
   * bias (4th input, added to the scaled scores). Masks broadcast to [B,H,Sq,Sk]; rank-2 masks     \
   * are [Sq,Sk]. Vaswani et al. 2017; MLX fast::scaled_dot_product_attention. */ \
  X(ATTENTION, "Attention", attention, 3, 4, "num_heads:i num_kv_heads:i=0 mask:s=none window:i=0 score_scale:f=0 softcap:f=0") \
  /* Rope(x, cos[S,R/2], sin[S,R/2]): NeoX half-split rotary embedding of the first n_rot (0 -> D)   \
   * dims of each head: y1 = x1 c - x2 s, y2 = x2 c + x1 s (x1, x2 = halves); the tail passes.      \
   * x is [..,S,D] (head_dim 0) or packed [..,S,H*D] with head_dim D. Su et al. 2021 (RoFormer). */ \
  X(ROPE, "Rope", attention, 3, 3, "head_dim:i=0 n_rot:i=0") \
  \
  /* ---- shape and data movement ---- */ \
  X(RESHAPE,   "Reshape",   shape, 1, 1, "shape:is") /* same element count; symbols allowed */ \
  X(TRANSPOSE, "Transpose", shape, 1, 1, "perm:is=") /* y.shape[i] = x.shape[perm[i]]; empty = reverse */ \
  X(NARROW,    "Narrow",    shape, 1, 1, "axis:i start:i length:i") /* x[.., start:start+length, ..] */ \
  /* Slice: ONNX Slice semantics (starts/ends clamped, negative steps allowed). */ \
  X(SLICE,     "Slice",     shape, 1, 1, "starts:is ends:is axes:is= steps:is=") \
  X(CONCAT,    "Concat",    shape, 1, 256, "axis:i") \
  X(EXPAND,    "Expand",    shape, 1, 1, "shape:is") /* broadcast x to `shape` (NumPy rules) */ \
  /* Pad: pads = [x1_begin, x2_begin, ..., x1_end, x2_end, ...] (ONNX layout; negative crops);      \
   * mode constant (value), edge, reflect (mirror without the edge). */ \
  X(PAD,       "Pad",       shape, 1, 1, "pads:is mode:s=constant value:f=0") \
  X(TILE,      "Tile",      shape, 1, 1, "repeats:is") \
  /* Gather(data, idx): ONNX Gather (numpy.take) along axis; out = data.shape[:axis] + idx.shape + \
   * data.shape[axis+1:]. */ \
  X(GATHER,          "Gather",         gather, 2, 2, "axis:i=0") \
  X(GATHER_ELEMENTS, "GatherElements", gather, 2, 2, "axis:i=0") /* numpy.take_along_axis */ \
  X(GATHER_ND,       "GatherND",       gather, 2, 2, "batch_dims:i=0") /* ONNX GatherND */ \
  /* ScatterAdd(updates[n,...], idx[n]): zeros(shape) then out[idx[i]] += updates[i] along axis. */ \
  X(SCATTER_ADD,      "ScatterAdd",      gather, 2, 2, "shape:is axis:i=0") \
  /* ScatterElements(data, idx, updates): ONNX ScatterElements; reduction none|add|mul|max|min. */ \
  X(SCATTER_ELEMENTS, "ScatterElements", gather, 3, 3, "axis:i=0 reduction:s=none") \
  X(SCATTER_ND,       "ScatterND",       gather, 3, 3, "reduction:s=none") /* ONNX ScatterND */ \
  \
  /* ---- reductions, scans, sorting ---- */ \
  /* Reduce over `axes` (empty = all) with kind sum|mean|max|min|prod; keepdims keeps size-1 dims. */ \
  X(REDUCE,  "Reduce",  reduce, 1, 1, "kind:s axes:is= keepdims:i=0") \
  /* Cumsum: inclusive (y[i] = sum x[..i]) or exclusive (sum x[..i-1]); reverse sums from the end. */ \
  X(CUMSUM,  "Cumsum",  reduce, 1, 1, "axis:i exclusive:i=0 reverse:i=0") \
  /* ArgMax / ArgMin -> int64 index of the first (select_last_index: last) extreme. */ \
  X(ARG_MAX, "ArgMax",  reduce, 1, 1, "axis:i=0 keepdims:i=1 select_last_index:i=0") \
  X(ARG_MIN, "ArgMin",  reduce, 1, 1, "axis:i=0 keepdims:i=1 select_last_index:i=0") \
  /* TopK(x) -> (values, int64 indices) of the k largest (largest=0: smallest) along axis,       \
   * sorted descending (ascending for smallest) when sorted = 1; ties keep the lower index. */ \
  X(TOPK,    "TopK",    reduce, 1, 1, "k:i axis:i=-1 largest:i=1 sorted:i=1") \
  \
  /* ---- convolution and pooling (channels first) ---- */ \
  /* Conv(x[N,Ci,d1..dn], w[Co,Ci/group,k1..kn], [b[Co]]) -> y[N,Co,o1..on], n = 1..3: ONNX Conv     \
   * (cross-correlation). y[n,o,p] = b[o] + sum over c in o's group, j < k of                       \
   * xpad[n,c,p*s + j*d] * w[o,c,j]; groups split Ci and Co evenly (group = Ci: depthwise; Co = m Ci: \
   * channel multiplier m). o_i = floor((d_i + pb_i + pe_i - dil_i (k_i - 1) - 1) / s_i) + 1.        \
   * pads = [begin d1..dn, end d1..dn] >= 0 (may be asymmetric; zeros); empty strides/dilations = 1, \
   * empty pads = 0. Equal dtypes: float, or integer (exact like MatMul, wrapping to the dtype).    \
   * Errors: group not dividing Ci/Co, weight/bias shape, kernel larger than the padded input, bad  \
   * attribute lengths or values (INVALID_ARGUMENT); other spatial ranks (UNIMPLEMENTED). */ \
  X(CONV,           "Conv",          conv, 2, 3, "strides:is= pads:is= dilations:is= group:i=1") \
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
  /* Resize(x) to `sizes` (same rank): mode nearest|linear|cubic; ONNX Resize-19 coordinate      \
   * transformation and nearest modes; `scales` (optional) are the ONNX scales when given. */ \
  X(RESIZE,         "Resize",        conv, 1, 1, "sizes:is scales:fs= mode:s=nearest coordinate_transformation_mode:s=half_pixel nearest_mode:s=round_prefer_floor cubic_coeff_a:f=-0.75 exclude_outside:i=0 extrapolation_value:f=0") \
  \
  /* ---- fused blocks ---- */ \
  /* FusedResidualLN(x, r, [bias], gamma, beta) = LayerNorm_last(x + r [+ bias]). */ \
  X(FUSED_RESIDUAL_LN, "FusedResidualLN", fused, 4, 5, "has_bias:i=0 epsilon:f=1e-5") \
  /* FusedResidualRmsNorm(x, r, [bias], gamma, [beta]) = RmsNorm_last(x + r [+ bias]). */ \
  X(FUSED_RESIDUAL_RMS_NORM, "FusedResidualRmsNorm", fused, 3, 5, "has_bias:i=0 epsilon:f=1e-6") \
  /* FusedSwiGLU(x[..,2N]) = up * silu(gate); gate_first=0: up = x[..,:N], gate = x[..,N:];      \
   * gate_first=1 swaps them (Shazeer 2020). cast_to >= 0 casts the result to that dtype. */ \
  X(FUSED_SWIGLU, "FusedSwiGLU", fused, 1, 1, "gate_first:i=0 cast_to:i=-1") \
  /* FusedAttentionBlock(h[B,S,E], qkv_w[E,3E], out_w[E,E], [mask], [qkv_b[3E], out_b[E]],      \
   * [cos, sin]): qkv projection, optional Rope, Attention with `mask` semantics, out projection. \
   * Inputs present follow has_bias / has_rope / mask (mask input present unless mask = none). */ \
  X(FUSED_ATTENTION_BLOCK, "FusedAttentionBlock", fused, 3, 8, "num_heads:i has_bias:i=0 has_rope:i=0 mask:s=none") \
  /* FusedTransformerLayer: BERT post-norm block. Inputs: h, qkv_w, [qkv_b], out_w, [out_b],      \
   * ln1_g, ln1_b, ff1_w, [ff1_b], ff2_w, [ff2_b], ln2_g, ln2_b, [mask] (biases iff has_bias;    \
   * mask iff mask != none, same semantics as Attention). y1 = LN1(h + Attn(h)); out =          \
   * LN2(y1 + act(y1 ff1 + b) ff2 + b). Devlin et al. 2019. */ \
  X(FUSED_TRANSFORMER_LAYER, "FusedTransformerLayer", fused, 8, 14, "num_heads:i epsilon1:f=1e-12 epsilon2:f=1e-12 activation:s=Gelu has_bias:i=1 mask:s=none") \
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
  /* SoftmaxCrossEntropyWithLogits(logits[N,C], labels[N] int) -> loss[N] = logsumexp(l) - l[label]. */ \
  X(SOFTMAX_CROSS_ENTROPY, "SoftmaxCrossEntropyWithLogits", norm_grad, 2, 2, "") \
  /* SoftmaxCrossEntropyBackward(logits, labels, dloss[N]) = (softmax(l) - onehot) * dloss. */ \
  X(SOFTMAX_CROSS_ENTROPY_BACKWARD, "SoftmaxCrossEntropyBackward", norm_grad, 3, 3, "") \
  /* LayerNorm gradients over `axis` (as LayerNorm): input (x, gamma, dy) -> dx; gamma (x, dy) ->  \
   * dgamma[D] summed over the other axes; beta (dy) -> dbeta[D]. */ \
  X(LAYER_NORM_BACKWARD_INPUT, "LayerNormBackwardInput", norm_grad, 3, 3, "axis:i=-1 epsilon:f=1e-5") \
  X(LAYER_NORM_BACKWARD_GAMMA, "LayerNormBackwardGamma", norm_grad, 2, 2, "axis:i=-1 epsilon:f=1e-5") \
  X(LAYER_NORM_BACKWARD_BETA,  "LayerNormBackwardBeta",  norm_grad, 1, 1, "axis:i=-1") \
  X(RMS_NORM_BACKWARD_INPUT, "RmsNormBackwardInput", norm_grad, 3, 3, "axis:i=-1 epsilon:f=1e-6") \
  X(RMS_NORM_BACKWARD_GAMMA, "RmsNormBackwardGamma", norm_grad, 2, 2, "axis:i=-1 epsilon:f=1e-6") \
  X(RMS_NORM_BACKWARD_BETA,  "RmsNormBackwardBeta",  norm_grad, 1, 1, "axis:i=-1") \
  /* GroupNorm gradients (x[N,C,...]): input (x, gamma, dy) -> dx; gamma (x, dy) -> [C]; beta (dy). */ \
  X(GROUP_NORM_BACKWARD_INPUT, "GroupNormBackwardInput", norm_grad, 3, 3, "num_groups:i epsilon:f=1e-5") \
  X(GROUP_NORM_BACKWARD_GAMMA, "GroupNormBackwardGamma", norm_grad, 2, 2, "num_groups:i epsilon:f=1e-5") \
  X(GROUP_NORM_BACKWARD_BETA,  "GroupNormBackwardBeta",  norm_grad, 1, 1, "num_groups:i") \
  /* AttentionBackward(q, k, v, dy, [mask]): the gradient of Attention (same attributes and     \
   * layouts) with respect to wrt = query | key | value. */ \
  X(ATTENTION_BACKWARD, "AttentionBackward", attention_grad, 4, 5, "wrt:s num_heads:i num_kv_heads:i=0 mask:s=none window:i=0 score_scale:f=0 softcap:f=0") \
  /* RopeBackward(dy, cos, sin): the inverse rotation (Rope with -sin). */ \
  X(ROPE_BACKWARD, "RopeBackward", attention_grad, 3, 3, "head_dim:i=0 n_rot:i=0") \
  /* CumsumBackward(dy) = reverse cumsum of dy (shifted by one when exclusive). */ \
  X(CUMSUM_BACKWARD, "CumsumBackward", index_grad, 1, 1, "axis:i exclusive:i=0") \
  /* GatherBackward(dy, idx): zeros(shape) with dy scatter-added at idx along axis. */ \
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
   * axis). x float (half types computed in float32); y has x's type. ste is validated here and     \
   * used by FakeQuantizeBackward. Errors: bits, ste, scale_mode, input count, scale shape           \
   * (INVALID_ARGUMENT), axis (OUT_OF_RANGE); scale_mode ema (a running scale across calls) is       \
   * UNIMPLEMENTED, naming the op. */ \
  X(FAKE_QUANTIZE, "FakeQuantize", quant, 1, 2, "bits:i=8 per_channel:i=0 axis:i=0 ste:s=identity scale_mode:s=per_batch") \
  /* FakeQuantizeBackward(x, dy, [scale]) -> dx (dy's shape and dtype): the straight-through         \
   * estimator ste of FakeQuantize (Bengio et al. 2013): identity dy; clipped_identity dy where       \
   * |x| <= qmax s, else 0 (s as FakeQuantize with the same bits/per_channel/axis/scale_mode; a        \
   * per_batch s puts every x inside, so it equals identity); tanh dy (1 - tanh^2 x); hard_tanh dy    \
   * where |x| <= 1. Errors as FakeQuantize, plus dy's shape. */ \
  X(FAKE_QUANTIZE_BACKWARD, "FakeQuantizeBackward", quant, 2, 3, "bits:i=8 per_channel:i=0 axis:i=0 ste:s=identity scale_mode:s=per_batch") \
  \
  /* ---- control flow and sequence/state (owned sub-graphs) ---- */ \
  /* If(cond bool scalar, captures...): both branches are lowered and the outputs selected with \
   * where(cond, then, else); branch inputs bind positionally to the captures; branches must    \
   * produce the same number and types of outputs (any number). */ \
  X(IF, "If", control, 1, 256, "then_branch:g else_branch:g") \
  /* While(carried...): runs body (carried -> carried) while cond (carried -> bool scalar) holds, \
   * at most max_iterations times (unrolled); once cond is false the carried values freeze.     \
   * Outputs: every carried value. */ \
  X(WHILE, "While", control, 1, 256, "cond:g body:g max_iterations:i") \
  /* Scan(init carries..., bcast..., xs...): for t < length: carries = body(carries, bcast,       \
   * xs[t]) (xs sliced on axis 0); outputs: the final carries and, with save_trajectory, each    \
   * carry's stack over t [length, ...]. num_checkpoints is a memory hint of the backward pass. */ \
  X(SCAN, "Scan", control, 1, 256, "body:g length:i save_trajectory:i=0 num_bcast:i=0 num_xs:i=0 num_checkpoints:i=0") \
  /* SelectiveScan(x[B,S,H], delta[B,S,H], A[H,N], Bm[B,S,N], Cm[B,S,N]) -> y[B,S,H]: the Mamba \
   * recurrence h_t = exp(delta_t A) h_{t-1} + delta_t Bm_t x_t, y_t = sum_n Cm_t h_t (Gu & Dao 2023). */ \
  X(SELECTIVE_SCAN, "SelectiveScan", sequence, 5, 5, "") \
  /* GatedDeltaNet(q, k, v [B,S,H,N], g, beta [B,S,H], [state [B,H,N,N]]) -> (y [B,S,H,N],     \
   * final state): S_t = exp(g_t) S_{t-1} + beta_t k_t (v_t - exp(g_t) S_{t-1}^T k_t)^T...      \
   * (Yang et al. 2024, gated delta rule); state defaults to zeros. */ \
  X(GATED_DELTA_NET, "GatedDeltaNet", sequence, 5, 6, "") \
  \
  /* ---- FFT, sampling, solvers ---- */ \
  /* Fft(x): DFT along the last axis; x is complex64 [..,N] or real-block float [..,2N] holding   \
   * [re_0..re_N-1, im_0..im_N-1]; the output has x's layout. norm: backward (no scaling forward, \
   * 1/N inverse), forward (1/N forward), ortho (1/sqrt N both). float64 keeps float64 precision. */ \
  X(FFT, "Fft", fft, 1, 1, "inverse:i=0 norm:s=backward") \
  /* Rfft(x real [..,N]) -> real-block [..,2(N/2+1)] (x's dtype) of the one-sided spectrum. */ \
  X(RFFT, "Rfft", fft, 1, 1, "norm:s=backward") \
  /* Irfft(real-block [..,2M]) -> real [..,n], the inverse of Rfft with output length n. */ \
  X(IRFFT, "Irfft", fft, 1, 1, "n:i norm:s=backward") \
  /* Sample(logits[..,V]) -> int64 token ids [..]: logits / temperature, keep the top_k largest \
   * (0 = all), keep the smallest set whose probability reaches top_p (1 = all), then draw from    \
   * the categorical distribution with `seed` (0 = MLX's global key). Same seed, same tokens. */ \
  X(SAMPLE, "Sample", sample, 1, 1, "temperature:f=1 top_k:i=0 top_p:f=1 seed:i=0") \
  /* DenseSolve(A[n,n], b[n] or [n,k]) -> x with A x = b (LU with partial pivoting, CPU stream). */ \
  X(DENSE_SOLVE, "DenseSolve", linalg, 2, 2, "") \
  /* BatchedDenseSolve(A[B,n,n], b[B,n]) -> x[B,n]. */ \
  X(BATCHED_DENSE_SOLVE, "BatchedDenseSolve", linalg, 2, 2, "") \
  \
  /* ---- extension and host-only ops ---- */ \
  /* Custom(inputs...): a kernel registered under `name` (see rlx/registry.h); other attributes are \
   * passed to it. */ \
  X(CUSTOM, "Custom", custom, 0, 256, "name:s *") \
  /* Host-only ops of the reference system (rlx-cpu code): UNIMPLEMENTED in rlx. */ \
  X(GAUSSIAN_SPLAT_RENDER, "GaussianSplatRender", unsupported, 0, 256, "*") \
  X(GAUSSIAN_SPLAT_RENDER_BACKWARD, "GaussianSplatRenderBackward", unsupported, 0, 256, "*") \
  X(DEQUANT_GROUPED_MATMUL, "DequantGroupedMatMul", unsupported, 0, 256, "*") \
  X(LLADA2_GROUP_LIMITED_GATE, "Llada2GroupLimitedGate", unsupported, 0, 256, "*")

/* clang-format on */
#endif
