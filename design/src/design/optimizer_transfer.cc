// Rescaled continuation: why the departure from the eps construction is re-scaled by moments.
//
// The eps construction with r* + 1 nodes per root of unity is X_eps(eps) = B(eps) A(eps), where
// A mixes the columns of one cluster with entries (eps lambda_q)^k: the error is O(eps) and the
// condition numbers O(eps^-r*). A design optimised at a small budget departs from X_eps by Delta;
// its moments of degree k in lambda enter the figures at different orders of eps, so a uniform
// scaling of Delta loses the gain (scripts/optimizer-rescaling measures every pattern; for
// N = 4, c = 8 it is e = (2, 1) by far). Rather than hard-code one pattern, a few are tried and
// the evaluator picks.
#include "design/optimizer_transfer.h"

#include <Eigen/QR>
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

namespace cerar::design::opt {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// x = gauge (X_eps(eps_from) + Delta), Delta split into its moments (see the header).
struct Departure {
  int N = 0, c = 0, rows = 0, r_star = 0;
  bool per_rank = false;
  double eps_from = 0;
  std::vector<RowMat> moments;  // moments[k]: the degree-k part of Delta (rows x c)

  // X_eps(s eps_from) + sum_k s^{e_k} Delta_k.
  Eigen::VectorXd Candidate(const std::vector<int>& e, double s) const {
    RowMat y = Eigen::Map<const RowMat>(EpsPoint(N, c, eps_from * s, per_rank).data(), rows, c);
    for (int k = 0; k <= r_star; ++k) y += std::pow(s, e[k]) * moments[k];
    return Eigen::VectorXd(Eigen::Map<const Eigen::VectorXd>(y.data(), y.size()));
  }
  // e_k = max(0, A - k) for A = 1 .. r* + 2, and e_k = 1.
  std::vector<std::vector<int>> Patterns() const {
    std::vector<std::vector<int>> patterns;
    for (int A = 1; A <= r_star + 2; ++A) {
      std::vector<int> e(r_star + 1);
      for (int k = 0; k <= r_star; ++k) e[k] = std::max(0, A - k);
      patterns.push_back(e);
    }
    patterns.push_back(std::vector<int>(r_star + 1, 1));
    return patterns;
  }
};

std::string Describe(const std::vector<int>& e) {
  std::ostringstream how;
  how << "rescaled, exponents (";
  for (std::size_t k = 0; k < e.size(); ++k) how << (k ? ", " : "") << e[k];
  how << ")";
  return how.str();
}

// False when x has no usable gauge against the eps point (then only x itself is a candidate).
bool Decompose(const Evaluator& ev, bool per_rank, const Eigen::VectorXd& x, double eps_from,
               Departure& d) {
  d.N = ev.N();
  d.c = ev.c();
  d.rows = ev.rows();
  d.r_star = (d.c + d.N - 1) / d.N - 1;
  d.per_rank = per_rank;
  d.eps_from = eps_from;
  const int N = d.N, c = d.c, rows = d.rows, r_star = d.r_star;
  const Eigen::VectorXd xe = EpsPoint(N, c, eps_from, per_rank);
  const double gauge = x.dot(xe) / xe.squaredNorm();
  if (!(std::abs(gauge) > 0) || !std::isfinite(gauge)) return false;
  const RowMat delta = Eigen::Map<const RowMat>(x.data(), rows, c) / gauge -
                       Eigen::Map<const RowMat>(xe.data(), rows, c);
  d.moments.assign(r_star + 1, RowMat::Zero(rows, c));  // zero where a cluster is shorter
  for (int p = 0; p < N && p < c; ++p) {
    std::vector<int> cols;
    for (int k = p; k < c; k += N) cols.push_back(k);
    const int m = int(cols.size());
    Eigen::MatrixXd V(m, m);  // V(q, k) = lambda_q^k; its Q: orthonormal polynomials on lambda
    for (int q = 0; q < m; ++q)
      for (int k = 0; k < m; ++k) V(q, k) = std::pow(q - r_star / 2.0, k);
    const Eigen::MatrixXd P = Eigen::HouseholderQR<Eigen::MatrixXd>(V).householderQ();
    Eigen::MatrixXd D(rows, m);
    for (int q = 0; q < m; ++q) D.col(q) = delta.col(cols[q]);
    for (int k = 0; k < m; ++k) {
      const Eigen::MatrixXd part = (D * P.col(k)) * P.col(k).transpose();
      for (int q = 0; q < m; ++q) d.moments[k].col(cols[q]) = part.col(q);
    }
  }
  return true;
}

// One probe: its error (log, max over ranks) and how far its kappa is over log_bound (<= 0:
// within); both infinite when singular.
struct Probe {
  double log_err = kInf, log_kappa = kInf;
};
Probe Measure(const Evaluator& ev, const Eigen::VectorXd& y, Evaluator::ErrorNorm norm,
              int* evaluations) {
  const Evaluator::Result r = ev.Evaluate(y.data(), norm, false);
  ++*evaluations;
  if (r.singular) return {};
  return {MaxOf(r.log_err), std::max(MaxOf(r.log_kappa_dec), MaxOf(r.log_kappa_enc))};
}

// The previous best, when it meets the bound: the fallback (plain continuation).
Transfer PreviousBest(const Evaluator& ev, const Eigen::VectorXd& x, double log_bound,
                      Evaluator::ErrorNorm norm) {
  Transfer best;
  best.x = x;
  best.how = "previous best";
  const Probe p = Measure(ev, x, norm, &best.evaluations);
  best.log_err = p.log_kappa <= log_bound ? p.log_err : kInf;
  return best;
}

}  // namespace

