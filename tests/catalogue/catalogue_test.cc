// Every design file in matrices/ loads (format, shapes, finiteness, integrity), every figure it
// records (per rank, predicted errors, exact figures) agrees with its re-derivation in the
// precision it was recorded in (`cerar validate` certifies them with the full precision ladder;
// here one rung keeps the suite quick), it meets the catalogue's rule (predicted float32 error
// <= 1e-2), and matrices/README.md lists it.
// Every optimised file was optimised for float32, passed its simulation check, and beats the eps
// design of its (N, c) in measured float32 error (scripts/make-catalogue-optimized's rule); every
// opt-state64 file the same in float32 packets with float64 state (`--tune float32+state64`).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cerar/design/toolkit.h"
#include "cerar/format/design_file.h"
#include "cerar/runtime/simulate.h"

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

// scripts/make-catalogue-optimized --tune float32+state64 writes opt-state64_N<N>_c<c>.json.
bool IsState64File(const std::string& name) { return name.rfind("opt-state64_", 0) == 0; }

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
  // The catalogue's rule, in the arithmetic the file is for.
  const std::string arithmetic = IsState64File(GetParam()) ? "float32+state64" : "float32";
  ASSERT_TRUE(recorded.predicted_error.count(arithmetic)) << path;
  EXPECT_LE(recorded.predicted_error.at(arithmetic), 1e-2) << path;
  // eps designs (scripts/make-catalogue) and optimised ones (scripts/make-catalogue-optimized).
  EXPECT_TRUE(d.provenance().construction == "eps" || d.provenance().construction == "optimized")
      << path << ": construction " << d.provenance().construction;
}

TEST_P(CatalogueFile, IsListedInTheIndex) {
  EXPECT_NE(ReadIndex().find("(" + GetParam() + ")"), std::string::npos)
      << GetParam() << " is not listed in matrices/README.md";
}

// "opt_N8_c16.json" -> "opt_N8_c16".
std::string FileTestName(const ::testing::TestParamInfo<std::string>& param_info) {
  std::string name = param_info.param.substr(0, param_info.param.size() - 5);
  std::replace_if(name.begin(), name.end(), [](char ch) { return !std::isalnum(ch); }, '_');
  return name;
}

std::vector<std::string> OptimisedFiles() {
  std::vector<std::string> out;
  for (const std::string& f : CatalogueFiles())
    if (f.rfind("opt_", 0) == 0) out.push_back(f);
  return out;
}

class OptimisedFile : public ::testing::TestWithParam<std::string> {};

// An optimised file and the eps design of its (N, c), after the checks every optimised file
// shares: optimised for `target` by the predicted-error objective, improved on its start, and its
// simulation check (measured within 20 % of the prediction) run and passed.
struct OptimisedAndEps {
  Design opt, eps;
  std::string eps_name;
};
OptimisedAndEps LoadOptimised(const std::string& name, const std::string& target) {
  const fs::path dir(CERAR_MATRICES_DIR);
  Design opt = LoadDesign((dir / name).string());
  const auto& p = opt.provenance().parameters;
  EXPECT_EQ(opt.provenance().construction, "optimized") << name;
  EXPECT_EQ(p.at("objective").get<std::string>(), "predicted") << name;
  EXPECT_EQ(p.at("target").get<std::string>(), target) << name;
  EXPECT_TRUE(p.at("improved").get<bool>()) << name;
  const auto& check = p.at("simulation_check");
  EXPECT_TRUE(check.at("run").get<bool>()) << name;
  EXPECT_NEAR(check.at("ratio").get<double>(), 1.0, 0.2) << name;
  std::string eps_name =
      "eps_N" + std::to_string(opt.N()) + "_c" + std::to_string(opt.c()) + ".json";
  Design eps = LoadDesign((dir / eps_name).string());
  return {std::move(opt), std::move(eps), std::move(eps_name)};
}

// Both designs on the same random inputs (2^16 elements per rank; the script measured 2^20).
SimulateOptions CatalogueRun(Accumulation accumulation) {
  SimulateOptions so;
  so.count = std::size_t{1} << 16;
  so.seed = 2;
  so.run_ring = false;
  so.accumulation = accumulation;
  return so;
}

