/* rlx/types.h: element types (dtypes) and tensor types (dtype + static or symbolic shape).
 *
 * Dims are int64_t. A dim >= 0 is a static size. A negative dim is symbolic:
 * RLX_DIM_SYMBOL(k) names symbol k (the same k means the same size everywhere in a graph) and
 * RLX_DIM_DYNAMIC stands for a size rlx could not express as a symbol (e.g. the sum of two
 * symbols). Symbols are bound to sizes when an executable runs (see rlx/executable.h).
 * Rank 0 (a scalar) is allowed; the largest rank is RLX_MAX_RANK.
 *
 * Thread-safety: all functions here are pure and may be called from any thread.
 */
#ifndef RLX_TYPES_H
#define RLX_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rlx/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RLX_MAX_RANK 8

/* The dtype table: X(ENUM, name, size in bytes). Names follow numpy/MLX, and ml_dtypes for the
 * low-precision storage types after complex64 (see rlx_dtype_is_lowp). */
#define RLX_DTYPE_TABLE(X) \
  X(F32, "float32", 4)     \
  X(F16, "float16", 2)     \
  X(BF16, "bfloat16", 2)   \
  X(F64, "float64", 8)     \
  X(I8, "int8", 1)         \
  X(I16, "int16", 2)       \
  X(I32, "int32", 4)       \
  X(I64, "int64", 8)       \
  X(U8, "uint8", 1)        \
  X(U16, "uint16", 2)      \
  X(U32, "uint32", 4)      \
  X(U64, "uint64", 8)      \
  X(BOOL, "bool", 1)       \
  X(C64, "complex64", 8) /* interleaved (re, im) float32 pairs */ \
  X(F8E4M3FN, "float8_e4m3fn", 1)     \
  X(F8E4M3FNUZ, "float8_e4m3fnuz", 1) \
  X(F8E5M2, "float8_e5m2", 1)         \
  X(F8E5M2FNUZ, "float8_e5m2fnuz", 1) \
  X(F4E2M1, "float4_e2m1fn", 1)       \
  X(I4, "int4", 1)                    \
  X(U4, "uint4", 1)                   \
  X(I2, "int2", 1)                    \
  X(U2, "uint2", 1)

typedef enum rlx_dtype {
#define RLX_X(e, n, s) RLX_DTYPE_##e,
  RLX_DTYPE_TABLE(RLX_X)
#undef RLX_X
      RLX_DTYPE_COUNT
} rlx_dtype;

/* Size of one element in bytes (the table above; complex64 is 8); 0 for values outside the enum. */
size_t rlx_dtype_size(rlx_dtype dt);
/* numpy-style name ("float32", ...; a static string); "invalid" for values outside the enum. */
const char *rlx_dtype_name(rlx_dtype dt);
/* Parses a numpy-style name (exact, case-sensitive). NOT_FOUND (naming `name`; NULL is not found)
 * when unknown, INVALID_ARGUMENT for a NULL out; *out untouched on failure. */
RLX_MUST_USE rlx_status *rlx_dtype_from_name(const char *name, rlx_dtype *out);
/* Predicates; false for values outside the enum. */
bool rlx_dtype_is_float(rlx_dtype dt);   /* F32 F16 BF16 F64 (not C64) */
bool rlx_dtype_is_int(rlx_dtype dt);     /* signed and unsigned integers (not BOOL) */
bool rlx_dtype_is_signed(rlx_dtype dt);  /* floats, C64 and signed integers */
/* The low-precision storage types: one element per byte on the host and on the device (MLX has
 * no such arrays: they are uint8 there), as ml_dtypes stores them. Only Cast (to and from any
 * numeric type, ONNX Cast semantics), QuantizeLinear/DequantizeLinear as the ONNX importer builds
 * them, and data-movement ops take them; arithmetic ops reject them like any non-numeric type.
 *   float8_e4m3fn   OCP 8-bit FP E4M3: bias 7, max 448, no infinities, NaN S.1111.111
 *   float8_e4m3fnuz E4M3, bias 8, max 240, no infinities and no -0, NaN 0x80 (Graphcore FNUZ)
 *   float8_e5m2     OCP 8-bit FP E5M2: bias 15, max 57344, IEEE-like infinities and NaNs
 *   float8_e5m2fnuz E5M2, bias 16, max 57344, no infinities and no -0, NaN 0x80
 *   float4_e2m1fn   OCP MX v1.0 FP4 E2M1 in the low 4 bits: {0, 0.5, 1, 1.5, 2, 3, 4, 6} and
 *                   negatives, no infinities or NaN
 *   int4, uint4     in the low 4 bits (int4 two's complement: 0xF is -1), upper bits ignored
 *   int2, uint2     in the low 2 bits, likewise
 * (ONNX packs the 4-bit types two per byte and the 2-bit types four per byte in TensorProtos;
 * the importer unpacks them.) */
