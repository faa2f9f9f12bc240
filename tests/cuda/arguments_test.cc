// Argument rules of the CUDA back end (host-side, no device needed).
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <string>

#include "arguments.h"
#include "cerar/errors.h"

namespace cerar::cuda {
namespace {

int dummy;
const void* kPtr = &dummy;

std::string MessageOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "(no InvalidArgument)";
}

TEST(CudaArguments, MatricesMustBeLByCAndCByCAndFinite) {
  EXPECT_NO_THROW(CheckMatrices(MatrixXd::Ones(4, 3), MatrixXd::Ones(3, 3)));
  EXPECT_NO_THROW(CheckMatrices(MatrixXd::Ones(1, 1), MatrixXd::Ones(1, 1)));  // N = 2, c = 1
  EXPECT_NE(MessageOf([] { CheckMatrices(MatrixXd::Ones(2, 3), MatrixXd::Ones(3, 3)); })
                .find("encoder has 2 rows, expected L = c + N - 2 >= c = 3"), std::string::npos);
  EXPECT_NE(MessageOf([] { CheckMatrices(MatrixXd::Ones(4, 3), MatrixXd::Ones(3, 2)); })
                .find("decoder is 3 x 2, expected c x c = 3 x 3"), std::string::npos);
  MatrixXd E = MatrixXd::Ones(4, 3);
  E(2, 1) = std::numeric_limits<double>::quiet_NaN();
  EXPECT_NE(MessageOf([&] { CheckMatrices(E, MatrixXd::Ones(3, 3)); }).find("E[2,1]"),
            std::string::npos);
  MatrixXd D = MatrixXd::Ones(3, 3);
  D(0, 2) = std::numeric_limits<double>::infinity();
  EXPECT_NE(MessageOf([&] { CheckMatrices(MatrixXd::Ones(4, 3), D); }).find("D[0,2]"),
            std::string::npos);
}

TEST(CudaArguments, EncodeRules) {
  // m = 10, c = 4: columns [3, 10) with ld 12.
  EXPECT_NO_THROW(CheckEncode(DType::kFloat32, kPtr, 10, 3, 7, 4, 4, 0, 2, 6, kPtr, 12));
  EXPECT_NE(MessageOf([] { CheckEncode(DType::kBFloat16, kPtr, 10, 3, 7, 0, 4, 0, 2, 6, kPtr, 10); })
                .find("kc = 0, expected 1 <= kc <= c = 4"), std::string::npos);  // no data here
  EXPECT_NO_THROW(CheckEncode(DType::kFloat32, nullptr, 10, 3, 7, 4, 4, 2, 0, 6, nullptr, 12));  // no rows
  EXPECT_NE(MessageOf([] { CheckEncode(DType::kFloat32, kPtr, 10, 3, 7, 4, 4, 5, 2, 6, kPtr, 12); })
                .find("rows [5, 7) outside the 6 rows of E"), std::string::npos);
  EXPECT_NO_THROW(CheckEncode(DType::kFloat32, nullptr, 10, 10, 0, 4, 4, 0, 2, 6, nullptr, 10));  // empty
  EXPECT_NE(MessageOf([] { CheckEncode(DType::kFloat32, kPtr, 10, 3, 7, 4, 0, 0, 2, 6, kPtr, 12); })
                .find("called before SetMatrices"), std::string::npos);
  EXPECT_NE(MessageOf([] { CheckEncode(DType::kFloat32, kPtr, 10, 3, 7, 5, 4, 0, 2, 6, kPtr, 12); })
                .find("kc = 5, expected 1 <= kc <= c = 4"), std::string::npos);
  EXPECT_NE(MessageOf([] { CheckEncode(DType::kFloat32, kPtr, 10, 3, 7, -1, 4, 0, 2, 6, kPtr, 12); })
                .find("kc = -1"), std::string::npos);
  EXPECT_NE(MessageOf([] { CheckEncode(DType::kFloat32, kPtr, 10, 4, 7, 4, 4, 0, 2, 6, kPtr, 12); })
                .find("columns [4, 4 + 7) exceed the component length m = 10"), std::string::npos);
  EXPECT_NE(MessageOf([] { CheckEncode(DType::kFloat32, kPtr, 10, 3, 7, 4, 4, 0, 2, 6, kPtr, 9); })
                .find("row stride ld = 9 is less than col0 + cols = 10"), std::string::npos);
  EXPECT_NE(MessageOf([] { CheckEncode(DType::kFloat32, nullptr, 10, 3, 7, 4, 4, 0, 2, 6, kPtr, 12); })
                .find("g is null"), std::string::npos);
  EXPECT_NE(MessageOf([] { CheckEncode(DType::kFloat32, kPtr, 10, 3, 7, 4, 4, 0, 2, 6, nullptr, 12); })
                .find("enc is null"), std::string::npos);
  EXPECT_NE(MessageOf([] { CheckEncode(static_cast<DType>(9), kPtr, 10, 3, 7, 4, 4, 0, 2, 6, kPtr, 12); })
                .find("dtype 9 is not one of f32, f64, bf16, f16"), std::string::npos);
  // col0 + cols overflowing size_t must not wrap into range.
  EXPECT_THROW(CheckEncode(DType::kFloat32, kPtr, 10, 3, std::numeric_limits<std::size_t>::max(), 4, 4, 0, 2, 6, kPtr, 12), InvalidArgument);
}

TEST(CudaArguments, DecodeRules) {
  EXPECT_NO_THROW(CheckDecode(DType::kFloat16, kPtr, 12, kPtr, 10, 0, 10, 3, 3, 0.25));
  EXPECT_NE(MessageOf([] { CheckDecode(DType::kFloat32, kPtr, 12, kPtr, 10, 0, 10, 3, 3, std::numeric_limits<double>::infinity()); })
                .find("scale = inf is not finite"), std::string::npos);
  EXPECT_NE(MessageOf([] { CheckDecode(DType::kFloat32, nullptr, 12, kPtr, 10, 0, 10, 3, 3, 1.0); })
                .find("obs is null"), std::string::npos);
  EXPECT_NE(MessageOf([] { CheckDecode(DType::kFloat32, kPtr, 12, nullptr, 10, 0, 10, 3, 3, 1.0); })
                .find("g is null"), std::string::npos);
  EXPECT_NE(MessageOf([] { CheckDecode(DType::kFloat32, kPtr, 8, kPtr, 10, 0, 10, 3, 3, 1.0); })
                .find("row stride ld = 8"), std::string::npos);
}

TEST(CudaArguments, StepRejectsUnknownDType) {
  EXPECT_NO_THROW(CheckStep(DType::kBFloat16));
  EXPECT_THROW(CheckStep(static_cast<DType>(-1)), InvalidArgument);
}

}  // namespace
}  // namespace cerar::cuda