TEST_P(OptimisedFile, OptimisedForFloat32AndBeatsItsEpsDesignThere) {
  const auto [opt, eps, eps_name] = LoadOptimised(GetParam(), "float32");
  SimulateOptions so = CatalogueRun(Accumulation::kBuffer);
  const double measured = Simulate(opt, so).measured_err_rms;
  const double eps_measured = Simulate(eps, so).measured_err_rms;
  EXPECT_LT(measured, eps_measured) << GetParam() << " against " << eps_name;
  // ... and the model agrees with the run, for both. In plain float32 the back end's GEMM sums
  // in blocks, not left to right as the model assumes, so it rounds a little less: measured /
  // predicted 0.93-1.01 on the catalogue (docs/error-model.md). Sampling noise at 2^16: < 1 %.
  for (const auto& [d, m] : {std::pair{&opt, measured}, std::pair{&eps, eps_measured}})
    EXPECT_NEAR(m / d->figures()->predicted_error.at("float32"), 1.0, 0.1) << GetParam();
  // The same design with float64 accumulation (docs/runtime.md): a smaller error, and one
  // rounding per stored result leaves no summation order to the back end, so the model with the
  // ring's rows N apart correlated holds to 1 % (0.995-1.009); the independent-rows model was
  // 5-12 % high on the c = 3N designs.
  so.accumulation = Accumulation::kFloat64;
  for (const Design* d : {&opt, &eps}) {
    const double wide = Simulate(*d, so).measured_err_rms;
    EXPECT_LT(wide, d == &opt ? measured : eps_measured) << d->N() << ", " << d->c();
    EXPECT_NEAR(wide / d->figures()->predicted_error.at("float32+acc64"), 1.0, 0.03)
        << GetParam() << (d == &opt ? "" : " (its eps design)");
  }
  // And with the packets' rounding fed back once per lap (docs/error-model.md, "Rounding
  // feedback"; on where c > 2N): the model with each hop weighted by its laps holds to 3 % too.
  // The files predate the figure, so the model is evaluated on their matrices. (These designs
  // are tuned for float32, where approximation dominates an acc64 run: feedback moves their
  // error by -1 % to +1.5 %; constructions_test.cc shows its gain on an acc64-tuned design.)
  so.accumulation = Accumulation::kFloat64Feedback;
  for (const Design* d : {&opt, &eps}) {
    const double fed = Simulate(*d, so).measured_err_rms;
    const double model = design::PredictedError(*d, design::Arithmetic::kFloat32Acc64Feedback);
    EXPECT_NEAR(fed / model, 1.0, 0.03) << GetParam() << (d == &opt ? "" : " (its eps design)");
  }
  // And with float64 state (docs/error-model.md, "Float64 state"): no encode or observation
  // rounding; the model holds to 3 % as well.
  so.accumulation = Accumulation::kFloat64State;
  for (const Design* d : {&opt, &eps}) {
    const double state = Simulate(*d, so).measured_err_rms;
    const double model = design::PredictedError(*d, design::Arithmetic::kFloat32State64);
    EXPECT_NEAR(state / model, 1.0, 0.03) << GetParam() << (d == &opt ? "" : " (its eps design)");
  }
}

INSTANTIATE_TEST_SUITE_P(Matrices, OptimisedFile, ::testing::ValuesIn(OptimisedFiles()),
                         FileTestName);

std::vector<std::string> State64Files() {
  std::vector<std::string> out;
  for (const std::string& f : CatalogueFiles())
    if (IsState64File(f)) out.push_back(f);
  return out;
}

class State64File : public ::testing::TestWithParam<std::string> {};

TEST_P(State64File, OptimisedForFloat64StateAndBeatsItsEpsDesignThere) {
  const auto [opt, eps, eps_name] = LoadOptimised(GetParam(), "float32+state64");
  const SimulateOptions so = CatalogueRun(Accumulation::kFloat64State);
  const double measured = Simulate(opt, so).measured_err_rms;
  const double eps_measured = Simulate(eps, so).measured_err_rms;
  EXPECT_LT(measured, eps_measured) << GetParam() << " against " << eps_name;
  // One rounding per packet (fed back where c > 2N) and per result: the model holds to 3 %, as
  // for the float32 files run this way (above).
  EXPECT_NEAR(measured / opt.figures()->predicted_error.at("float32+state64"), 1.0, 0.03)
      << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Matrices, State64File, ::testing::ValuesIn(State64Files()),
                         FileTestName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(State64File);  // the test below says why instead
// The DDP hook's c picks these files (matrices/OPTIMIZED-STATE64.md): a catalogue that lost them
// would pass every test above.
TEST(Catalogue, HasState64Files) { EXPECT_GE(State64Files().size(), 8u); }

INSTANTIATE_TEST_SUITE_P(Matrices, CatalogueFile, ::testing::ValuesIn(CatalogueFiles()),
                         FileTestName);

}  // namespace
}  // namespace cerar
