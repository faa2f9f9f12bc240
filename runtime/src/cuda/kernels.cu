// The fused elementwise kernels of the CUDA back end. Low-precision buffers (bf16, f16) are
// loaded, computed on in float32 and rounded once on store.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <array>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "checks.h"
#include "kernels.h"

namespace cerar::cuda {
namespace {

// Which pointers are present; each combination is one instantiation.
enum StepFlags : int { kENow = 1, kYPrev = 2, kEBack = 4, kX = 8, kObs = 16, kAllFlags = 32 };

template <typename T> struct Accum { using type = float; };
template <> struct Accum<double> { using type = double; };

template <typename T> __device__ __forceinline__ typename Accum<T>::type Widen(T v) {
  return static_cast<typename Accum<T>::type>(v);
}
template <> __device__ __forceinline__ float Widen(__nv_bfloat16 v) { return __bfloat162float(v); }
template <> __device__ __forceinline__ float Widen(__half v) { return __half2float(v); }

template <typename T> __device__ __forceinline__ T Narrow(typename Accum<T>::type v) {
  return static_cast<T>(v);
}
template <> __device__ __forceinline__ __nv_bfloat16 Narrow(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ __half Narrow(float v) { return __float2half_rn(v); }

// V consecutive elements moved as one aligned vector access (16 bytes when V > 1).
template <typename T, int V> struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

template <typename T, int V, int F>
__device__ __forceinline__ void StepAt(const T* e_now, const T* y_prev, const T* e_back, T* x,
                                       T* obs, std::size_t i) {
  using A = typename Accum<T>::type;
  using P = Pack<T, V>;
  // Read every input before writing any output, so in-place calls (x == y_prev, ...) are safe.
  P yp{}, eb{}, en{};
  if constexpr ((F & kYPrev) != 0) yp = *reinterpret_cast<const P*>(y_prev + i);
  if constexpr ((F & kEBack) != 0) eb = *reinterpret_cast<const P*>(e_back + i);
  if constexpr ((F & kENow) != 0 && (F & kX) != 0) en = *reinterpret_cast<const P*>(e_now + i);
  P out_obs, out_x;
#pragma unroll
  for (int k = 0; k < V; ++k) {
    A tmp = A(0);
    if constexpr ((F & kYPrev) != 0) tmp = Widen(yp.v[k]);
    if constexpr ((F & kEBack) != 0) tmp = tmp - Widen(eb.v[k]);
    if constexpr ((F & kObs) != 0) out_obs.v[k] = Narrow<T>(tmp);
    if constexpr ((F & kX) != 0) {
      if constexpr ((F & kENow) != 0) {
        out_x.v[k] = Narrow<T>(Widen(en.v[k]) + tmp);
      } else {
        out_x.v[k] = Narrow<T>(tmp);
      }
    }
  }
  if constexpr ((F & kObs) != 0) *reinterpret_cast<P*>(obs + i) = out_obs;
  if constexpr ((F & kX) != 0) *reinterpret_cast<P*>(x + i) = out_x;
}

template <typename T, int V, int F>
__global__ void StepKernel(const T* e_now, const T* y_prev, const T* e_back, T* x, T* obs,
                           std::size_t len) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  const std::size_t tid = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t packs = len / V;
  for (std::size_t p = tid; p < packs; p += stride) StepAt<T, V, F>(e_now, y_prev, e_back, x, obs, p * V);
  if constexpr (V > 1) {
    for (std::size_t i = packs * V + tid; i < len; i += stride)
      StepAt<T, 1, F>(e_now, y_prev, e_back, x, obs, i);
  }
}

template <typename T, int V>
using StepFn = void (*)(const T*, const T*, const T*, T*, T*, std::size_t);

template <typename T, int V, int... F>
constexpr std::array<StepFn<T, V>, kAllFlags> MakeStepTable(std::integer_sequence<int, F...>) {
  return {&StepKernel<T, V, F>...};
}

constexpr int kThreads = 256;

bool Aligned16(const void* p) { return p == nullptr || reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// Kernel names for launch-failure messages.
template <typename T> constexpr const char* StepName() {
  if constexpr (std::is_same_v<T, float>) return "StepKernel<f32>";
  else if constexpr (std::is_same_v<T, double>) return "StepKernel<f64>";
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return "StepKernel<bf16>";
  else return "StepKernel<f16>";
}
template <typename T> constexpr const char* ConvertName() {
  if constexpr (std::is_same_v<T, float>) return "ConvertKernel<f32>";
  else if constexpr (std::is_same_v<T, double>) return "ConvertKernel<f64>";
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return "ConvertKernel<bf16>";
  else return "ConvertKernel<f16>";
}

template <typename T>
void Step(const void* e_now, const void* y_prev, const void* e_back, void* x, void* obs,
          std::size_t len, int max_blocks, cudaStream_t stream) {
  const int flags = (e_now ? kENow : 0) | (y_prev ? kYPrev : 0) | (e_back ? kEBack : 0) |
                    (x ? kX : 0) | (obs ? kObs : 0);
  constexpr int kVec = 16 / int(sizeof(T));
  const bool vector = Aligned16(e_now) && Aligned16(y_prev) && Aligned16(e_back) &&
                      Aligned16(x) && Aligned16(obs);
  const std::size_t work = vector ? (len + kVec - 1) / kVec : len;
  std::size_t blocks = (work + kThreads - 1) / kThreads;
  if (blocks > std::size_t(max_blocks)) blocks = std::size_t(max_blocks);
  if (blocks == 0) blocks = 1;
  const auto* en = static_cast<const T*>(e_now);
  const auto* yp = static_cast<const T*>(y_prev);
  const auto* eb = static_cast<const T*>(e_back);
  auto* xo = static_cast<T*>(x);
  auto* oo = static_cast<T*>(obs);
  if (vector) {
    static constexpr auto table = MakeStepTable<T, kVec>(std::make_integer_sequence<int, kAllFlags>{});
    CERAR_CUDA_LAUNCH(StepName<T>(), table[flags]<<<unsigned(blocks), kThreads, 0, stream>>>(
                                         en, yp, eb, xo, oo, len));
  } else {
    static constexpr auto table = MakeStepTable<T, 1>(std::make_integer_sequence<int, kAllFlags>{});
    CERAR_CUDA_LAUNCH(StepName<T>(), table[flags]<<<unsigned(blocks), kThreads, 0, stream>>>(
                                         en, yp, eb, xo, oo, len));
  }
}

template <typename T>
__global__ void ConvertKernel(const double* src, T* dst, std::size_t n) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    if constexpr (std::is_same_v<T, __nv_bfloat16>) {
      dst[i] = __double2bfloat16(src[i]);
    } else if constexpr (std::is_same_v<T, __half>) {
      dst[i] = __double2half(src[i]);
    } else {
      dst[i] = static_cast<T>(src[i]);
    }
  }
}

template <typename T>
void Convert(const double* src, void* dst, std::size_t n, cudaStream_t stream) {
  std::size_t blocks = (n + kThreads - 1) / kThreads;
  if (blocks > 4096) blocks = 4096;
  CERAR_CUDA_LAUNCH(ConvertName<T>(), ConvertKernel<T><<<unsigned(blocks), kThreads, 0, stream>>>(
                                          src, static_cast<T*>(dst), n));
}

}  // namespace

