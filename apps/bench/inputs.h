#pragma once
// Reproducible inputs: element k of rank r is a function of (r, k) alone, so every rank can
// recompute every other rank's input and the exact sum without sending it (on a slow link the
// old reference reduction in long double cost more than the runs it checked).
//
// Values are uniform on [-1, 1) with 24 significant bits (exact in float32 and float64): i.i.d.
// and zero-mean, as the error model assumes (docs/error-model.md).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace cerar::bench {

inline double InputValue(int rank, std::size_t k) {
  // splitmix64 of (rank, k): a counter-based generator, no state to carry between ranks.
  std::uint64_t z = (std::uint64_t(rank) << 48) ^ (k + 0x9E3779B97F4A7C15ull * (rank + 1));
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return double(std::int64_t(z >> 40) - (std::int64_t(1) << 23)) / double(1 << 23);
}

template <typename T>
void FillInput(int rank, std::vector<T>& buf) {
  for (std::size_t k = 0; k < buf.size(); ++k) buf[k] = T(InputValue(rank, k));
}

// ||out - S||^2 and ||S||^2 for this rank's output, with S = sum over the N ranks' inputs in
// double (exact: N <= 2^29 terms of 24-bit values).
template <typename T>
void ErrorSums(int N, const std::vector<T>& out, double& num, double& den) {
  num = den = 0;
  for (std::size_t k = 0; k < out.size(); ++k) {
    double s = 0;
    for (int r = 0; r < N; ++r) s += InputValue(r, k);
    const double d = double(out[k]) - s;
    num += d * d;
    den += s * s;
  }
}

// What the bench checks on every timed run's output, on every rank: how many elements are not
// finite, and a 64-bit digest of the bytes (CERAR and the ring repeat a run bit for bit, so every
// timed run must give the digest of the run whose error is measured).
struct OutputCheck {
  std::uint64_t digest = 0;
  std::size_t non_finite = 0;
};

template <typename T>
OutputCheck CheckOutput(const std::vector<T>& out) {
  using Bits = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>;
  OutputCheck c;
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const T& v : out) {
    Bits b;
    std::memcpy(&b, &v, sizeof b);
    h = (h ^ b) * 0x100000001b3ull;
    h ^= h >> 29;
    c.non_finite += !std::isfinite(v);
  }
  c.digest = h;
  return c;
}

}  // namespace cerar::bench