Transfer RescaleToBudget(const Evaluator& ev, bool per_rank, const Eigen::VectorXd& x,
                         double eps_from, double eps_to, double kappa_bound,
                         Evaluator::ErrorNorm norm) {
  const double log_bound = std::log(kappa_bound);
  Transfer best = PreviousBest(ev, x, log_bound, norm);
  Departure d;
  if (!Decompose(ev, per_rank, x, eps_from, d)) return best;
  auto probe = [&](const Eigen::VectorXd& y, double* log_err) {
    const Probe p = Measure(ev, y, norm, &best.evaluations);
    *log_err = p.log_err;
    return p.log_kappa - log_bound;
  };

  const double s0 = eps_to / eps_from;
  for (const auto& e : d.Patterns()) {
    auto candidate = [&](double s) { return d.Candidate(e, s); };
    // Bracket the budget boundary in log s (kappa falls as s grows), then bisect.
    double lo = std::log(s0), hi = lo, err_hi = kInf;
    double e_probe = kInf;
    if (probe(candidate(s0), &e_probe) <= 0) {
      err_hi = e_probe;
      for (int it = 0; it < 8; ++it) {
        lo -= std::log(2.0);
        double e_lo = kInf;
        if (probe(candidate(std::exp(lo)), &e_lo) > 0) break;
        hi = lo;
        err_hi = e_lo;
      }
    } else {
      bool found = false;
      for (int it = 0; it < 8 && !found; ++it) {
        lo = hi;
        hi += std::log(2.0);
        found = probe(candidate(std::exp(hi)), &err_hi) <= 0;
      }
      if (!found) continue;
    }
    for (int it = 0; it < 14; ++it) {
      const double mid = 0.5 * (lo + hi);
      double e_mid = kInf;
      if (probe(candidate(std::exp(mid)), &e_mid) <= 0) {
        hi = mid;
        err_hi = e_mid;
      } else {
        lo = mid;
      }
    }
    if (err_hi < best.log_err) {
      best.x = candidate(std::exp(hi));
      best.log_err = err_hi;
      best.scale = std::exp(hi);
      best.how = Describe(e);
    }
  }
  return best;
}

Transfer RescaleForError(const Evaluator& ev, bool per_rank, const Eigen::VectorXd& x,
                         double eps_from, double kappa_cap, Evaluator::ErrorNorm norm) {
  const double log_cap = std::log(kappa_cap);
  Transfer best = PreviousBest(ev, x, log_cap, norm);
  Departure d;
  if (!Decompose(ev, per_rank, x, eps_from, d)) return best;
  constexpr int kStepsPerOctave = 4, kMaxSteps = 40, kBisections = 10;
  const double step = std::log(2.0) / kStepsPerOctave;
  for (const auto& e : d.Patterns()) {
    // Probes candidate(exp(log_s)); true when it is within the cap. Keeps the run's best.
    double pattern_best = kInf, pattern_best_log_s = 0;
    auto probe = [&](double log_s) {
      const Eigen::VectorXd y = d.Candidate(e, std::exp(log_s));
      const Probe p = Measure(ev, y, norm, &best.evaluations);
      if (!(p.log_kappa <= log_cap)) return false;
      if (p.log_err < pattern_best) {
        pattern_best = p.log_err;
        pattern_best_log_s = log_s;
      }
      if (p.log_err < best.log_err) {
        best.x = y;
        best.log_err = p.log_err;
        best.scale = std::exp(log_s);
        std::ostringstream how;
        how << Describe(e) << " to kappa " << std::exp(p.log_kappa);
        best.how = how.str();
      }
      return true;
    };
    // The error falls with s until rounding takes over; three rises in a row end the scan.
    int rising = 0;
    double last_within = 0, over = 0;
    bool capped = false;
    for (int j = 1; j <= kMaxSteps && rising < 3; ++j) {
      const double before = pattern_best, log_s = -j * step;
      if (!probe(log_s)) {  // kappa grows as s falls: the rest is over the cap
        capped = true;
        over = log_s;
        break;
      }
      last_within = log_s;
      rising = pattern_best < before ? 0 : rising + 1;
    }
    if (!std::isfinite(pattern_best)) continue;
    if (capped && pattern_best_log_s == last_within) {
      // Still falling at the cap: bisect onto it, as a budget fit would.
      double lo = over, hi = last_within;
      for (int it = 0; it < kBisections; ++it) {
        const double mid = 0.5 * (lo + hi);
        (probe(mid) ? hi : lo) = mid;
      }
    } else {
      // An interior minimum: the half steps either side.
      probe(pattern_best_log_s - step / 2);
      probe(pattern_best_log_s + step / 2);
    }
  }
  return best;
}

}  // namespace cerar::design::opt