void LaunchStep(DType dtype, const void* e_now, const void* y_prev, const void* e_back, void* x,
                void* obs, std::size_t len, int max_blocks, cudaStream_t stream) {
  if (len == 0 || (x == nullptr && obs == nullptr)) return;
  switch (dtype) {
    case DType::kFloat32: return Step<float>(e_now, y_prev, e_back, x, obs, len, max_blocks, stream);
    case DType::kFloat64: return Step<double>(e_now, y_prev, e_back, x, obs, len, max_blocks, stream);
    case DType::kBFloat16: return Step<__nv_bfloat16>(e_now, y_prev, e_back, x, obs, len, max_blocks, stream);
    case DType::kFloat16: return Step<__half>(e_now, y_prev, e_back, x, obs, len, max_blocks, stream);
  }
  throw InvalidArgument("LaunchStep: unknown dtype " + std::to_string(int(dtype)));
}

void LaunchConvertFromDouble(DType dtype, const double* src, void* dst, std::size_t n,
                             cudaStream_t stream) {
  if (n == 0) return;
  switch (dtype) {
    case DType::kFloat32: return Convert<float>(src, dst, n, stream);
    case DType::kFloat64: return Convert<double>(src, dst, n, stream);
    case DType::kBFloat16: return Convert<__nv_bfloat16>(src, dst, n, stream);
    case DType::kFloat16: return Convert<__half>(src, dst, n, stream);
  }
  throw InvalidArgument("LaunchConvertFromDouble: unknown dtype " + std::to_string(int(dtype)));
}

}  // namespace cerar::cuda
