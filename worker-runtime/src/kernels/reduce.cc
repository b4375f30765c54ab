#include <algorithm>
#include <type_traits>

#include "kernels/half.h"
#include "kernels/kernels.h"

namespace korovod::kernels {
namespace {

// Wrapping integer arithmetic without signed-overflow UB (and without int promotion overflow).
template <typename T, bool = std::is_floating_point_v<T>>
struct WideOf { using type = T; };
template <typename T>
struct WideOf<T, false> { using type = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>; };
template <typename T>
using Wide = typename WideOf<T>::type;

template <typename T>
struct Sum { static T apply(T a, T b) { return static_cast<T>(static_cast<Wide<T>>(a) + static_cast<Wide<T>>(b)); } };
template <typename T>
struct Product { static T apply(T a, T b) { return static_cast<T>(static_cast<Wide<T>>(a) * static_cast<Wide<T>>(b)); } };
template <typename T>
struct Min { static T apply(T a, T b) { return b < a ? b : a; } };
template <typename T>
struct Max { static T apply(T a, T b) { return a < b ? b : a; } };

// One clone per ISA, picked once at load time by an ifunc resolver: the build stays generic
// (x86-64 baseline) while AVX2 / AVX-512 machines get their wider vectors. Not under
// ThreadSanitizer: the resolvers run during relocation, before TSan's runtime is set up, and
// their instrumented code crashed every TSan binary at load (sanitize.tsan_ci).
#if defined(__SANITIZE_THREAD__)
#define KOROVOD_NO_ISA_CLONES 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KOROVOD_NO_ISA_CLONES 1
#endif
#endif
template <typename T, typename Op>
#if defined(__x86_64__) && !defined(KOROVOD_NO_ISA_CLONES)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void reduce_loop(T* __restrict inout, const T* __restrict in, int64_t n) {
  for (int64_t i = 0; i < n; ++i) inout[i] = Op::apply(inout[i], in[i]);
}

template <typename T>
void reduce_typed(ReduceOp op, void* inout, const void* in, int64_t n) {
  auto* a = static_cast<T*>(inout);
  auto* b = static_cast<const T*>(in);
  switch (op) {
    case ReduceOp::kMin: return reduce_loop<T, Min<T>>(a, b, n);
    case ReduceOp::kMax: return reduce_loop<T, Max<T>>(a, b, n);
    case ReduceOp::kProduct: return reduce_loop<T, Product<T>>(a, b, n);
    default: return reduce_loop<T, Sum<T>>(a, b, n);
  }
}

// bool as logic on 0/1 bytes: or for Sum/Max, and for Product/Min.
void reduce_bool(ReduceOp op, void* inout, const void* in, int64_t n) {
  auto* a = static_cast<uint8_t*>(inout);
  auto* b = static_cast<const uint8_t*>(in);
  bool use_and = op == ReduceOp::kProduct || op == ReduceOp::kMin;
  if (use_and) {
    for (int64_t i = 0; i < n; ++i) a[i] = (a[i] != 0) & (b[i] != 0);
  } else {
    for (int64_t i = 0; i < n; ++i) a[i] = (a[i] != 0) | (b[i] != 0);
  }
}

using ToFloat = void (*)(const uint16_t*, float*, int64_t);
using FromFloat = void (*)(const float*, uint16_t*, int64_t);

// 16-bit floats: widen a block to float32, reduce, round back once.
void reduce_half(ReduceOp op, void* inout, const void* in, int64_t n, ToFloat widen, FromFloat narrow) {
  constexpr int64_t kBlock = 1024;
  alignas(64) float fa[kBlock];
  alignas(64) float fb[kBlock];
  auto* a = static_cast<uint16_t*>(inout);
  auto* b = static_cast<const uint16_t*>(in);
  for (int64_t start = 0; start < n; start += kBlock) {
    int64_t len = std::min(kBlock, n - start);
    widen(a + start, fa, len);
    widen(b + start, fb, len);
    reduce_typed<float>(op, fa, fb, len);
    narrow(fa, a + start, len);
  }
}

}  // namespace

void reduce_into(DataType dtype, ReduceOp op, void* inout, const void* in, int64_t count) {
  switch (dtype) {
    case DataType::kUInt8: return reduce_typed<uint8_t>(op, inout, in, count);
    case DataType::kInt8: return reduce_typed<int8_t>(op, inout, in, count);
    case DataType::kUInt16: return reduce_typed<uint16_t>(op, inout, in, count);
    case DataType::kInt16: return reduce_typed<int16_t>(op, inout, in, count);
    case DataType::kInt32: return reduce_typed<int32_t>(op, inout, in, count);
    case DataType::kInt64: return reduce_typed<int64_t>(op, inout, in, count);
    case DataType::kFloat32: return reduce_typed<float>(op, inout, in, count);
    case DataType::kFloat64: return reduce_typed<double>(op, inout, in, count);
    case DataType::kBool: return reduce_bool(op, inout, in, count);
    case DataType::kFloat16:
      return reduce_half(op, inout, in, count, float16_to_float32, float32_to_float16);
    case DataType::kBFloat16:
      return reduce_half(op, inout, in, count, bfloat16_to_float32, float32_to_bfloat16);
  }
}

}  // namespace korovod::kernels
