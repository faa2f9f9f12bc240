// Host-side argument rules of the CUDA back end (see arguments.h).
#include "arguments.h"

#include <cmath>
#include <cstdint>
#include <string>

#include "cerar/errors.h"

namespace cerar::cuda {
namespace {

std::string S(std::size_t v) { return std::to_string(v); }

}  // namespace

static void CheckDType(const char* call, DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
    case DType::kFloat64:
    case DType::kBFloat16:
    case DType::kFloat16:
      return;
  }
  throw InvalidArgument(std::string("CUDA back end ") + call + ": dtype " +
                        std::to_string(static_cast<int>(dtype)) +
                        " is not one of f32, f64, bf16, f16");
}

void CheckMatrices(const MatrixXd& encoder, const MatrixXd& decoder) {
  const auto L = encoder.rows(), c = encoder.cols();
  if (c < 1)
    throw InvalidArgument("CUDA back end SetMatrices: encoder has " + std::to_string(c) +
                          " columns, expected c >= 1");
  if (L < c)
    throw InvalidArgument("CUDA back end SetMatrices: encoder has " + std::to_string(L) +
                          " rows, expected L = c + N - 2 >= c = " + std::to_string(c));
  if (decoder.rows() != c || decoder.cols() != c)
    throw InvalidArgument("CUDA back end SetMatrices: decoder is " +
                          std::to_string(decoder.rows()) + " x " +
                          std::to_string(decoder.cols()) + ", expected c x c = " +
                          std::to_string(c) + " x " + std::to_string(c));
  for (Eigen::Index r = 0; r < L; ++r)
    for (Eigen::Index k = 0; k < c; ++k)
      if (!std::isfinite(encoder(r, k)))
        throw InvalidArgument("CUDA back end SetMatrices: E[" + std::to_string(r) + "," +
                              std::to_string(k) + "] = " + std::to_string(encoder(r, k)) +
                              " is not finite");
  for (Eigen::Index r = 0; r < c; ++r)
    for (Eigen::Index k = 0; k < c; ++k)
      if (!std::isfinite(decoder(r, k)))
        throw InvalidArgument("CUDA back end SetMatrices: D[" + std::to_string(r) + "," +
                              std::to_string(k) + "] = " + std::to_string(decoder(r, k)) +
                              " is not finite");
}

void CheckSegment(const char* call, DType dtype, std::size_t m, std::size_t col0,
                  std::size_t cols, int kc, int c, std::size_t ld) {
  const std::string who = std::string("CUDA back end ") + call + ": ";
  CheckDType(call, dtype);
  if (c < 1) throw InvalidArgument(who + "called before SetMatrices");
  if (kc < 1 || kc > c)
    throw InvalidArgument(who + "kc = " + std::to_string(kc) + ", expected 1 <= kc <= c = " +
                          std::to_string(c));
  if (col0 > m || cols > m - col0)
    throw InvalidArgument(who + "columns [" + S(col0) + ", " + S(col0) + " + " + S(cols) +
                          ") exceed the component length m = " + S(m));
  if (ld < col0 + cols)
    throw InvalidArgument(who + "row stride ld = " + S(ld) + " is less than col0 + cols = " +
                          S(col0 + cols));
}

static void CheckRows(const char* call, int first, int count, int n, const char* of) {
  if (first < 0 || count < 0 || first > n - count)
    throw InvalidArgument(std::string("CUDA back end ") + call + ": rows [" +
                          std::to_string(first) + ", " +
                          std::to_string(std::int64_t{first} + count) +
                          ") outside the " + std::to_string(n) + " " + of);
}

void CheckEncode(DType dtype, const void* g, std::size_t m, std::size_t col0, std::size_t cols,
                 int kc, int c, int first, int count, int L, const void* enc, std::size_t ld) {
  CheckSegment("Encode", dtype, m, col0, cols, kc, c, ld);
  CheckRows("Encode", first, count, L, "rows of E");
  if (cols > 0 && count > 0 && enc == nullptr)
    throw InvalidArgument("CUDA back end Encode: enc is null with cols = " + S(cols));
  if (cols > 0 && count > 0 && g == nullptr)
    throw InvalidArgument("CUDA back end Encode: g is null with cols = " + S(cols));
}

void CheckDecode(DType dtype, const void* obs, std::size_t ld, const void* g, std::size_t m,
                 std::size_t col0, std::size_t cols, int kc, int c, double scale) {
  CheckSegment("Decode", dtype, m, col0, cols, kc, c, ld);
  if (!std::isfinite(scale))
    throw InvalidArgument("CUDA back end Decode: scale = " + std::to_string(scale) +
                          " is not finite");
  if (cols > 0 && (g == nullptr || obs == nullptr))
    throw InvalidArgument(std::string("CUDA back end Decode: ") + (g ? "obs" : "g") +
                          " is null with cols = " + S(cols) + " and kc = " + std::to_string(kc));
}

void CheckStep(DType dtype) { CheckDType("Step", dtype); }

bool SupportsAccumulation(DType dtype, Accumulation accumulation) {
  if (accumulation == Accumulation::kBuffer) return true;
  return dtype == DType::kFloat32 || dtype == DType::kFloat64;
}

void CheckAccumulation(const char* call, DType dtype, Accumulation accumulation) {
  CheckDType(call, dtype);
  if (!SupportsAccumulation(dtype, accumulation))
    throw InvalidArgument(std::string("CUDA back end ") + call + ": accumulation " +
                          ToString(accumulation) + " on dtype " + ToString(dtype) +
                          " is not supported (the wide paths take f32 or f64 buffers; use "
                          "buffer)");
}

}  // namespace cerar::cuda
