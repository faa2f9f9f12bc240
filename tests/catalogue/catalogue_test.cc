// Every design file in matrices/ loads (format, shapes, finiteness, integrity), every figure it
// records (per rank, predicted errors, exact figures) agrees with its re-derivation in the
// precision it was recorded in (`cerar validate` certifies them with the full precision ladder;
// here one rung keeps the suite quick), it meets the catalogue's rule (predicted float32 error
// <= 1e-2), and matrices/README.md lists it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cerar/design/toolkit.h"
#include "cerar/format/design_file.h"

namespace cerar {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> CatalogueFiles() {
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(CERAR_MATRICES_DIR))
    if (entry.path().extension() == ".json") files.push_back(entry.path().filename().string());
  std::sort(files.begin(), files.end());
  return files;
}

std::string ReadIndex() {
  std::ifstream in(fs::path(CERAR_MATRICES_DIR) / "README.md");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Catalogue, IsNotEmpty) { EXPECT_GE(CatalogueFiles().size(), 10u); }

class CatalogueFile : public ::testing::TestWithParam<std::string> {};

TEST_P(CatalogueFile, LoadsAndItsFiguresAgreeWithReDerivedOnes) {
  const std::string path = (fs::path(CERAR_MATRICES_DIR) / GetParam()).string();
  const Design d = LoadDesign(path);
  ASSERT_TRUE(d.figures().has_value()) << path;
  const Figures& recorded = *d.figures();
  const design::Validation v =
      design::Validate(d, design::ParsePrecision(recorded.precision), /*max_digits=*/50);
  EXPECT_GE(v.checks.size(), 11u) << path;  // 4 headline, 4 per rank, 3 predicted errors
  for (const auto& f : v.checks)
    EXPECT_TRUE(f.agree) << path << ": " << f.name << " recorded " << f.recorded
                         << ", re-derived " << f.derived << " (" << f.digits << " digits, "
                         << f.required << " needed)";
  ASSERT_TRUE(recorded.predicted_error.count("float32")) << path;
  EXPECT_LE(recorded.predicted_error.at("float32"), 1e-2) << path;
  // eps designs (scripts/make-catalogue) and optimised ones (scripts/make-catalogue-optimized).
  EXPECT_TRUE(d.provenance().construction == "eps" || d.provenance().construction == "optimized")
      << path << ": construction " << d.provenance().construction;
}

TEST_P(CatalogueFile, IsListedInTheIndex) {
  EXPECT_NE(ReadIndex().find("(" + GetParam() + ")"), std::string::npos)
      << GetParam() << " is not listed in matrices/README.md";
}

INSTANTIATE_TEST_SUITE_P(Matrices, CatalogueFile, ::testing::ValuesIn(CatalogueFiles()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string name = param_info.param.substr(0, param_info.param.size() - 5);
                           std::replace_if(name.begin(), name.end(),
                                           [](char ch) { return !std::isalnum(ch); }, '_');
                           return name;
                         });

}  // namespace
}  // namespace cerar
