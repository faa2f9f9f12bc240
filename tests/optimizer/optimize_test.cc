// Optimize and ParetoFront: results meet the kappa budget in high precision, are never worse
// than their eps start point, are reproducible for a seed; bad options are rejected with the
// message of Validate(); a budget no design meets is a value.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>

#include "cerar/design/optimizer.h"
#include "cerar/design/toolkit.h"
#include "cerar/errors.h"
#include "design/optimizer_search.h"

namespace cerar::design {
namespace {

OptimizeOptions Small(int N, int c, double kappa, int evaluations) {
  OptimizeOptions o;
  o.N = N;
  o.c = c;
  o.kappa_max = kappa;
  o.max_evaluations = evaluations;
  o.time_limit_s = 300;  // the evaluation budget is the stop, so runs are reproducible
  return o;
}

// The objective's figure of the eps start point, recomputed independently of Optimize.
double StartObjective(const Design& d, Objective objective) {
  ConstructionOptions co;
  co.N = d.N();
  co.c = d.c();
  co.eps = d.provenance().parameters.at("start").at("eps").get<double>();
  co.precision = Precision::kMp50;
  const Figures f = Analyse(MakeConstruction(co), Precision::kMp50);
  return objective == Objective::kRms ? f.err_rms : f.err_op;
}

using Case = std::tuple<int, int, Objective, bool>;  // N, c, objective, per-rank encoders
class OptimizeP : public ::testing::TestWithParam<Case> {};

TEST_P(OptimizeP, MeetsBudgetInHighPrecisionAndNeverWorseThanStart) {
  const auto [N, c, objective, per_rank] = GetParam();
  OptimizeOptions o = Small(N, c, 1e3, objective == Objective::kOp ? 3000 : 400);
  o.objective = objective;
  o.variables = per_rank ? Variables::kPerRank : Variables::kShiftInvariant;
  const Design d = Optimize(o);
  ASSERT_EQ(d.N(), N);
  ASSERT_EQ(d.c(), c);
  EXPECT_EQ(d.provenance().construction, "optimized");
  const Figures hp = Analyse(d, Precision::kMp50);
  EXPECT_LE(hp.kappa_dec, o.kappa_max);
  EXPECT_LE(hp.kappa_enc, o.kappa_max);
  const double got = objective == Objective::kRms ? hp.err_rms : hp.err_op;
  const double start = StartObjective(d, objective);
  EXPECT_LE(got, start * (1 + 1e-12));
  const bool improved = d.provenance().parameters.at("improved").get<bool>();
  if (improved) {
    EXPECT_LT(got, start);
  } else {
    EXPECT_FALSE(d.notes().empty());  // "did not beat the eps start point"
    EXPECT_NEAR(got / std::max(start, 1e-300), 1.0, 1e-9 + (start < 1e-13 ? 1e300 : 0));
  }
  if (c > N && N > 2 && objective == Objective::kRms) {
    // Not exact: this budget of the search does beat the eps start. (The op objective is
    // searched through a smooth bound and is not always improved: docs/optimizer.md §6.)
    EXPECT_TRUE(improved);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Sizes, OptimizeP,
    ::testing::Values(Case{2, 1, Objective::kRms, false}, Case{2, 3, Objective::kRms, false},
                      Case{4, 3, Objective::kRms, false}, Case{4, 8, Objective::kRms, false},
                      Case{3, 4, Objective::kRms, false}, Case{5, 8, Objective::kOp, false},
                      Case{4, 6, Objective::kOp, false}, Case{3, 4, Objective::kRms, true}),
    [](const ::testing::TestParamInfo<Case>& tp) {
      return std::string("N") + std::to_string(std::get<0>(tp.param)) + "_c" +
             std::to_string(std::get<1>(tp.param)) + "_" + ToString(std::get<2>(tp.param)) +
             (std::get<3>(tp.param) ? "_perrank" : "");
    });

TEST(Optimize, DeterministicForASeed) {
  // c = 8 = 2N: at c = 6 the eps start (cos/sin pairs kept, PROTOCOL.md §6) is not beaten in
  // 300 evaluations, so both seeds would return it.
  OptimizeOptions o = Small(4, 8, 1e2, 300);
  o.seed = 17;
  const Design a = Optimize(o), b = Optimize(o);
  ASSERT_EQ(a.encoders().size(), b.encoders().size());
  for (std::size_t i = 0; i < a.encoders().size(); ++i)
    EXPECT_TRUE(a.encoders()[i] == b.encoders()[i]) << "encoder " << i;
  EXPECT_EQ(a.fingerprint(), b.fingerprint());
  o.seed = 18;  // another seed starts elsewhere
  const Design other = Optimize(o);
  EXPECT_NE(a.fingerprint(), other.fingerprint());
}

// The search settings reach NLopt: another L-BFGS memory or slack takes another path.
TEST(Optimize, SearchSettingsChangeThePath) {
  const OptimizeOptions o = Small(4, 8, 1e3, 300);
  const auto base = Optimize(o).fingerprint();
  OptimizeOptions memory = o;
  memory.lbfgs_memory = 3;
  EXPECT_NE(Optimize(memory).fingerprint(), base);
  OptimizeOptions slack = o;
  slack.search_slack = 0.2;
  EXPECT_NE(Optimize(slack).fingerprint(), base);
}

// Auto L-BFGS memory: 100 pairs, fewer once m n would pass 6e5 (never under 10); explicit
// settings pass through.
TEST(Optimize, LbfgsMemoryAutoShrinksWithTheProblem) {
  using opt::EffectiveLbfgsMemory;
  const int automatic = OptimizeOptions::kLbfgsMemoryAuto;
  EXPECT_EQ(EffectiveLbfgsMemory(automatic, 321), 100);      // N = 4, c = 8 per rank
  EXPECT_EQ(EffectiveLbfgsMemory(automatic, 5761), 100);     // N = 8, c = 24 per rank
  EXPECT_EQ(EffectiveLbfgsMemory(automatic, 23553), 25);     // N = 16, c = 32 per rank
  EXPECT_EQ(EffectiveLbfgsMemory(automatic, 10000000), 10);  // floor
  EXPECT_EQ(EffectiveLbfgsMemory(0, 23553), 0);
  EXPECT_EQ(EffectiveLbfgsMemory(7, 23553), 7);
}

TEST(Optimize, ProvenanceRecordsSettingsStartAndBothFigures) {
  OptimizeOptions o = Small(4, 8, 1e2, 200);
  o.variables = Variables::kShiftInvariant;
  o.seed = 5;
  const Design d = Optimize(o);
  const auto& p = d.provenance().parameters;
  EXPECT_EQ(p.at("kappa_max").get<double>(), 1e2);
  EXPECT_EQ(p.at("objective").get<std::string>(), "rms");
  EXPECT_EQ(p.at("variables").get<std::string>(), "shift_invariant_base_sequence");
  EXPECT_EQ(p.at("variables_requested").get<std::string>(), "shift-invariant");
  EXPECT_EQ(p.at("optimizer").at("seed").get<int>(), 5);
  EXPECT_EQ(p.at("optimizer").at("time_limit_s").get<double>(), o.time_limit_s);
  EXPECT_EQ(p.at("optimizer").at("stopped_by").get<std::string>(), "max_evaluations");
  EXPECT_EQ(p.at("optimizer").at("library").get<std::string>(), "NLopt");
  EXPECT_EQ(p.at("optimizer").at("max_evaluations").get<int>(), 200);
  EXPECT_EQ(p.at("optimizer").at("lbfgs_memory").get<int>(), o.lbfgs_memory);
  EXPECT_EQ(p.at("optimizer").at("lbfgs_memory_used").get<int>(),
            opt::EffectiveLbfgsMemory(o.lbfgs_memory, (o.c + 2 * o.N - 3) * o.c + 1));
  EXPECT_EQ(p.at("optimizer").at("search_slack").get<double>(), o.search_slack);
  EXPECT_EQ(p.at("start").at("construction").get<std::string>(), "eps");
  EXPECT_TRUE(p.at("start").contains("figures"));
  EXPECT_TRUE(p.at("result").contains("figures_float64"));
  // High precision, certified by the ladder (docs/error-model.md): "mp100" against mp50.
  EXPECT_NE(p.at("start").at("figures").at("precision").get<std::string>(), "float64");
}

// max_digits bounds the high-precision re-analysis's ladder, as --max-digits does for the
// constructions: 50 digits is one rung, uncertified; the default climbs to 100 and certifies.
// The provenance records both settings.
TEST(Optimize, MaxDigitsBoundsTheLadder) {
  OptimizeOptions o = Small(4, 8, 1e2, 100);
  o.variables = Variables::kShiftInvariant;
  const Design certified = Optimize(o);
  ASSERT_TRUE(certified.figures());
  EXPECT_EQ(certified.figures()->precision, "mp100");
  EXPECT_FALSE(certified.figures()->certified_digits.empty());
  o.max_digits = 50;
  const Design one_rung = Optimize(o);
  ASSERT_TRUE(one_rung.figures());
  EXPECT_EQ(one_rung.figures()->precision, "mp50");
  EXPECT_TRUE(one_rung.figures()->certified_digits.empty());
  const auto& a = one_rung.provenance().parameters.at("analysis");
  EXPECT_EQ(a.at("max_digits").get<int>(), 50);
  EXPECT_EQ(a.at("precision").get<std::string>(), "mp50");
  // Same search, same matrices: only the analysis differs, and it agrees to 10 digits.
  EXPECT_EQ(one_rung.encoders()[0], certified.encoders()[0]);
  EXPECT_NEAR(one_rung.figures()->err_rms, certified.figures()->err_rms,
              1e-10 * certified.figures()->err_rms);
}

TEST(Optimize, ProgressIsReported) {
  OptimizeOptions o = Small(4, 8, 1e3, 300);
  o.progress_interval_s = 0;
  int calls = 0;
  double last_evaluations = 0;
  o.progress = [&](const OptimizeProgress& p) {
    ++calls;
    EXPECT_GE(p.evaluations, last_evaluations);
    last_evaluations = p.evaluations;
    EXPECT_GT(p.objective, 0);
    EXPECT_GE(p.elapsed_s, 0);
  };
  Optimize(o);
  EXPECT_GT(calls, 10);
}

// Validate() names the option and its value, and Optimize throws that message.
void ExpectRejected(const OptimizeOptions& o, const std::string& needle) {
  EXPECT_NE(o.Validate().find(needle), std::string::npos) << o.Validate();
  try {
    Optimize(o);
    FAIL() << "expected InvalidArgument mentioning " << needle;
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(std::string(e.what()), o.Validate());
  }
}

// Rescaled continuation in kappa (1e2 -> 1e3): the stages and how each started are recorded,
// the result meets the final budget in high precision and is never worse than the eps start;
// reproducible.
TEST(Optimize, ContinuationInKappaMeetsTheFinalBudget) {
  OptimizeOptions o = Small(4, 8, 1e3, 900);
  o.continuation_from = 100;
  const Design d = Optimize(o);
  const auto& prm = d.provenance().parameters;
  EXPECT_EQ(prm.at("optimizer").at("stages").get<int>(), 2);
  EXPECT_EQ(prm.at("optimizer").at("stage_starts").size(), 1u);
  const Figures hp = Analyse(d, Precision::kMp50);
  EXPECT_LE(hp.kappa_dec, o.kappa_max);
  EXPECT_LE(hp.kappa_enc, o.kappa_max);
  EXPECT_LE(hp.err_rms, StartObjective(d, Objective::kRms) * (1 + 1e-12));
  EXPECT_EQ(Optimize(o).fingerprint(), d.fingerprint());
}

// The default resolves to continuation from 100 where c <= 2N and to none otherwise.
TEST(Optimize, AutomaticContinuation) {
  OptimizeOptions o = Small(4, 8, 1e4, 300);
  EXPECT_EQ(o.continuation_from, OptimizeOptions::kContinuationAuto);
  EXPECT_EQ(Optimize(o).provenance().parameters.at("optimizer").at("stages").get<int>(), 3);
  o = Small(4, 12, 1e4, 300);
  EXPECT_EQ(Optimize(o).provenance().parameters.at("optimizer").at("stages").get<int>(), 1);
  o = Small(4, 8, 1e4, 300);
  o.continuation_from = 0;
  EXPECT_EQ(Optimize(o).provenance().parameters.at("optimizer").at("stages").get<int>(), 1);
}

TEST(Optimize, RejectsBadOptions) {
  OptimizeOptions o = Small(4, 8, 1e3, 100);
  o.kappa_max = 0.5;
  ExpectRejected(o, "kappa_max = 0.5");
  o.kappa_max = NAN;
  ExpectRejected(o, "kappa_max = nan");
  // Beyond what the float64 search resolves: kappa_max 1e10 returned twice the err_rms of the eps
  // design inside that budget (toolkit audit).
  o.kappa_max = 1e10;
  ExpectRejected(o, "kappa_max = 1e+10, above 1e+07: the float64 search resolves");
  o.kappa_max = OptimizeOptions::kMaxSearchKappa;
  EXPECT_EQ(o.Validate(), "");
  o = Small(4, 0, 1e3, 100);
  ExpectRejected(o, "c = 0");
  o = Small(1, 4, 1e3, 100);
  ExpectRejected(o, "N = 1");
  o = Small(4, 8, 1e3, 0);
  ExpectRejected(o, "max_evaluations = 0");
  o = Small(4, 8, 1e3, 100);
  o.time_limit_s = 0;
  ExpectRejected(o, "time_limit_s = 0");
  o = Small(4, 8, 1e3, 100);
  o.perturbation = -1;
  ExpectRejected(o, "perturbation = -1");
  o = Small(4, 8, 1e3, 100);
  o.max_hops = -1;
  ExpectRejected(o, "max_hops = -1");
  o = Small(4, 8, 1e3, 100);
  o.continuation_from = -2;
  ExpectRejected(o, "continuation_from = -2");
  o = Small(4, 8, 1e3, 100);
  o.continuation_factor = 1;
  ExpectRejected(o, "continuation_factor = 1");
  o = Small(4, 8, 1e3, 100);
  o.search_slack = -0.1;
  ExpectRejected(o, "search_slack = -0.1");
  o.search_slack = 0.6;
  ExpectRejected(o, "search_slack = 0.6");
  o.search_slack = NAN;
  ExpectRejected(o, "search_slack = nan");
  o = Small(4, 8, 1e3, 100);
  o.lbfgs_memory = -2;
  ExpectRejected(o, "lbfgs_memory = -2");
  o = Small(4, 8, 1e3, 100);
  o.precision = Precision::kAuto;
  ExpectRejected(o, "precision auto");
  o = Small(4, 8, 1e3, 100);
  o.max_digits = 49;
  ExpectRejected(o, "max_digits = 49");
  o.max_digits = 10001;
  ExpectRejected(o, "max_digits = 10001");
  o = Small(4, 8, OptimizeOptions::kNoKappaBound, 100);  // rms needs a bound
  ExpectRejected(o, "kappa_max = inf");
  o.objective = Objective::kPredicted;  // the predicted error does not
  EXPECT_EQ(o.Validate(), "");
  o.kappa_max = 0.5;
  ExpectRejected(o, "kappa_max = 0.5");
  EXPECT_EQ(Small(4, 8, 1e3, 100).Validate(), "");
  EXPECT_THROW(ParseObjective("mean"), InvalidArgument);
  EXPECT_THROW(ParseOptimizerAlgorithm("bfgs"), InvalidArgument);
  EXPECT_THROW(ParseVariables("both"), InvalidArgument);
  EXPECT_EQ(ParseObjective("op"), Objective::kOp);
  EXPECT_EQ(ParseObjective("predicted"), Objective::kPredicted);
  EXPECT_EQ(ParseVariables(ToString(Variables::kPerRank)), Variables::kPerRank);
}

// No design meets the budget: a value with the reason, not an exception.
TEST(Optimize, NoFeasibleDesignIsAValue) {
  const OptimizeOptions o = Small(4, 4, 1.2, 100);  // exact, kappa_dec = sqrt(2) > 1.2
  const OptimizeResult r = TryOptimize(o);
  EXPECT_FALSE(r.design.has_value());
  EXPECT_NE(r.infeasible.find("kappa_max = 1.2"), std::string::npos) << r.infeasible;
  try {
    Optimize(o);
    FAIL() << "expected NumericalError";
  } catch (const NumericalError& e) {
    EXPECT_EQ(std::string(e.what()), r.infeasible);
  }
}

// Per rank by default up to kPerRankMaxVariables = N (c + N - 2) c, shift-invariant above.
TEST(Optimize, DefaultVariablesByProblemSize) {
  OptimizeOptions o;
  EXPECT_EQ(o.variables, Variables::kAuto);
  for (auto [N, c, expected] : {std::tuple{8, 16, Variables::kPerRank},
                                std::tuple{16, 48, Variables::kPerRank},
                                std::tuple{32, 64, Variables::kShiftInvariant}}) {
    o.N = N;
    o.c = c;
    EXPECT_EQ(ResolveVariables(o), expected) << N << " " << c;
    EXPECT_EQ(double(N) * (c + N - 2) * c <= OptimizeOptions::kPerRankMaxVariables,
              expected == Variables::kPerRank);
  }
  o.variables = Variables::kShiftInvariant;
  o.N = 4;
  o.c = 8;
  EXPECT_EQ(ResolveVariables(o), Variables::kShiftInvariant);
}

// The predicted error in `target` (mp50) of an optimised design's eps start, rebuilt from the
// eps its provenance records.
double StartPredicted(const Design& d, const std::string& target) {
  ConstructionOptions co;
  co.N = d.N();
  co.c = d.c();
  co.eps = d.provenance().parameters.at("start").at("eps").get<double>();
  co.precision = Precision::kMp50;
  return MakeConstruction(co).figures()->predicted_error.at(target);
}

// Objective predicted: the design's predicted float32 error (the toolkit's model, in mp50) is
// below the eps start's, whose eps minimises that model; the provenance records the target.
TEST(Optimize, PredictedErrorForATargetArithmetic) {
  OptimizeOptions o = Small(4, 8, OptimizeOptions::kNoKappaBound, 600);
  o.objective = Objective::kPredicted;
  const Design d = Optimize(o);
  const auto& p = d.provenance().parameters;
  EXPECT_EQ(p.at("objective").get<std::string>(), "predicted");
  EXPECT_EQ(p.at("target").get<std::string>(), "float32");
  EXPECT_TRUE(p.at("kappa_max").is_null());
  EXPECT_EQ(p.at("variables").get<std::string>(), "per_rank_encoders");
  // Continuation on err_rms (kappa 100, 1000: below the start's ~5.5e3), then the predicted
  // error from the kappa-1000 design rescaled to larger budgets.
  EXPECT_EQ(p.at("optimizer").at("stages").get<int>(), 3);
  ASSERT_EQ(p.at("optimizer").at("stage_starts").size(), 2u);
  EXPECT_NE(p.at("optimizer").at("stage_starts")[1].get<std::string>().find("predicted"),
            std::string::npos);
  ASSERT_TRUE(p.at("improved").get<bool>());
  const Figures hp = Analyse(d, Precision::kMp50);
  const double got = hp.predicted_error.at("float32");
  const double start = StartPredicted(d, "float32");
  EXPECT_LT(got, 0.9 * start);
  // The start is the eps construction's own optimum for float32 (TuneEps, independently).
  const double tuned = TuneEps(Construction::kEps, 4, 8, Arithmetic::kFloat32, Precision::kMp50)
                           .design.figures()
                           ->predicted_error.at("float32");
  EXPECT_NEAR(start / tuned, 1.0, 2e-3);
}

// float32+acc64: a float32 run first (its continuation and its predicted-error stage), then the
// float32+acc64 error from that design; the result beats the float32+acc64 eps start in that
// arithmetic's model (mp50), and the provenance says which stage started from what.
TEST(Optimize, Float32Acc64StartsFromAFloat32Design) {
  OptimizeOptions o = Small(4, 8, OptimizeOptions::kNoKappaBound, 900);
  o.objective = Objective::kPredicted;
  o.target = Arithmetic::kFloat32Acc64;
  const Design d = Optimize(o);
  const auto& p = d.provenance().parameters;
  EXPECT_EQ(p.at("target").get<std::string>(), "float32+acc64");
  // err_rms at kappa 100 and 1000 (below the float32 start's kappa), float32, float32+acc64.
  EXPECT_EQ(p.at("optimizer").at("stages").get<int>(), 4);
  const auto& starts = p.at("optimizer").at("stage_starts");
  ASSERT_EQ(starts.size(), 3u);
  EXPECT_NE(starts[2].get<std::string>().find("in float32+acc64 from the float32 design"),
            std::string::npos)
      << starts[2];
  EXPECT_EQ(starts[1].get<std::string>().find("from the float32 design"), std::string::npos);
  // 320 variables: a small problem, whose precursor gets three quarters of the budgets.
  EXPECT_EQ(p.at("optimizer").at("precursor_share").get<double>(), 0.75);
  ASSERT_TRUE(p.at("improved").get<bool>());
  const double got = Analyse(d, Precision::kMp50).predicted_error.at("float32+acc64");
  EXPECT_LT(got, 0.9 * StartPredicted(d, "float32+acc64"));
}

TEST(Pareto, RejectsBadOptionsWithTheMessageOfValidate) {
  auto expect = [](ParetoOptions po, const std::string& needle) {
    EXPECT_NE(po.Validate().find(needle), std::string::npos) << po.Validate();
    EXPECT_THROW(ParetoFront(po), InvalidArgument);
  };
  ParetoOptions po;
  po.kappa_from = 1e3;
  po.kappa_to = 1e2;
  expect(po, "kappa range 1000:100");
  po.kappa_from = 0.5;
  expect(po, "kappa range 0.5:100");
  po = ParetoOptions{};
  po.points = 0;
  expect(po, "points = 0");
  po = ParetoOptions{};
  po.N = 1;
  expect(po, "N = 1");  // checked through OptimizeOptions::Validate, named as pareto's
  EXPECT_EQ(po.Validate().rfind("pareto options: ", 0), 0u) << po.Validate();
  po = ParetoOptions{};
  po.objective = Objective::kPredicted;
  expect(po, "objective predicted");
  EXPECT_EQ(ParetoOptions{}.Validate(), "");
}

// A budget no eps construction meets is a point without an eps design (N = 8, c = 24: the
// smallest kappa_dec of the family is ~117), not an error.
TEST(Pareto, BudgetsNoEpsMeetsAreGaps) {
  ParetoOptions po;
  po.N = 8;
  po.c = 24;
  po.kappa_from = 1e2;
  po.kappa_to = 1e3;
  po.points = 2;
  po.optimize = false;
  po.precision = Precision::kFloat64;
  const auto front = ParetoFront(po);
  ASSERT_EQ(front.size(), 2u);
  EXPECT_FALSE(front[0].has_eps);
  EXPECT_TRUE(front[1].has_eps);
  EXPECT_LE(front[1].eps_figures.kappa_dec, 1e3);
}

TEST(Pareto, FrontsMeetTheirBudgets) {
  ParetoOptions po;
  po.N = 4;
  po.c = 8;
  po.kappa_from = 1e2;
  po.kappa_to = 1e4;
  po.points = 3;
  po.max_evaluations = 200;
  const auto front = ParetoFront(po);
  ASSERT_EQ(front.size(), 3u);
  EXPECT_NEAR(front[1].kappa / 1e3, 1.0, 1e-12);
  for (std::size_t k = 0; k < front.size(); ++k) {
    const ParetoPoint& p = front[k];
    ASSERT_TRUE(p.has_eps);
    EXPECT_LE(p.eps_figures.kappa_dec, p.kappa);
    ASSERT_TRUE(p.has_optimized);
    EXPECT_LE(p.optimized_figures.kappa_dec, p.kappa);
    EXPECT_LE(p.optimized_figures.kappa_enc, p.kappa);
    if (k > 0) {
      EXPECT_LT(p.eps_figures.err_rms, front[k - 1].eps_figures.err_rms);
    }
  }
}

}  // namespace
}  // namespace cerar::design
