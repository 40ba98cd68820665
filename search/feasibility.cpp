#include "search/feasibility.hpp"

#include <cmath>

namespace autotune {
namespace {

// Device memory of the numeric formats relative to each other (fp32 and tf32
// keep FP32 tensors; tf32 only changes the matmul unit, so it is never more).
double precision_rank(const Value& v) {
  if (!is_string(v)) return std::nan("");
  const auto& s = std::get<std::string>(v);
  if (s == "fp32") return 3.0;
  if (s == "tf32") return 2.0;
  if (s == "fp16" || s == "bf16") return 1.0;
  return std::nan("");
}

// Where a memory failure is put: somewhere over the limit (we only know it was
// over). Too close to the limit leaves P(fits) near 1/2 around known failures.
constexpr double kCensoredMargin = 0.3;
// Ridge on the linear trend of log(bytes); very large = no trend.
constexpr double kTrendRidge = 1e9;

double normal_cdf(double z) { return 0.5 * std::erfc(-z / 1.4142135623730951); }

}  // namespace

FeasibilityModel::FeasibilityModel(const SearchSpace& space, double vram_limit, double ram_limit)
    : m_space(space) {
  static const char* const kGrowing[] = {"batch_size", "num_workers", "prefetch_factor", "pin_memory"};
  for (const auto& p : space.params()) {
    std::vector<double> rank;
    bool memory = false;
    for (const char* n : kGrowing) memory = memory || p.name == n;
    if (memory) {
      for (const auto& v : p.values) rank.push_back(to_number(v));
    } else if (p.name == "precision") {
      memory = true;
      for (const auto& v : p.values) rank.push_back(precision_rank(v));
    }
    for (double r : rank) memory = memory && std::isfinite(r);
    m_is_memory.push_back(memory);
    // Accumulation repeats the same micro-batch: it does not grow memory.
    m_is_neutral.push_back(p.name == "grad_accum");
    m_rank.push_back(memory ? rank : std::vector<double>{});
  }
  if (vram_limit > 0) m_memory.push_back({"vram_bytes", std::log(vram_limit), {}, std::nullopt});
  if (ram_limit > 0) m_memory.push_back({"ram_bytes", std::log(ram_limit), {}, std::nullopt});
}

bool FeasibilityModel::uses_at_least(const Config& c, const Config& f) const {
  for (std::size_t d = 0; d < c.size(); ++d) {
    if (m_is_memory[d]) {
      if (m_rank[d][static_cast<std::size_t>(c[d])] < m_rank[d][static_cast<std::size_t>(f[d])])
        return false;
    } else if (!m_is_neutral[d] && c[d] != f[d]) {
      return false;
    }
  }
  return true;
}

bool FeasibilityModel::known_infeasible(const Config& c) const {
  for (std::size_t d = 0; d < m_unusable.size(); ++d)
    if (!m_unusable[d].empty() && m_unusable[d][static_cast<std::size_t>(c[d])]) return true;
  for (const auto& f : m_failed)
    if (uses_at_least(c, f)) return true;
  return false;
}

bool FeasibilityModel::known_feasible(const Config& c) const {
  for (const auto& s : m_fitted)
    if (uses_at_least(s, c)) return true;
  return false;
}

void FeasibilityModel::update(const std::vector<Observation>& history, std::mt19937_64& rng) {
  m_failed.clear();
  m_fitted.clear();
  std::vector<Eigen::VectorXd> x;
  std::vector<double> label;
  for (const auto& o : history) {
    const Status s = o.outcome.status;
    const bool memory_failure = s == Status::oom || s == Status::host_oom || s == Status::invalid;
    if (memory_failure) m_failed.push_back(o.config);
    if (o.outcome.ok()) m_fitted.push_back(o.config);
    // Every failure is evidence for the classifier: a configuration value
    // that always errors (say a precision the workload cannot run) is as
    // much to be avoided as one that runs out of memory.
    x.push_back(m_space.encode(o.config));
    label.push_back(o.outcome.ok() ? 1.0 : 0.0);
  }
  fit_logistic(x, label);

  constexpr int kUnusableAfter = 2;
  m_unusable.assign(m_space.dims(), {});
  for (std::size_t d = 0; d < m_space.dims(); ++d) {
    if (m_space.param(d).scale != Scale::categorical) continue;
    const std::size_t n = m_space.param(d).values.size();
    std::vector<int> ok(n, 0), broken(n, 0);
    for (const auto& o : history) {
      const auto k = static_cast<std::size_t>(o.config[d]);
      if (o.outcome.ok()) ++ok[k];
      else if (o.outcome.status == Status::error || o.outcome.status == Status::crash) ++broken[k];
    }
    m_unusable[d].assign(n, false);
    for (std::size_t k = 0; k < n; ++k) m_unusable[d][k] = ok[k] == 0 && broken[k] >= kUnusableAfter;
  }
  if (!m_memory.empty()) {
    fit_memory(m_memory[0], history,
               m_memory[0].metric == "vram_bytes" ? std::initializer_list<Status>{Status::oom}
                                                  : std::initializer_list<Status>{Status::host_oom, Status::invalid},
               rng);
    if (m_memory.size() > 1) fit_memory(m_memory[1], history, {Status::host_oom, Status::invalid}, rng);
  }
}

void FeasibilityModel::fit_logistic(const std::vector<Eigen::VectorXd>& x, const std::vector<double>& label) {
  m_logit_w.resize(0);
  bool any_zero = false;
  for (double l : label) any_zero = any_zero || l == 0.0;
  if (!any_zero) return;  // nothing failed: no evidence of a boundary
  const auto n = static_cast<Eigen::Index>(x.size());
  const auto d = static_cast<Eigen::Index>(m_space.encoded_dims()) + 1;
  Eigen::MatrixXd a(n, d);
  Eigen::VectorXd y(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    a(i, 0) = 1.0;
    a.row(i).tail(d - 1) = x[static_cast<std::size_t>(i)].transpose();
    y[i] = label[static_cast<std::size_t>(i)];
  }
  // Ridge on the weights (not the bias) keeps separable data finite.
  constexpr double kRidge = 0.3;
  Eigen::VectorXd w = Eigen::VectorXd::Zero(d);
  for (int it = 0; it < 25; ++it) {
    const Eigen::VectorXd p = ((-(a * w)).array().exp() + 1.0).inverse().matrix();
    const Eigen::VectorXd s = (p.array() * (1.0 - p.array())).max(1e-9).matrix();
    Eigen::VectorXd g = a.transpose() * (y - p);
    Eigen::MatrixXd h = a.transpose() * s.asDiagonal() * a;
    g.tail(d - 1) -= kRidge * w.tail(d - 1);
    h.diagonal().tail(d - 1).array() += kRidge;
    h(0, 0) += 1e-6;
    const Eigen::VectorXd step = h.ldlt().solve(g);
    if (!step.allFinite()) break;
    w += step;
    if (step.norm() < 1e-8) break;
  }
  if (w.allFinite()) m_logit_w = w;
}

void FeasibilityModel::fit_memory(MemoryModel& m, const std::vector<Observation>& history,
                                  std::initializer_list<Status> over_limit, std::mt19937_64& rng) {
  // Keep the last fit's hyperparameters as the next start.
  std::optional<gp::GaussianProcess> previous = std::move(m.gp);
  m.gp.reset();
  std::vector<Eigen::VectorXd> xs;
  std::vector<double> ys;
  int measured = 0;
  for (const auto& o : history) {
    if (o.outcome.ok()) {
      if (auto b = o.outcome.metric(m.metric); b && *b > 0) {
        xs.push_back(m_space.encode(o.config));
        ys.push_back(std::log(*b));
        ++measured;
      }
      continue;
    }
    for (Status s : over_limit)
      if (o.outcome.status == s) {
        // Censored: we only know it was over; put it a little over the limit.
        xs.push_back(m_space.encode(o.config));
        ys.push_back(m.log_limit + kCensoredMargin);
      }
  }
  if (measured < 3) return;
  const auto n = static_cast<Eigen::Index>(xs.size());
  const auto d = static_cast<Eigen::Index>(m_space.encoded_dims()) + 1;
  Eigen::MatrixXd a(n, d);
  for (Eigen::Index i = 0; i < n; ++i) {
    a(i, 0) = 1.0;
    a.row(i).tail(d - 1) = xs[static_cast<std::size_t>(i)].transpose();
  }
  Eigen::VectorXd target = Eigen::Map<const Eigen::VectorXd>(ys.data(), n);
  Eigen::MatrixXd h = a.transpose() * a;
  h.diagonal().tail(d - 1).array() += kTrendRidge;
  h(0, 0) += 1e-9;
  m.trend = h.ldlt().solve(a.transpose() * target);
  if (!m.trend.allFinite()) m.trend = Eigen::VectorXd::Zero(d);
  const Eigen::VectorXd residual = target - a * m.trend;
  for (Eigen::Index i = 0; i < n; ++i) ys[static_cast<std::size_t>(i)] = residual[i];
  std::vector<int> groups(m_space.encoded_owner().begin(), m_space.encoded_owner().end());
  // Refitting hyperparameters each step costs O(n^3) per evaluation; with
  // many points they move little, so refit only when the data grew by 10%,
  // from scratch (starting from the previous optimum measured worse).
  const bool refit = !previous || xs.size() < 30 || xs.size() >= m.fitted_size + m.fitted_size / 10;
  gp::GaussianProcess g = refit ? gp::GaussianProcess(groups) : std::move(*previous);
  Eigen::MatrixXd x(static_cast<Eigen::Index>(xs.size()), static_cast<Eigen::Index>(m_space.encoded_dims()));
  Eigen::VectorXd y(static_cast<Eigen::Index>(ys.size()));
  for (std::size_t i = 0; i < xs.size(); ++i) {
    x.row(static_cast<Eigen::Index>(i)) = xs[i].transpose();
    y[static_cast<Eigen::Index>(i)] = ys[i];
  }
  g.set_data(x, y);
  gp::FitOptions fo;
  fo.random_starts = 0;
  fo.max_evaluations = 40;
  if (refit ? g.fit(rng, fo) : g.condition()) {
    if (refit) m.fitted_size = xs.size();
    m.gp = std::move(g);
  }
}

Eigen::VectorXd FeasibilityModel::probability(const std::vector<const Config*>& configs,
                                              const Eigen::MatrixXd& x) const {
  const auto n = static_cast<Eigen::Index>(configs.size());
  Eigen::VectorXd p = Eigen::VectorXd::Ones(n);
  bool have_memory_model = false;
  for (const auto& m : m_memory) {
    if (!m.gp) continue;
    have_memory_model = true;
    Eigen::VectorXd mean, var;
    m.gp->predict(x, mean, var);
    mean += ((x * m.trend.tail(m.trend.size() - 1)).array() + m.trend[0]).matrix();
    const double noise = m.gp->noise_variance();
    for (Eigen::Index i = 0; i < n; ++i)
      p[i] *= normal_cdf((m.log_limit - mean[i]) / std::sqrt(var[i] + noise));
  }
  if (!have_memory_model && m_logit_w.size() > 0) {
    const Eigen::VectorXd z = (x * m_logit_w.tail(m_logit_w.size() - 1)).array() + m_logit_w[0];
    p = z.array().unaryExpr([](double t) { return 1.0 / (1.0 + std::exp(-t)); }).matrix();
  }
  for (Eigen::Index i = 0; i < n; ++i) {
    const Config& c = *configs[static_cast<std::size_t>(i)];
    if (known_infeasible(c))
      p[i] = 0.0;
    else if (known_feasible(c))
      p[i] = 1.0;
  }
  return p;
}

}  // namespace autotune