bool rlx_dtype_is_lowp(rlx_dtype dt);
/* The value of low-precision code `code` of dtype dt (above) as a float: exact; NaN for the NaN
 * codes; 0 for dt not a low-precision type. */
float rlx_lowp_to_f32(rlx_dtype dt, uint8_t code);

/* float16 (IEEE 754 binary16) and bfloat16 (the top 16 bits of a binary32) bit patterns to and
 * from float. Narrowing rounds to nearest, ties to even (IEEE 754 roundTiesToEven); float16
 * overflows to +-inf (from 65520 up) and underflows through its subnormals to +-0; a NaN stays a
 * NaN of the same sign (float16 keeps the top payload bits, bfloat16 is quieted). Widening is
 * exact. Results agree bit for bit with NumPy's float16 and ml_dtypes' bfloat16 casts. */
float rlx_f16_to_f32(uint16_t bits);
uint16_t rlx_f32_to_f16(float x);
float rlx_bf16_to_f32(uint16_t bits);
uint16_t rlx_f32_to_bf16(float x);

#define RLX_DIM_DYNAMIC ((int64_t)-1)
#define RLX_DIM_SYMBOL(k) ((int64_t)-2 - (int64_t)(k))
#define RLX_DIM_IS_STATIC(d) ((d) >= 0)
#define RLX_DIM_SYMBOL_ID(d) (-2 - (d)) /* valid only when d <= -2 */

/* A tensor type: dtype and shape. A plain value; rank <= RLX_MAX_RANK. */
typedef struct rlx_type {
  rlx_dtype dtype;
  int32_t rank;
  int64_t dims[RLX_MAX_RANK];
} rlx_type;

/* Builds a type from `rank` dims (copied; NULL allowed when rank is 0). Dims may be symbolic
 * (negative, see above). INVALID_ARGUMENT when rank is outside [0, RLX_MAX_RANK], dtype is outside
 * the enum, dims is NULL for rank > 0 or out is NULL. *out untouched on failure. */
RLX_MUST_USE rlx_status *rlx_type_make(rlx_dtype dtype, int32_t rank, const int64_t *dims, rlx_type *out);

/* true when every dim is static (>= 0); true for rank 0. t must not be NULL (likewise below). */
bool rlx_type_is_static(const rlx_type *t);

/* Number of elements of a static type (the product of the dims; 1 for rank 0). Errors:
 * INVALID_ARGUMENT when a dim is symbolic (naming it) or an argument is NULL, RESOURCE_EXHAUSTED
 * when the product overflows int64. *out untouched on failure. */
RLX_MUST_USE rlx_status *rlx_type_numel(const rlx_type *t, int64_t *out);

/* Number of bytes of a static type (numel * rlx_dtype_size). Errors as rlx_type_numel, plus
 * RESOURCE_EXHAUSTED when the byte count overflows size_t. *out untouched on failure. */
RLX_MUST_USE rlx_status *rlx_type_nbytes(const rlx_type *t, size_t *out);

/* Writes the type as text into buf: "float32[2,3,s0,?]" (static dims as numbers, symbol k as
 * "s<k>", RLX_DIM_DYNAMIC as "?"; rank 0 is "float32[]"). buf is always NUL-terminated and the
 * text truncated to cap - 1 characters (nothing is written when cap is 0). Returns buf. */
char *rlx_type_str(const rlx_type *t, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
