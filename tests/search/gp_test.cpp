#include "search/gp/gaussian_process.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

namespace autotune::gp {
namespace {

// Three ordered columns and one categorical of three one-hot columns.
GaussianProcess make_gp() { return GaussianProcess({0, 1, 2, 3, 3, 3}); }

Eigen::MatrixXd points(int n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Eigen::MatrixXd x = Eigen::MatrixXd::Zero(n, 6);
  for (int i = 0; i < n; ++i) {
    for (int c = 0; c < 3; ++c) x(i, c) = u(rng);
    x(i, 3 + (i % 3)) = 1.0;
  }
  return x;
}

Eigen::VectorXd f(const Eigen::MatrixXd& x) {
  Eigen::VectorXd y(x.rows());
  for (Eigen::Index i = 0; i < x.rows(); ++i)
    y[i] = std::sin(3 * x(i, 0)) + 0.5 * x(i, 1) * x(i, 1) - x(i, 2) + 0.3 * x(i, 4);
  return y;
}

// Every component of an objective's analytic gradient at theta against
// central finite differences.
void expect_gradient_matches(const std::function<double(const Eigen::VectorXd&, Eigen::VectorXd*)>& objective,
                             const Eigen::VectorXd& theta, const std::string& what = "") {
  Eigen::VectorXd grad;
  objective(theta, &grad);
  for (Eigen::Index i = 0; i < theta.size(); ++i) {
    const double h = 1e-5;
    Eigen::VectorXd tp = theta, tm = theta;
    tp[i] += h;
    tm[i] -= h;
    const double fd = (objective(tp, nullptr) - objective(tm, nullptr)) / (2 * h);
    EXPECT_NEAR(grad[i], fd, 1e-4 * std::max(1.0, std::fabs(fd))) << what << "component " << i;
  }
}

TEST(GaussianProcess, LikelihoodGradientMatchesFiniteDifferences) {
  std::mt19937_64 rng(1);
  auto gp = make_gp();
  const Eigen::MatrixXd x = points(15, rng);
  gp.set_data(x, f(x));
  Eigen::VectorXd theta(6);
  theta << -0.5, 0.2, 0.7, -0.1, 0.3, -4.0;
  expect_gradient_matches([&](const Eigen::VectorXd& t, Eigen::VectorXd* g) { return gp.log_likelihood(t, g); }, theta);
  // The penalised objective too.
  expect_gradient_matches([&](const Eigen::VectorXd& t, Eigen::VectorXd* g) { return gp.log_posterior(t, g); }, theta);
}

// A raced trial's point carries more noise (set_noise_scale): the gradient
// in the noise holds, and the posterior follows that point less.
TEST(GaussianProcess, ANoisierPointWeighsLessAndTheGradientHolds) {
  std::mt19937_64 rng(5);
  auto gp = make_gp();
  const Eigen::MatrixXd x = points(12, rng);
  const Eigen::VectorXd y = f(x);
  gp.set_data(x, y);
  Eigen::VectorXd scale = Eigen::VectorXd::Ones(12);
  scale[3] = 4.0;
  scale[7] = 4.0;
  gp.set_noise_scale(scale);
  Eigen::VectorXd theta(6);
  theta << -0.5, 0.2, 0.7, -0.1, 0.3, -2.0;
  expect_gradient_matches([&](const Eigen::VectorXd& t, Eigen::VectorXd* g) { return gp.log_likelihood(t, g); }, theta);

  // Point 3 moved far off: with its noise scaled by 100 the posterior mean
  // there stays nearer the others' view than with the plain noise.
  Eigen::VectorXd off = y;
  off[3] += 3.0;
  auto plain = make_gp();
  plain.set_data(x, off);
  plain.set_theta(theta);
  ASSERT_TRUE(plain.condition());
  auto noisy = make_gp();
  noisy.set_data(x, off);
  Eigen::VectorXd big = Eigen::VectorXd::Ones(12);
  big[3] = 100.0;
  noisy.set_noise_scale(big);
  noisy.set_theta(theta);
  ASSERT_TRUE(noisy.condition());
  EXPECT_LT(std::fabs(noisy.mean_at_data()[3] - y[3]), std::fabs(plain.mean_at_data()[3] - y[3]));
}

TEST(GaussianProcess, AdditiveLikelihoodGradientMatchesFiniteDifferences) {
  std::mt19937_64 rng(11);
  for (double share : {0.3, 0.5, 1.0}) {
    auto gp = make_gp();
    gp.set_additive_share(share);
    const Eigen::MatrixXd x = points(15, rng);
    gp.set_data(x, f(x));
    Eigen::VectorXd theta(6);
    theta << -0.5, 0.2, 0.7, -0.1, 0.3, -4.0;
    expect_gradient_matches([&](const Eigen::VectorXd& t, Eigen::VectorXd* g) { return gp.log_likelihood(t, g); },
                            theta, "share " + std::to_string(share) + " ");
  }
}

// The tabulated cross-covariance (predict) is the same kernel as the one the
// likelihood factorises: noise-free data is interpolated, and far from the
// data the variance returns to the prior's.
TEST(GaussianProcess, AdditivePredictionInterpolatesNoiseFreeData) {
  std::mt19937_64 rng(12);
  auto gp = make_gp();
  gp.set_additive_share(0.5);
  const Eigen::MatrixXd x = points(12, rng);
  gp.set_data(x, f(x));
  Eigen::VectorXd theta(6);
  theta << -1.0, -1.0, -1.0, -1.0, 0.0, std::log(1e-6);
  gp.set_theta(theta);
  ASSERT_TRUE(gp.condition());
  Eigen::VectorXd mean, var;
  gp.predict(x, mean, var);
  const Eigen::VectorXd y = f(x);
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    EXPECT_NEAR(mean[i], y[i], 1e-3) << i;
    EXPECT_LT(var[i], 1e-3) << i;
  }
}

// What one knob does is carried to configurations that differ elsewhere: with
// y = 2 * x0 seen only at x1 = 0, the additive kernel predicts the trend in
// x0 at x1 = 1 where the product kernel falls back towards the mean.
TEST(GaussianProcess, AdditivePartCarriesAOneKnobEffectAcrossTheOthers) {
  Eigen::MatrixXd x(4, 2);
  x << 0.0, 0.0, 0.33, 0.0, 0.67, 0.0, 1.0, 0.0;
  Eigen::VectorXd y = 2.0 * x.col(0);
  Eigen::MatrixXd probe(2, 2);
  probe << 0.0, 1.0, 1.0, 1.0;
  Eigen::VectorXd theta(4);
  theta << std::log(0.3), std::log(0.3), 0.0, std::log(1e-4);
  auto spread = [&](double share) {
    GaussianProcess gp({0, 1});
    gp.set_additive_share(share);
    gp.set_data(x, y);
    gp.set_theta(theta);
    EXPECT_TRUE(gp.condition());
    Eigen::VectorXd mean, var;
    gp.predict(probe, mean, var);
    return mean[1] - mean[0];
  };
  EXPECT_GT(spread(0.5), 2.0 * spread(0.0));
  EXPECT_GT(spread(0.5), 0.5);
}

TEST(GaussianProcess, InterpolatesNoiseFreeData) {
  std::mt19937_64 rng(2);
  auto gp = make_gp();
  const Eigen::MatrixXd x = points(20, rng);
  const Eigen::VectorXd y = f(x) * 100.0 + Eigen::VectorXd::Constant(20, 7.0);  // caller's units
  gp.set_data(x, y);
  ASSERT_TRUE(gp.fit(rng));
  Eigen::VectorXd mean, var;
  gp.predict(x, mean, var);
  for (Eigen::Index i = 0; i < y.size(); ++i) {
    EXPECT_NEAR(mean[i], y[i], 0.02 * 100.0);
    EXPECT_LT(var[i], 0.05 * 100.0 * 100.0);
  }
  // Far from the data the variance is larger than at it.
  Eigen::MatrixXd far = Eigen::MatrixXd::Zero(1, 6);
  far << 5, 5, 5, 0, 0, 1;
  Eigen::VectorXd mf, vf;
  gp.predict(far, mf, vf);
  EXPECT_GT(vf[0], var.maxCoeff());
}

TEST(GaussianProcess, CategoriesAreEquidistant) {
  // One shared length scale per one-hot group: seen from category 0, categories 1
  // and 2 are equally far (no false order).
  auto gp = GaussianProcess({0, 1, 1, 1});
  Eigen::MatrixXd x(2, 4);
  x << 0.5, 1, 0, 0,  //
      0.6, 1, 0, 0;
  gp.set_data(x, Eigen::Vector2d(1.0, 2.0));
  ASSERT_TRUE(gp.condition());
  Eigen::MatrixXd q(2, 4);
  q << 0.5, 0, 1, 0,  //
      0.5, 0, 0, 1;
  Eigen::VectorXd m, v;
  gp.predict(q, m, v);
  EXPECT_NEAR(v[0], v[1], 1e-12);
  EXPECT_NEAR(m[0], m[1], 1e-12);
}

TEST(GaussianProcess, RecoversFromAnIllConditionedKernel) {
  std::mt19937_64 rng(3);
  auto gp = make_gp();
  Eigen::MatrixXd x = points(6, rng);
  Eigen::MatrixXd dup(12, 6);
  dup << x, x;  // every point twice
  Eigen::VectorXd y(12);
  y << f(x), f(x) + Eigen::VectorXd::Constant(6, 1e-3);
  gp.set_data(dup, y);
  Eigen::VectorXd theta(6);
  theta << 3.0, 3.0, 3.0, 3.0, 0.0, std::log(1e-14);  // long scales, no noise: singular
  gp.set_theta(theta);
  EXPECT_TRUE(gp.condition());
  EXPECT_TRUE(std::isfinite(gp.log_likelihood(theta, nullptr)));
  ASSERT_TRUE(gp.fit(rng));
  Eigen::VectorXd mean, var;
  gp.predict(dup, mean, var);
  EXPECT_TRUE(mean.allFinite());
  EXPECT_TRUE(var.allFinite());
  EXPECT_GE(gp.noise_variance(), 0.0);
}

TEST(ExpectedImprovement, IsNonNegativeAndLogIsConsistent) {
  for (double z = -40.0; z <= 8.0; z += 0.25) {
    const double sd = 0.7, best = 1.0, mean = best + z * sd;
    const double ei = expected_improvement(mean, sd, best);
    const double lei = log_expected_improvement(mean, sd, best);
    EXPECT_GE(ei, 0.0);
    EXPECT_TRUE(std::isfinite(lei)) << "z=" << z;
    if (ei > 1e-300) {
      EXPECT_NEAR(lei, std::log(ei), 1e-6 * std::max(1.0, std::fabs(lei))) << "z=" << z;
    }
  }
  // Far below representable EI, log EI keeps ordering (it still ranks candidates).
  EXPECT_GT(log_expected_improvement(-50.0, 1.0, 0.0), log_expected_improvement(-60.0, 1.0, 0.0));
  EXPECT_TRUE(std::isfinite(log_expected_improvement(-1e5, 1.0, 0.0)));
  EXPECT_EQ(expected_improvement(2.0, 0.0, 1.0), 1.0);
}

// A pending point is believed sds_under latent sds under the posterior mean
// there: the believer's mean at it drops by about that much when the point
// is far from the data (its latent variance dwarfs the noise), and by nothing
// with sds_under 0; either way the spread there shrinks (hyperparameters
// unchanged) and the data keep their means.
TEST(GaussianProcess, BelieverTakesPendingPointsTheGivenSdsUnderTheirMean) {
  std::mt19937_64 rng(3);
  auto gp = make_gp();
  const Eigen::MatrixXd x = points(12, rng);
  gp.set_data(x, f(x));
  ASSERT_TRUE(gp.fit(rng));
  Eigen::MatrixXd xp = Eigen::MatrixXd::Zero(1, 6);
  xp << 2.5, -1.5, 2.5, 0, 1, 0;  // far outside the data's [0,1] cube
  Eigen::VectorXd m0, v0;
  gp.predict(xp, m0, v0);
  const double sd = std::sqrt(v0[0]);
  ASSERT_GT(sd, 0.1);
  for (double under : {0.0, 1.0, 2.0}) {
    const GaussianProcess b = gp.with_believed(xp, under);
    Eigen::VectorXd m1, v1;
    b.predict(xp, m1, v1);
    EXPECT_NEAR(m1[0], m0[0] - under * sd, 0.1 * sd + 1e-9) << under;
    EXPECT_LT(v1[0], 0.1 * v0[0]) << under;
    EXPECT_LT((b.mean_at_data().head(x.rows()) - gp.mean_at_data()).cwiseAbs().maxCoeff(), 0.05 * sd) << under;
  }
}

}  // namespace
}  // namespace autotune::gp

