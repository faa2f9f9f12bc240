#pragma once
// The Design value type: N, c, one encoder E_i (L x c) and one decoder D_i (c x c) per rank,
// how it was made, and the figures that describe it (PROTOCOL.md §4-§5).
//
// A Design is immutable and always valid: the only way to obtain one is Design::Create (or
// loading a file), which checks every rule of the contract and throws DesignError otherwise.
// Copies are cheap (shared immutable state).
//
// This header is what every user of the runtime sees, so it depends on Eigen only. Provenance
// (whose free-form parameters are JSON) and DesignParts, which are needed to build a design or
// to read its provenance, live in cerar/format/design_parts.h (which includes nlohmann/json).
#include <Eigen/Core>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cerar {

using MatrixXd = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Sanity bounds, checked before anything is allocated (a file claiming N = 10^9 is rejected with
// a message instead of exhausting memory). kMaxMatrixEntries bounds all E_i and D_i together.
inline constexpr int kMaxN = 1 << 16;
inline constexpr int kMaxC = 1 << 16;
inline constexpr std::int64_t kMaxMatrixEntries = std::int64_t{1} << 27;  // 1 GiB of float64

// Whether a design of N ranks and c components is within these limits: N >= 2, c >= 1, both
// bounded, N (L c + c c) <= kMaxMatrixEntries. Check it before allocating anything of that size.
bool WithinDesignLimits(std::int64_t N, std::int64_t c);

// Free-form content (provenance.parameters, provenance.construction, notes, the names in
// predicted_error) is bounded too, so that no design, in memory or in a file, makes a reader
// recurse deeply or allocate without limit (docs/design-format.md, "Limits"):
// provenance.parameters nests at most kMaxParameterDepth arrays/objects deep (itself included);
// all free-form members together hold at most kMaxFreeFormValues values (every scalar, array,
// object and member name counts one) and kMaxFreeFormBytes bytes of strings and member names.
inline constexpr int kMaxParameterDepth = 16;
inline constexpr std::int64_t kMaxFreeFormValues = std::int64_t{1} << 18;
inline constexpr std::int64_t kMaxFreeFormBytes = std::int64_t{1} << 22;  // 4 MiB

// Figures of PROTOCOL.md §5. All "max over ranks" values come with their per-rank breakdown.
struct Figures {
  double err_op = 0;     // max_j ||[Delta_ij]_{i!=j}||_2
  double err_rms = 0;    // max_j ||[Delta_ij]_{i!=j}||_F / sqrt(N c)
  double kappa_dec = 0;  // max_j kappa_2(D_j)
  double kappa_enc = 0;  // max_i kappa_2(E_i)
  std::vector<double> err_op_per_rank, err_rms_per_rank;
  std::vector<double> kappa_dec_per_rank, kappa_enc_per_rank;
  // Arithmetic the figures were computed in: "float64" or "mp<digits>" ("mp50": 50 significant
  // digits).
  std::string precision = "float64";
  // Digits certified by the precision ladder (docs/error-model.md): figure name ("err_op",
  // "err_rms", "kappa_dec", "kappa_enc") -> significant digits in which two analyses at
  // different precisions agree, over the headline and every per-rank value, at most 15 (what a
  // float64 figure carries). Empty: not certified (float64 analysis, or an older file).
  std::map<std::string, int> certified_digits;
  // Predicted relative error of a run in a given arithmetic ("float32", "float64"):
  // approximation error plus rounding amplified by conditioning (docs/error-model.md).
  // Empty when not computed.
  std::map<std::string, double> predicted_error;
};

struct Provenance;   // cerar/format/design_parts.h
struct DesignParts;  // cerar/format/design_parts.h

class Design {
 public:
  // Validates every rule (N >= 2, c >= 1, N encoders of L = c + N - 2 rows and c columns, N
  // decoders c x c, all values finite, figures consistent in size) and returns an immutable
  // Design. `source` names the origin in messages ("design file foo.json", "eps construction").
  static Design Create(DesignParts parts, const std::string& source = "design");  // design_parts.h

  int N() const;
  int c() const;
  int L() const { return c() + N() - 2; }
  const MatrixXd& encoder(int rank) const;  // E_i, L x c
  const MatrixXd& decoder(int rank) const;  // D_i, c x c
  const std::vector<MatrixXd>& encoders() const;
  const std::vector<MatrixXd>& decoders() const;
  const Provenance& provenance() const;  // members: include cerar/format/design_parts.h
  const std::optional<Figures>& figures() const;
  const std::optional<Figures>& exact_figures() const;
  const std::vector<std::string>& notes() const;
  const DesignParts& parts() const;  // members: include cerar/format/design_parts.h

  // Rates of PROTOCOL.md §5 (pure functions of N and c).
  double traffic_rate() const { return double(L()) / c(); }        // L / c
  double workspace_rate() const { return 1.0 + double(N()) / c(); }  // 1 + N / c
  double ring_traffic_rate() const { return 2.0 * (N() - 1) / N(); }  // 2 (N - 1) / N

  // Window W_ij (c x c) of PROTOCOL.md §4: rows E_i[N-2+r-s_ij, :], s_ij = (j-1-i) mod N.
  MatrixXd window(int i, int j) const;

  // A 64-bit fingerprint of N, c and the matrices; ranks compare it to agree on a design.
  std::uint64_t fingerprint() const;

 private:
  explicit Design(std::shared_ptr<const DesignParts> parts) : parts_(std::move(parts)) {}
  std::shared_ptr<const DesignParts> parts_;
};

// Hop offset s_ij = (j - 1 - i) mod N in [0, N-2] for i != j (PROTOCOL.md §4).
int HopOffset(int i, int j, int N);

// Whether a run with rounding feedback (the runtime's Accumulation::kFloat64Feedback, the
// toolkit's float32+acc64+feedback) feeds the rounding of an (N, c) design's packets back:
// c > 2N. Without feedback a packet's rounding error stays on its diagonal, constant over the
// laps, which the decoder passes with gain ~1 when there are two laps (c <= 2N); feedback makes
// it grow linearly, which the decoder passes only with three laps or more (docs/error-model.md,
// "Rounding feedback"). Elsewhere such a run is the plain float64-accumulation one. One rule for
// the engine and the error model, so it lives here, in the format both link.
inline bool FeedsBackRounding(int N, int c) { return c > 2 * N; }

}  // namespace cerar
