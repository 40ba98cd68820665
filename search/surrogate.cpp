#include "search/encoding.hpp"
#include "search/surrogate.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "core/knobs.hpp"

namespace autotune {
namespace {

// Half the GP's signal in an additive part (gp::GaussianProcess): with 5 to 30
// points in 6 or 7 dimensions, what one knob did at one corner (inline
// loading is slow, a deeper queue helps) is carried to the others instead of
// fading with the distance. Equal halves: no preference between the two.
constexpr double kAdditiveShare = 0.5;
// The loader's rate's GP (the min reading, below) keeps a fifth in its
// additive part. Its knobs act together: where a host wall trades workers
// against the queue (workers x prefetch x batch), the best loader is a
// combination (fewer workers with prefetch 2 against more with prefetch 1),
// and an additive reading carries what prefetch did at few workers to many,
// where the wall forbids it. Issue 12's failure landscapes with busy
// shares, the same build with the loader's GP at half and at a fifth
// (median / p10 / mean; share of runs at 0.90 of the optimum or more): @15
// fresh seeds 1000-1099 0.957 / 0.857 / 0.939 (75%) -> 0.992 / 0.869 /
// 0.945 (77%), 24 held-out x 20 0.963 / 0.804 / 0.933 (77%) -> 0.978 /
// 0.798 / 0.934 (77%); @30 fresh 1.000 / 0.985 / 0.992 -> 1.000 / 0.991 /
// 0.993, held-out 1.000 / 0.963 / 0.984 -> 1.000 / 0.963 / 0.988 (runs
// under 0.85: 8 -> 6 of 1080). Issue 15's cpu default (60 seeds, every
// lever): final 0.993 / 0.975 -> 0.994 / 0.976, confirmed 0.994 and 10.45 s
// to 98% both. No additive part at all: @15 0.992 / 0.869 / 0.946 and
// 0.978 / 0.800 / 0.933; four fifths: 0.954 / 0.858 / 0.938 and 0.963 /
// 0.770 / 0.923.
constexpr double kLoaderAdditiveShare = 0.2;
// A raced trial (stopped after two or three windows below the tuner's bar)
// is a shorter measurement: four times the noise variance of a full one
// (the spread of a mean of 2 windows against one of 3 to 5).
constexpr double kRacedNoiseScale = 4.0;

// Where every ok trial reports a measured data wait (compute_busy or
// data_wait_fraction; not gpu_busy, a card's utilisation, which also falls
// where the step waits on its launches rather than its data), log T is read
// as the smaller of two rates: the compute's, log(T / busy) at every trial,
// and the loader's, log T where the trial waited for data. A step runs at
// the pace of the slower of its producer and its consumer, so the loader's
// knobs are learnt from the trials that waited on them, and nothing of
// them from the ones that did not. Issue 12's failure landscapes with busy
// shares, beside the split into rate x busy share it replaces there, built
// and run the same hour (median / p10 / mean): @15 fresh seeds 1000-1099
// 0.918 / 0.785 / 0.907 -> 0.954 / 0.801 / 0.929, 24 held-out x 20 0.917 /
// 0.730 / 0.881 -> 0.946 / 0.756 / 0.904; @30 fresh 1.000 / 0.904 / 0.981
// -> 1.000 / 0.985 / 0.993, held-out 1.000 / 0.948 / 0.983 -> 1.000 / 0.961
// / 0.987. The cpu default (a measured sweep; its loader shares the cores
// with the compute; issue 15's settings, 60 seeds x sets 1, 1007, 2007):
// final median 0.9925 both, mean 0.9898 -> 0.9889, confirmed median 1.000 /
// 1.000 / 0.994 -> 0.9925 each, seconds per run 23.5 -> 18.3. Its limit: a
// loader seen only keeping up is known only as at least that fast, so where
// a slow compute hid it the model reads it slower than it is (on a toy
// pipeline of exactly min(compute, loader), 20 random designs of 14
// trials, its mean log error 0.110 against the split's 0.091). A trial
// waited for data when its busy share is under kWaitedBusy (0.8 and 0.95
// measured within 0.004 of it @15); the loader's GP needs kFewestWaited
// such trials (1 and 3: within 0.005), else the split model reads the data.
constexpr double kWaitedBusy = 0.9;
constexpr int kFewestWaited = 2;

// The first two moments of min(A, B), A ~ N(a, va) and B ~ N(b, vb)
// independent (Clark, 1961): {mean, variance}.
std::pair<double, double> min_of_normals(double a, double va, double b, double vb) {
  va = std::max(va, 0.0);
  vb = std::max(vb, 0.0);
  const double th = std::sqrt(va + vb);
  if (th < 1e-9) return a < b ? std::make_pair(a, va) : std::make_pair(b, vb);
  const double al = (a - b) / th;
  const double pa = 0.5 * std::erfc(al / std::sqrt(2.0));  // Phi(-al): P(A is the smaller)
  const double ph = std::exp(-0.5 * al * al) / std::sqrt(2.0 * M_PI);
  const double m1 = a * pa + b * (1.0 - pa) - th * ph;
  const double m2 = (a * a + va) * pa + (b * b + vb) * (1.0 - pa) - (a + b) * th * ph;
  return {m1, std::max(m2 - m1 * m1, 1e-12)};
}

// The mean of N(m, v) above t, E[X | X >= t] (at least t): what a trial
// whose loader kept up (L >= T) is believed to have had for a loader, by the
// loader's posterior there. Taken at T itself, the bound, the loader read
// slower than it was wherever the trials kept up: @30 on issue 12's
// landscapes, fresh p10 0.931 -> 0.985 (queue-cliff's median 0.904 -> 1.000),
// held-out 0.963 -> 0.961; @15 within the seeds' spread (median / p10 fresh
// 0.954 / 0.821 -> 0.954 / 0.801, held-out 0.940 / 0.747 -> 0.946 / 0.756).
// Tried beside it: a second pass imputing again from the refit (the same to
// the thousandth but @15's mean), and every trial that kept up imputed, not
// only those the fit put under their T (@30 fresh p10 0.936, held-out 0.927).
double mean_above(double m, double v, double t) {
  const double sd = std::sqrt(std::max(v, 0.0));
  if (sd < 1e-9) return std::max(m, t);
  const double al = (t - m) / sd;
  const double tail = 0.5 * std::erfc(al / std::sqrt(2.0));  // P(X >= t)
  if (tail < 1e-300) return t;
  return std::max(t, m + sd * std::exp(-0.5 * al * al) / std::sqrt(2.0 * M_PI) / tail);
}

// A categorical precision's rank (core/knobs.hpp: fp32 0, tf32 1/2,
// 16-bit 1, scaled to [0,1] over the listed values) as one more column in
// its group, beside its one-hot: fp16 and bf16 (or fp32 and tf32) then sit
// nearer each other than the others, so what one showed carries to the
// other. Sixty seeds of the synthetic profiles and the H100 replay (every
// issue-15 lever on): seconds to 98% of the optimum 67.9 -> 58.9 on the
// H100, 58.2 -> 53.5 compute-bound, within 4% elsewhere, final medians
// within 0.2%; the failure landscapes unchanged (@15 0.863 -> 0.858 named,
// 0.855 -> 0.852 held-out). {parameter, column per value}; none when a
// value's name is unknown or all ranks are equal.
std::optional<std::pair<std::size_t, std::vector<double>>> precision_rank_column(const SearchSpace& s) {
  const auto d = s.index_of("precision");
  if (!d || s.param(*d).scale != Scale::categorical) return std::nullopt;
  std::vector<double> pos;
  for (const auto& v : s.param(*d).values) {
    const auto* name = std::get_if<std::string>(&v);
    const auto rank = name ? precision_rank(*name) : std::nullopt;
    if (!rank) return std::nullopt;
    pos.push_back(*rank);
  }
  const double lo = *std::min_element(pos.begin(), pos.end()), hi = *std::max_element(pos.begin(), pos.end());
  if (!(hi > lo)) return std::nullopt;
  for (double& x : pos) x = (x - lo) / (hi - lo);
  return std::make_pair(*d, pos);
}

// The GP's column groups (one length scale each): the space's, then the
// rank column in its parameter's.
std::vector<int> column_groups(const SearchSpace& s, const std::optional<std::pair<std::size_t, std::vector<double>>>& rank) {
  std::vector<int> g(s.encoded_owner().begin(), s.encoded_owner().end());
  if (rank) g.push_back(static_cast<int>(rank->first));
  return g;
}

// The busy share's GP reads one column more, the compute rate, in a group
// of its own.
std::vector<int> busy_groups(const SearchSpace& s, const std::optional<std::pair<std::size_t, std::vector<double>>>& rank) {
  std::vector<int> g = column_groups(s, rank);
  g.push_back(static_cast<int>(s.dims()));
  return g;
}

// The columns the loader's GP reads: all but those of the knobs the knob
// table calls compute-only (precision, grad_accum; the rank column is
// precision's). Issue 12's failure landscapes with busy shares, beside
// the loader's GP reading every column (median / p10 / mean): @15 fresh
// 0.954 / 0.801 / 0.929 -> 0.954 / 0.824 / 0.932, held-out 0.946 / 0.756 /
// 0.904 -> 0.967 / 0.782 / 0.923; @30 fresh 1.000 / 0.985 / 0.993 -> 1.000
// / 0.985 / 0.989, held-out 1.000 / 0.961 / 0.987 -> 1.000 / 0.963 / 0.984
// (more runs stuck at 30: under 0.85 of the optimum 6 -> 11 of 1080, five
// of them vram-wall runs that spend 17 trials on workers and prefetch at
// one compute-bound batch and precision, pinning untried, at 0.801). Blind
// to precision alone: @15 0.954 / 0.816 / 0.931 and 0.960 / 0.766 / 0.912,
// @30 1.000 / 0.977 / 0.991 and 1.000 / 0.963 / 0.986. The cpu default
// (issue 15's settings, 3 x 60 seeds: its accumulation is 1 or 2) final
// median 0.9925 / 0.9853 / 0.9925 -> 0.9925 each, confirmed median 0.9925
// each -> 0.9941 / 0.9941 / 0.9933, seconds to 98% 11.0 / 11.9 / 11.5 ->
// 10.5 / 10.7 / 10.6.
std::vector<Eigen::Index> loader_columns(const SearchSpace& s, const std::optional<std::pair<std::size_t, std::vector<double>>>& rank) {
  const std::vector<int> g = column_groups(s, rank);
  std::vector<Eigen::Index> out;
  for (std::size_t c = 0; c < g.size(); ++c) {
    const KnobInfo* k = find_knob(s.param(static_cast<std::size_t>(g[c])).name);
    if (k && k->compute_only) continue;
    out.push_back(static_cast<Eigen::Index>(c));
  }
  if (out.empty())  // a space of compute-only knobs: the loader reads them all
    for (std::size_t c = 0; c < g.size(); ++c) out.push_back(static_cast<Eigen::Index>(c));
  return out;
}

// The groups of the columns kept, numbered anew from 0 (a GP counts its
// groups by the largest number).
std::vector<int> groups_of(const std::vector<int>& g, const std::vector<Eigen::Index>& cols) {
  std::vector<int> out, seen;
  for (auto c : cols) {
    const int group = g[static_cast<std::size_t>(c)];
    auto it = std::find(seen.begin(), seen.end(), group);
    if (it == seen.end()) it = seen.insert(seen.end(), group);
    out.push_back(static_cast<int>(it - seen.begin()));
  }
  return out;
}

}  // namespace

Eigen::MatrixXd Surrogate::loader_x(const Eigen::MatrixXd& x) const {
  Eigen::MatrixXd out(x.rows(), static_cast<Eigen::Index>(m_loader_cols.size()));
  for (std::size_t c = 0; c < m_loader_cols.size(); ++c) out.col(static_cast<Eigen::Index>(c)) = x.col(m_loader_cols[c]);
  return out;
}

Surrogate::Surrogate(const SearchSpace& space)
    : m_space(&space), m_rank(precision_rank_column(space)), m_gp(column_groups(space, m_rank)),
      m_compute(column_groups(space, m_rank)), m_busy(busy_groups(space, m_rank)),
      m_loader_cols(loader_columns(space, m_rank)),
      m_loader(groups_of(column_groups(space, m_rank), m_loader_cols)) {
  m_loader.set_additive_share(kLoaderAdditiveShare);
  m_gp.set_additive_share(kAdditiveShare);
  m_compute.set_additive_share(kAdditiveShare);
  m_busy.set_additive_share(kAdditiveShare);
}


// The rate column is rounded to 1/256 of the measured span (far under the
// GP's shortest length scale, 0.03): the GP tabulates its additive part per
// distinct value of a column, and a predicted rate per candidate would give
// one per candidate (+45% proposal time at 100 observations, unrounded).
Eigen::MatrixXd Surrogate::with_rate(const Eigen::MatrixXd& x, const Eigen::VectorXd& log_rate) const {
  constexpr double kSteps = 256.0;
  Eigen::MatrixXd out(x.rows(), x.cols() + 1);
  out << x, (((log_rate.array() - m_rate_lo) / m_rate_span) * kSteps).round() / kSteps;
  return out;
}

void Surrogate::predict(const Eigen::MatrixXd& x, Eigen::VectorXd& mean, Eigen::VectorXd& var) const {
  if (!m_split) return m_gp.predict(x, mean, var);
  m_compute.predict(x, mean, var);
  if (m_min) {
    Eigen::VectorXd ml, vl;
    m_loader.predict(loader_x(x), ml, vl);
    for (Eigen::Index i = 0; i < x.rows(); ++i) std::tie(mean[i], var[i]) = min_of_normals(mean[i], var[i], ml[i], vl[i]);
    return;
  }
  Eigen::VectorXd m2, v2;
  m_busy.predict(with_rate(x, mean), m2, v2);
  mean += m2.cwiseMin(0.0);  // a busy share is at most 1
  var += v2;
}

Eigen::VectorXd Surrogate::mean_at_data() const {
  if (!m_split) return m_gp.mean_at_data();
  if (m_min) {
    Eigen::VectorXd m, v;
    predict(m_x, m, v);
    return m;
  }
  return m_compute.mean_at_data() + m_busy.mean_at_data().cwiseMin(0.0);
}

Surrogate Surrogate::with_believed(const Eigen::MatrixXd& xp) const {
  Surrogate s = *this;
  if (!m_split) {
    s.m_gp = m_gp.with_believed(xp, kPendingSdsUnder);
    return s;
  }
  s.m_compute = m_compute.with_believed(xp, kPendingSdsUnder);
  if (m_min) {
    s.m_loader = m_loader.with_believed(loader_x(xp), kPendingSdsUnder);
  } else {
    Eigen::VectorXd mc, vc;
    m_compute.predict(xp, mc, vc);
    s.m_busy = m_busy.with_believed(with_rate(xp, mc), kPendingSdsUnder);
  }
  return s;
}

bool Surrogate::ready() const {
  if (!m_split) return m_gp.ready();
  return m_compute.ready() && (m_min ? m_loader.ready() : m_busy.ready());
}

// The loader's rate (m_loader): log T at the trials that waited for data
// (busy share under kWaitedBusy), where the loader set the pace; a trial
// that kept up says only that its loader was at least as fast as T, so
// where the fit on the waiting trials alone puts its loader under T it
// joins the data at that fit's mean above T (mean_above), and the loader's
// GP is fitted again.
bool Surrogate::fit_loader(Rng& rng, const gp::FitOptions& fo) {
  std::vector<Eigen::Index> waited, kept_up;
  for (Eigen::Index i = 0; i < m_y.size(); ++i) (std::exp(m_busy_y[i]) < kWaitedBusy ? waited : kept_up).push_back(i);
  if (static_cast<int>(waited.size()) < kFewestWaited) return false;
  std::vector<Eigen::Index> rows = waited;
  std::vector<double> at;
  for (auto i : waited) at.push_back(m_y[i]);
  auto set = [&] {
    const auto n = static_cast<Eigen::Index>(rows.size());
    Eigen::MatrixXd x(n, m_x.cols());
    Eigen::VectorXd y(n), sc(n);
    for (Eigen::Index r = 0; r < n; ++r) {
      const Eigen::Index i = rows[static_cast<std::size_t>(r)];
      x.row(r) = m_x.row(i);
      y[r] = at[static_cast<std::size_t>(r)];
      sc[r] = m_scale[i];
    }
    m_loader.set_data(loader_x(x), y);
    m_loader.set_noise_scale(sc);
  };
  set();
  if (!m_loader.fit(rng, fo)) return false;
  if (kept_up.empty()) return true;
  Eigen::MatrixXd xk(static_cast<Eigen::Index>(kept_up.size()), m_x.cols());
  for (Eigen::Index r = 0; r < xk.rows(); ++r) xk.row(r) = m_x.row(kept_up[static_cast<std::size_t>(r)]);
  Eigen::VectorXd m, v;
  m_loader.predict(loader_x(xk), m, v);
  for (Eigen::Index r = 0; r < xk.rows(); ++r) {
    const Eigen::Index i = kept_up[static_cast<std::size_t>(r)];
    if (m[r] >= m_y[i]) continue;
    rows.push_back(i);
    at.push_back(mean_above(m[r], v[r], m_y[i]));
  }
  if (rows.size() == waited.size()) return true;
  set();
  return m_loader.fit(rng, fo);
}

bool Surrogate::fit_parts(Rng& rng, const gp::FitOptions& fo) {
  m_split = m_have_busy && m_compute.fit(rng, fo);
  m_min = m_split && m_have_wait && fit_loader(rng, fo);
  if (m_split && !m_min) m_split = m_busy.fit(rng, fo);
  return m_split || m_gp.fit(rng, fo);
}

bool Surrogate::fit_default(Rng& rng) { return fit_parts(rng, gp::FitOptions{}); }

Eigen::VectorXd Surrogate::columns(const Config& c) const {
  Eigen::VectorXd e = encode(*m_space, c);
  if (!m_rank) return e;
  Eigen::VectorXd out(e.size() + 1);
  out << e, m_rank->second[static_cast<std::size_t>(c[m_rank->first])];
  return out;
}

Eigen::Index Surrogate::width() const {
  return static_cast<Eigen::Index>(m_space->encoded_dims() + (m_rank ? 1 : 0));
}

void Surrogate::set_data(const std::vector<const Observation*>& ok) {
  const auto n = static_cast<Eigen::Index>(ok.size());
  Eigen::MatrixXd x(n, width());
  Eigen::VectorXd y(n), scale(n), yb(n);
  m_have_busy = n > 0;
  m_have_wait = n > 0;
  for (Eigen::Index i = 0; i < n; ++i) {
    const Observation& o = *ok[static_cast<std::size_t>(i)];
    x.row(i) = columns(o.config).transpose();
    y[i] = std::log(o.outcome.throughput);
    scale[i] = o.outcome.raced() ? kRacedNoiseScale : 1.0;
    const auto b = o.outcome.busy();
    m_have_busy = m_have_busy && b.has_value();
    m_have_wait = m_have_wait && b && b->data_wait;
    yb[i] = std::log(std::clamp(b ? b->share : 1.0, 0.01, 1.0));
  }
  m_gp.set_data(x, y);
  m_gp.set_noise_scale(scale);
  m_split = false;
  m_min = false;
  m_x = x;
  m_y = y;
  m_scale = scale;
  m_busy_y = yb;
  if (m_have_busy) {
    const Eigen::VectorXd rate = y - yb;
    m_compute.set_data(x, rate);
    m_compute.set_noise_scale(scale);
    m_rate_lo = rate.minCoeff();
    m_rate_span = std::max(1e-6, rate.maxCoeff() - m_rate_lo);
    m_busy.set_data(with_rate(x, rate), yb);
    m_busy.set_noise_scale(scale);
  }
}

bool Surrogate::fit(const std::vector<const Observation*>& ok, Rng& rng) {
  set_data(ok);
  gp::FitOptions fo;
  // Fewer restarts as data grows: the previous optimum is a good start then.
  const bool large = ok.size() >= kLargeData;
  fo.random_starts = large ? 1 : 2;
  fo.default_starts = !large;
  fo.max_evaluations = large ? 40 : 80;
  // On a large data set one more point barely moves the hyperparameters:
  // they are optimised again once the data has grown by a tenth since, and
  // in between the GPs only condition on the new data (the tuner's own time
  // per trial at 100 trials: bench/results/tuner_overhead.txt).
  fo.optimise = !large || ok.size() * 10 >= m_optimised_at * 11;
  const bool fitted = fit_parts(rng, fo);
  if (fitted && fo.optimise) m_optimised_at = ok.size();
  if (fitted || fo.optimise) return fitted;
  fo.optimise = true;  // the kept hyperparameters no longer condition: optimise now
  m_optimised_at = ok.size();
  return fit_parts(rng, fo);
}

double acquisition(double log_ei, double p_fits, double feasible_weight) {
  return log_ei + feasible_weight * std::log(std::max(p_fits, 1e-12));
}

}  // namespace autotune