namespace autotune::gp {
namespace {

// A fit told not to optimise keeps the hyperparameters of the last fit and
// conditions on the new data: its posterior passes through the new point.
// With no optimum yet it optimises all the same.
TEST(GaussianProcess, AFitWithoutOptimisingKeepsTheHyperparametersAndConditions) {
  std::mt19937_64 rng(3);
  auto gp = make_gp();
  FitOptions keep;
  keep.optimise = false;
  Eigen::MatrixXd x = points(20, rng);
  gp.set_data(x, f(x));
  ASSERT_TRUE(gp.fit(rng, keep));  // no optimum yet: optimised
  const Eigen::VectorXd theta = gp.theta();
  EXPECT_FALSE(theta.isApprox(GaussianProcess({0, 1, 2, 3, 3, 3}).theta())) << "it optimised";
  Eigen::MatrixXd more = points(21, rng);
  more.topRows(20) = x;
  gp.set_data(more, f(more));
  ASSERT_TRUE(gp.fit(rng, keep));
  EXPECT_TRUE(gp.theta().isApprox(theta));
  Eigen::VectorXd mean, var;
  gp.predict(more.bottomRows(1), mean, var);
  EXPECT_NEAR(mean[0], f(more.bottomRows(1))[0], 0.05) << "conditioned on the new point";
  ASSERT_TRUE(gp.fit(rng));  // optimise: the hyperparameters move
  EXPECT_FALSE(gp.theta().isApprox(theta));
}

}  // namespace
}  // namespace autotune::gp
