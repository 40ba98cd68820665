#include "search/gp/gaussian_process.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include <nlopt.h>

namespace autotune::gp {
namespace {

constexpr double kSqrt5 = 2.23606797749979;
constexpr double kLog2Pi = 1.8378770664093453;
constexpr double kLsPriorSigma = 1.7320508075688772;  // sqrt(3)
constexpr double kLsPriorBase = 0.0;  // Hvarfner et al. use sqrt(2)
constexpr double kSignalPriorMean = 0.0, kSignalPriorSigma = 1.5;
constexpr double kNoisePriorMean = -6.9, kNoisePriorSigma = 2.0;  // ~1e-3 of the variance
constexpr double kJitterStart = 1e-9, kJitterCap = 1e-2;

double log_prior_term(double x, double mu, double sigma, double* grad) {
  const double u = (x - mu) / sigma;
  if (grad) *grad = -u / sigma;
  return -0.5 * u * u;
}

struct ObjectiveData {
  const GaussianProcess* gp;
  int evaluations = 0;
};

double nlopt_objective(unsigned n, const double* x, double* grad, void* data) {
  auto* d = static_cast<ObjectiveData*>(data);
  ++d->evaluations;
  Eigen::Map<const Eigen::VectorXd> theta(x, n);
  Eigen::VectorXd g;
  const double v = d->gp->log_posterior(theta, grad ? &g : nullptr);
  if (!std::isfinite(v)) {
    // No Cholesky at this point: a steep wall pushing back to the prior mode.
    if (grad) std::fill(grad, grad + n, 0.0);
    return -1e30;
  }
  if (grad) std::copy(g.data(), g.data() + n, grad);
  return v;
}

// exp(x^2) erfc(x) for x >= 0, without overflow for large x.
double erfcx(double x) {
  if (x < 25.0) return std::exp(x * x) * std::erfc(x);
  const double x2 = x * x;
  return (1.0 - 0.5 / x2 + 0.75 / (x2 * x2)) / (x * 1.7724538509055159);
}

// log(1 - exp(x)) for x < 0 (Maechler 2012).
double log1mexp(double x) {
  return x > -0.6931471805599453 ? std::log(-std::expm1(x)) : std::log1p(-std::exp(x));
}

}  // namespace

double matern52(double s) {
  const double r = std::sqrt(std::max(s, 0.0));
  return (1.0 + kSqrt5 * r + 5.0 / 3.0 * s) * std::exp(-kSqrt5 * r);
}
// -d matern52 / d(r^2)
double matern52_slope(double s) {
  const double r = std::sqrt(std::max(s, 0.0));
  return (5.0 / 6.0) * (1.0 + kSqrt5 * r) * std::exp(-kSqrt5 * r);
}

double length_scale_prior_mean(int groups) {
  return kLsPriorBase + 0.5 * std::log(std::max(1, groups));
}

GaussianProcess::GaussianProcess(std::vector<int> column_group) : m_group(std::move(column_group)) {
  for (int g : m_group) m_groups = std::max(m_groups, g + 1);
  m_theta = Eigen::VectorXd(m_groups + 2);
  m_theta.head(m_groups).setConstant(length_scale_prior_mean(m_groups));
  m_theta[m_groups] = kSignalPriorMean;
  m_theta[m_groups + 1] = std::log(1e-2);
}

void GaussianProcess::set_additive_share(double a) {
  m_additive = std::clamp(a, 0.0, 1.0);
  m_ready = false;
}

void GaussianProcess::set_data(const Eigen::MatrixXd& x, const Eigen::VectorXd& y) {
  m_x = x;
  const auto n = y.size();
  m_y_mean = n > 0 ? y.mean() : 0.0;
  double var = n > 1 ? (y.array() - m_y_mean).square().sum() / static_cast<double>(n - 1) : 0.0;
  m_y_std = var > 1e-24 ? std::sqrt(var) : 1.0;
  m_y = (y.array() - m_y_mean) / m_y_std;
  m_noise_scale = Eigen::VectorXd::Ones(n);
  m_group_d2.assign(static_cast<std::size_t>(m_groups), Eigen::MatrixXd::Zero(n, n));
  for (Eigen::Index c = 0; c < x.cols(); ++c) {
    auto& d2 = m_group_d2[static_cast<std::size_t>(m_group[static_cast<std::size_t>(c)])];
    for (Eigen::Index j = 0; j < n; ++j)
      for (Eigen::Index i = 0; i < n; ++i) {
        const double diff = x(i, c) - x(j, c);
        d2(i, j) += diff * diff;
      }
  }
  m_ready = false;
}

void GaussianProcess::set_noise_scale(const Eigen::VectorXd& scale) {
  if (scale.size() == m_noise_scale.size()) m_noise_scale = scale.cwiseMax(1.0);
  m_ready = false;
}

void GaussianProcess::set_theta(const Eigen::VectorXd& theta) {
  m_theta = theta;
  m_have_optimum = true;
  m_ready = false;
}

Eigen::VectorXd GaussianProcess::length_scales() const {
  return m_theta.head(m_groups).array().exp();
}

double GaussianProcess::noise_variance() const {
  return std::exp(m_theta[m_groups + 1]) * m_y_std * m_y_std;
}

bool GaussianProcess::decompose(const Eigen::VectorXd& theta, Eigen::LLT<Eigen::MatrixXd>& llt,
                                Eigen::MatrixXd* kernel_only, Eigen::MatrixXd* r2_out) const {
  const auto n = m_x.rows();
  Eigen::MatrixXd r2 = Eigen::MatrixXd::Zero(n, n);
  for (int g = 0; g < m_groups; ++g)
    r2 += m_group_d2[static_cast<std::size_t>(g)] * std::exp(-2.0 * theta[g]);
  const double sf2 = std::exp(theta[m_groups]);
  const double sn2 = std::exp(theta[m_groups + 1]);
  const double a = m_additive;
  Eigen::MatrixXd k = r2.unaryExpr([sf2, a](double s) { return sf2 * (1.0 - a) * matern52(s); });
  if (a > 0.0)
    for (int g = 0; g < m_groups; ++g) {
      const double inv = std::exp(-2.0 * theta[g]);
      const double w = sf2 * a / m_groups;
      k += m_group_d2[static_cast<std::size_t>(g)].unaryExpr([inv, w](double d) { return w * matern52(d * inv); });
    }
  if (kernel_only) *kernel_only = k;
  if (r2_out) *r2_out = std::move(r2);
  k.diagonal().array() += sn2 * m_noise_scale.array();
  llt.compute(k);
  for (double jitter = kJitterStart * sf2; llt.info() != Eigen::Success; jitter *= 10.0) {
    if (jitter > kJitterCap * sf2) return false;
    Eigen::MatrixXd kj = k;
    kj.diagonal().array() += jitter;
    llt.compute(kj);
  }
  return true;
}

double GaussianProcess::log_likelihood(const Eigen::VectorXd& theta, Eigen::VectorXd* grad) const {
  const auto n = m_x.rows();
  if (grad) *grad = Eigen::VectorXd::Zero(theta.size());
  if (n == 0) return 0.0;
  Eigen::LLT<Eigen::MatrixXd> llt;
  Eigen::MatrixXd kf, r2;
  if (!decompose(theta, llt, grad ? &kf : nullptr, grad ? &r2 : nullptr))
    return -std::numeric_limits<double>::infinity();
  const Eigen::VectorXd alpha = llt.solve(m_y);
  const Eigen::MatrixXd lmat = llt.matrixL();
  const double log_det = 2.0 * lmat.diagonal().array().log().sum();
  const double value = -0.5 * m_y.dot(alpha) - 0.5 * log_det - 0.5 * static_cast<double>(n) * kLog2Pi;
  if (grad) {
    // d/dtheta = 1/2 tr((alpha alpha^T - K^-1) dK/dtheta) (Rasmussen & Williams eq. 5.9).
    const Eigen::MatrixXd w =
        alpha * alpha.transpose() - llt.solve(Eigen::MatrixXd::Identity(n, n));
    const double sf2 = std::exp(theta[m_groups]);
    // dK/d(r^2) * (-1) = sf2 * 5/6 (1 + sqrt5 r) exp(-sqrt5 r); dr^2/dlog l_g = -2 D_g / l_g^2.
    const double a = m_additive;
    const Eigen::MatrixXd dk_dr2 = r2.unaryExpr([sf2, a](double s) { return sf2 * (1.0 - a) * matern52_slope(s); });
    const Eigen::MatrixXd wk = w.cwiseProduct(dk_dr2);
    for (int g = 0; g < m_groups; ++g) {
      const auto& d2 = m_group_d2[static_cast<std::size_t>(g)];
      const double inv = std::exp(-2.0 * theta[g]);
      double sum = wk.cwiseProduct(d2).sum();
      if (a > 0.0) {
        const double wg = sf2 * a / m_groups;
        sum += w.cwiseProduct(d2.unaryExpr([inv, wg](double d) { return wg * matern52_slope(d * inv) * d; })).sum();
      }
      (*grad)[g] = 0.5 * 2.0 * inv * sum;
    }
    (*grad)[m_groups] = 0.5 * w.cwiseProduct(kf).sum();
    (*grad)[m_groups + 1] = 0.5 * std::exp(theta[m_groups + 1]) * w.diagonal().dot(m_noise_scale);
  }
  return value;
}

double GaussianProcess::log_posterior(const Eigen::VectorXd& theta, Eigen::VectorXd* grad) const {
  double value = log_likelihood(theta, grad);
  if (!std::isfinite(value)) return value;
  const double mu = length_scale_prior_mean(m_groups);
  double g = 0.0;
  for (int i = 0; i < m_groups; ++i) {
    value += log_prior_term(theta[i], mu, kLsPriorSigma, &g);
    if (grad) (*grad)[i] += g;
  }
  value += log_prior_term(theta[m_groups], kSignalPriorMean, kSignalPriorSigma, &g);
  if (grad) (*grad)[m_groups] += g;
  value += log_prior_term(theta[m_groups + 1], kNoisePriorMean, kNoisePriorSigma, &g);
  if (grad) (*grad)[m_groups + 1] += g;
  return value;
}

void GaussianProcess::clamp_theta(Eigen::VectorXd& t, const FitOptions& o) const {
  for (int i = 0; i < m_groups; ++i)
    t[i] = std::clamp(t[i], std::log(o.min_length_scale), std::log(o.max_length_scale));
  t[m_groups] = std::clamp(t[m_groups], std::log(o.min_signal), std::log(o.max_signal));
  t[m_groups + 1] = std::clamp(t[m_groups + 1], std::log(o.min_noise), std::log(o.max_noise));
}

namespace {

// The box L-BFGS searches: log length scales, log signal, log noise.
void theta_bounds(int groups, const FitOptions& o, std::vector<double>& lower, std::vector<double>& upper) {
  const auto dim = static_cast<unsigned>(groups + 2);
  lower.assign(dim, 0.0);
  upper.assign(dim, 0.0);
  for (int i = 0; i < groups; ++i) {
    lower[static_cast<std::size_t>(i)] = std::log(o.min_length_scale);
    upper[static_cast<std::size_t>(i)] = std::log(o.max_length_scale);
  }
  lower[dim - 2] = std::log(o.min_signal);
  upper[dim - 2] = std::log(o.max_signal);
  lower[dim - 1] = std::log(o.min_noise);
  upper[dim - 1] = std::log(o.max_noise);
}

// Where L-BFGS starts: the previous optimum if any, the default starts, then
// o.random_starts draws from rng.
std::vector<Eigen::VectorXd> fit_starts(int groups, const Eigen::VectorXd* previous, const FitOptions& o,
                                        std::mt19937_64& rng) {
  const Eigen::Index dim = groups + 2;
  std::vector<Eigen::VectorXd> starts;
  if (previous) starts.push_back(*previous);
  Eigen::VectorXd mode(dim);
  mode.head(groups).setConstant(length_scale_prior_mean(groups));
  mode[groups] = kSignalPriorMean;
  mode[groups + 1] = std::log(1e-2);
  if (o.default_starts || !previous) starts.push_back(mode);
  // A wiggly, nearly noise-free start: the prior mode alone often settles in
  // the "everything is noise" basin on small data.
  Eigen::VectorXd wiggly(dim);
  wiggly.head(groups).setConstant(std::log(0.4));
  wiggly[groups] = 0.0;
  wiggly[groups + 1] = std::log(1e-4);
  if (o.default_starts || !previous) starts.push_back(wiggly);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (int s = 0; s < o.random_starts; ++s) {
    Eigen::VectorXd t(dim);
    for (int i = 0; i < groups; ++i)
      t[i] = length_scale_prior_mean(groups) - 1.0 + kLsPriorSigma * 0.7 * normal(rng);
    t[groups] = 0.5 * normal(rng);
    t[groups + 1] = std::log(1e-2) + normal(rng);
    starts.push_back(t);
  }
  return starts;
}

}  // namespace

bool GaussianProcess::fit(std::mt19937_64& rng, const FitOptions& o) {
  const auto dim = static_cast<unsigned>(m_groups + 2);
  if (!o.optimise && m_have_optimum && m_theta.size() == static_cast<Eigen::Index>(dim) && condition()) return true;
  std::vector<double> lower, upper;
  theta_bounds(m_groups, o, lower, upper);
  const Eigen::VectorXd previous = m_theta;
  std::vector<Eigen::VectorXd> starts = fit_starts(m_groups, m_have_optimum ? &m_theta : nullptr, o, rng);

  ObjectiveData data{this};
  Eigen::VectorXd best_theta;
  double best_value = -std::numeric_limits<double>::infinity();
  int failures = 0;
  for (auto& start : starts) {
    clamp_theta(start, o);
    nlopt_opt opt = nlopt_create(NLOPT_LD_LBFGS, dim);
    if (!opt) {
      m_warnings.emplace_back("nlopt_create failed");
      break;
    }
    nlopt_set_lower_bounds(opt, lower.data());
    nlopt_set_upper_bounds(opt, upper.data());
    nlopt_set_max_objective(opt, nlopt_objective, &data);
    nlopt_set_maxeval(opt, o.max_evaluations);
    nlopt_set_ftol_rel(opt, 1e-7);
    nlopt_set_xtol_rel(opt, 1e-5);
    std::vector<double> x(start.data(), start.data() + dim);
    double value = -std::numeric_limits<double>::infinity();
    const nlopt_result rc = nlopt_optimize(opt, x.data(), &value);
    nlopt_destroy(opt);
    // ROUNDOFF_LIMITED still leaves the best point found in x; other negative
    // codes (failure, invalid arguments, out of memory, forced stop) do not.
    if (rc < 0 && rc != NLOPT_ROUNDOFF_LIMITED) {
      ++failures;
      continue;
    }
    if (std::isfinite(value) && value > -1e29 && value > best_value) {
      best_value = value;
      best_theta = Eigen::Map<Eigen::VectorXd>(x.data(), dim);
    }
  }
  if (failures > 0)
    m_warnings.push_back("nlopt failed from " + std::to_string(failures) + " of " +
                         std::to_string(starts.size()) + " starts");
  if (best_theta.size() == dim) {
    m_theta = best_theta;
    m_have_optimum = true;
    if (condition()) return true;
    m_warnings.emplace_back("no Cholesky at the fitted hyperparameters; keeping the previous ones");
  } else {
    m_warnings.emplace_back("hyperparameter fit found no usable optimum; keeping the previous ones");
  }
  m_theta = previous;
  return condition();
}

bool GaussianProcess::condition() {
  m_ready = false;
  if (m_x.rows() == 0) return false;
  if (!decompose(m_theta, m_llt, nullptr, nullptr)) {
    m_warnings.emplace_back("Cholesky failed even with the largest jitter");
    return false;
  }
  m_alpha = m_llt.solve(m_y);
  m_ready = true;
  return true;
}

Eigen::MatrixXd GaussianProcess::scaled(const Eigen::MatrixXd& x, const Eigen::VectorXd& theta) const {
  Eigen::MatrixXd z = x;
  for (Eigen::Index c = 0; c < x.cols(); ++c)
    z.col(c) *= std::exp(-theta[m_group[static_cast<std::size_t>(c)]]);
  return z;
}

Eigen::MatrixXd GaussianProcess::squared_distances(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b,
                                                   const Eigen::VectorXd& theta) const {
  const Eigen::MatrixXd za = scaled(a, theta), zb = scaled(b, theta);
  Eigen::MatrixXd r2 = -2.0 * za * zb.transpose();
  r2.colwise() += za.rowwise().squaredNorm();
  r2.rowwise() += zb.rowwise().squaredNorm().transpose();
  return r2.cwiseMax(0.0);
}

void GaussianProcess::predict(const Eigen::MatrixXd& xs, Eigen::VectorXd& mean, Eigen::VectorXd& var) const {
  const double sf2 = std::exp(m_theta[m_groups]);
  // Cross-covariance, data x candidates (n x m), so the solve below runs on columns.
  const double a = m_additive;
  Eigen::MatrixXd ks = squared_distances(m_x, xs, m_theta).unaryExpr([sf2, a](double s) {
    return sf2 * (1.0 - a) * matern52(s);
  });
  if (a > 0.0) ks += additive_cross(m_x, xs, m_theta);
  mean = (ks.transpose() * m_alpha).array() * m_y_std + m_y_mean;
  m_llt.matrixL().solveInPlace(ks);
  var = ((sf2 - ks.colwise().squaredNorm().array()).max(1e-12) * (m_y_std * m_y_std)).matrix().transpose();
}

// The additive part between the data (few rows) and candidates (many): a
// group's kernel depends only on the group's own columns, which take few
// distinct values over the candidates, so it is tabulated per distinct value.
Eigen::MatrixXd GaussianProcess::additive_cross(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b,
                                                const Eigen::VectorXd& theta) const {
  const double sf2 = std::exp(theta[m_groups]);
  const double w = sf2 * m_additive / m_groups;
  Eigen::MatrixXd out = Eigen::MatrixXd::Zero(a.rows(), b.rows());
  for (int g = 0; g < m_groups; ++g) {
    std::vector<Eigen::Index> cols;
    for (std::size_t c = 0; c < m_group.size(); ++c)
      if (m_group[c] == g) cols.push_back(static_cast<Eigen::Index>(c));
    const double inv = std::exp(-2.0 * theta[g]);
    std::map<std::vector<double>, Eigen::Index> distinct;
    std::vector<Eigen::Index> key(static_cast<std::size_t>(b.rows()));
    std::vector<std::vector<double>> values;
    std::vector<double> v(cols.size());
    for (Eigen::Index j = 0; j < b.rows(); ++j) {
      for (std::size_t k = 0; k < cols.size(); ++k) v[k] = b(j, cols[k]);
      auto [it, fresh] = distinct.emplace(v, static_cast<Eigen::Index>(values.size()));
      if (fresh) values.push_back(v);
      key[static_cast<std::size_t>(j)] = it->second;
    }
    Eigen::MatrixXd table(a.rows(), static_cast<Eigen::Index>(values.size()));
    for (Eigen::Index i = 0; i < a.rows(); ++i)
      for (std::size_t u = 0; u < values.size(); ++u) {
        double d2 = 0.0;
        for (std::size_t k = 0; k < cols.size(); ++k) {
          const double diff = a(i, cols[k]) - values[u][k];
          d2 += diff * diff;
        }
        table(i, static_cast<Eigen::Index>(u)) = w * matern52(d2 * inv);
      }
    for (Eigen::Index j = 0; j < b.rows(); ++j) out.col(j) += table.col(key[static_cast<std::size_t>(j)]);
  }
  return out;
}

Eigen::VectorXd GaussianProcess::mean_at_data() const {
  Eigen::VectorXd mean, var;
  predict(m_x, mean, var);
  return mean;
}

GaussianProcess GaussianProcess::with_believed(const Eigen::MatrixXd& xp, double sds_under) const {
  GaussianProcess out = *this;
  if (xp.rows() == 0 || !m_ready) return out;
  Eigen::VectorXd mp, vp;
  predict(xp, mp, vp);
  if (sds_under != 0.0) mp -= sds_under * vp.cwiseMax(0.0).cwiseSqrt();
  Eigen::MatrixXd x(m_x.rows() + xp.rows(), m_x.cols());
  x << m_x, xp;
  Eigen::VectorXd y(m_y.size() + mp.size());
  y << (m_y.array() * m_y_std + m_y_mean).matrix(), mp;
  // Keep the standardisation of the real data: believed points carry no news.
  const double mean = m_y_mean, sd = m_y_std;
  out.set_data(x, y);
  out.m_noise_scale.head(m_noise_scale.size()) = m_noise_scale;  // believed points: the learned noise
  out.m_y_mean = mean;
  out.m_y_std = sd;
  out.m_y = (y.array() - mean) / sd;
  out.m_theta = m_theta;
  out.condition();
  return out;
}

double log_h(double z) {
  constexpr double c1 = 0.9189385332046727;   // log(2 pi)/2
  constexpr double c2 = 0.22579135264472744;  // log(pi/2)/2
  if (z > -1.0) {
    const double phi = std::exp(-0.5 * z * z) / 2.5066282746310002;
    const double cdf = 0.5 * std::erfc(-z / 1.4142135623730951);
    return std::log(phi + z * cdf);
  }
  if (z > -1e8) {
    // Ament et al. 2023, eq. (9): log h(z) = -z^2/2 - c1 + log1mexp(log(erfcx(-z/sqrt2)|z|) + c2).
    return -0.5 * z * z - c1 + log1mexp(std::log(erfcx(-z / 1.4142135623730951) * std::fabs(z)) + c2);
  }
  return -0.5 * z * z - c1 - 2.0 * std::log(std::fabs(z));
}

double log_expected_improvement(double mean, double sd, double best) {
  if (!(sd > 0.0)) return mean > best ? std::log(mean - best) : -std::numeric_limits<double>::infinity();
  return std::log(sd) + log_h((mean - best) / sd);
}

double expected_improvement(double mean, double sd, double best) {
  if (!(sd > 0.0)) return std::max(0.0, mean - best);
  const double z = (mean - best) / sd;
  const double phi = std::exp(-0.5 * z * z) / 2.5066282746310002;
  const double cdf = 0.5 * std::erfc(-z / 1.4142135623730951);
  return std::max(0.0, sd * (phi + z * cdf));
}

}  // namespace autotune::gp
