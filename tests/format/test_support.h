#pragma once
// Helpers for the format tests: random designs (no dependency on cerar_design), temp folders.
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "../common/random_design.h"
#include "cerar/format/design.h"

namespace cerar::testing_support {

// Random encoders/decoders in [-1, 1], figures with per-rank breakdown and provenance.
inline DesignParts RandomParts(int N, int c, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  DesignParts p = test_common::RandomMatrices(N, c, rng);
  p.provenance.parameters = {{"seed", seed}, {"distribution", "uniform(-1,1)"}, {"scale", 0.5}};
  Figures f;
  f.err_op = 0.25 + u(rng) * 0.1;
  f.err_rms = 0.125;
  f.kappa_dec = 12.5;
  f.kappa_enc = 3.0;
  for (int i = 0; i < N; ++i) {
    f.err_op_per_rank.push_back(std::abs(u(rng)));
    f.err_rms_per_rank.push_back(std::abs(u(rng)));
    f.kappa_dec_per_rank.push_back(1 + std::abs(u(rng)));
    f.kappa_enc_per_rank.push_back(1 + std::abs(u(rng)));
  }
  f.predicted_error = {{"float32", 1e-3}, {"float64", 2e-9}};
  p.figures = f;
  return p;
}

inline Design RandomDesign(int N, int c, std::uint64_t seed) {
  return Design::Create(RandomParts(N, c, seed), "random design");
}

// A fresh empty folder, removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "cerar_format_XXXXXX").string();
    path_ = ::mkdtemp(pattern.data()) ? pattern : "";
    if (path_.empty()) throw std::runtime_error("mkdtemp failed");
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  std::vector<std::string> Entries() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(path_)) {
      names.push_back(e.path().filename().string());
    }
    return names;
  }

 private:
  std::string path_;
};

}  // namespace cerar::testing_support
