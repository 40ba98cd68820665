#pragma once
// The model of the measurements that bo searches with and anneal screens its
// moves with: a GP (search/gp) on the log-throughput of `ok` trials, read by
// the space's encoding plus a categorical precision's rank, and the
// acquisition both rank candidates by. Where every ok trial reports how busy
// its compute was (compute_busy, data_wait_fraction or gpu_busy), the
// throughput T is read as its two factors instead, T = (T / busy) x busy:
// the rate the step would run at were it never to wait for data (batch,
// precision and accumulation move it) and the share of the time it did not
// wait (the loader's knobs move it, up to 1; its GP also reads the compute
// rate, since a faster step waits longer on the same loader), one GP each,
// their sum the prediction of log T. Where every busy share is a measured
// data wait (compute_busy or data_wait_fraction) and two trials or more
// waited for data, T is read instead as the smaller of the compute's rate
// and the loader's (its GP on the trials that waited; search/surrogate.cpp
// kWaitedBusy). Failures are not in it: they feed the
// FeasibilityModel, whose P(fits) the acquisition weighs (docs/strategies.md).
#include <optional>
#include <utility>
#include <vector>

#include <Eigen/Core>

#include "search/gp/gaussian_process.hpp"
#include "search/strategy.hpp"

namespace autotune {

class Surrogate {
 public:
  explicit Surrogate(const SearchSpace& space);

  // The columns a configuration is read by: the space's encoding, then a
  // categorical precision's rank (precision_rank, scaled to [0,1] over its
  // listed values) when every listed value has one.
  Eigen::VectorXd columns(const Config& c) const;
  Eigen::Index width() const;

  // The data: the ok observations' columns and log-throughputs (and their
  // two factors when every one reports its busy share), a raced trial with
  // kRacedNoiseScale times the noise variance. Keeps the hyperparameters.
  void set_data(const std::vector<const Observation*>& ok);
  // set_data, then the hyperparameters refitted from the previous optimum
  // (fewer restarts once there are 30 points). False when no posterior
  // could be formed.
  bool fit(const std::vector<const Observation*>& ok, Rng& rng);

  gp::GaussianProcess& gp() { return m_gp; }
  const gp::GaussianProcess& gp() const { return m_gp; }

  // Log-throughput at x's rows (mean, latent variance), from the model
  // fitted last: the GP on log-throughput, or when split the compute rate's
  // GP plus the busy share's (capped at 0), or the smaller of the compute
  // rate and the loader's rate (its mean and variance as Clark's for the
  // minimum of two normals).
  void predict(const Eigen::MatrixXd& x, Eigen::VectorXd& mean, Eigen::VectorXd& var) const;
  Eigen::VectorXd mean_at_data() const;
  // A copy whose GPs believe xp's rows (pending trials) come in
  // kPendingSdsUnder posterior standard deviations under their means.
  Surrogate with_believed(const Eigen::MatrixXd& xp) const;
  bool ready() const;
  // The data as set, hyperparameters by the GPs' default options.
  bool fit_default(Rng& rng);
  // Whether the last fit split the throughput into its two factors, and
  // whether it read it as the smaller of the compute's and the loader's rate.
  bool split() const { return m_split; }
  bool loader_min() const { return m_min; }

 private:
  const SearchSpace* m_space;
  // The precision's parameter and its rank per value, when it has one.
  std::optional<std::pair<std::size_t, std::vector<double>>> m_rank;
  gp::GaussianProcess m_gp;
  // With every ok trial's busy share b: log(T / b) (the rate were the step
  // never to wait for data) and log b, each by its own GP.
  gp::GaussianProcess m_compute, m_busy;
  bool m_have_busy = false, m_split = false;
  // Where every busy share is a measured data wait (compute_busy or
  // data_wait_fraction): the loader's rate, log T at the trials that waited
  // for data, and T = min(compute rate, loader rate) (m_min); its GP reads
  // only the columns m_loader_cols names (not those of a knob the knob
  // table calls compute-only: precision, grad_accum). The data as
  // set (columns, log T, noise scales, log busy share), which the loader's
  // fit picks its rows from.
  std::vector<Eigen::Index> m_loader_cols;
  gp::GaussianProcess m_loader;
  Eigen::MatrixXd loader_x(const Eigen::MatrixXd& x) const;
  bool m_have_wait = false, m_min = false;
  Eigen::MatrixXd m_x;
  Eigen::VectorXd m_y, m_scale, m_busy_y;
  bool fit_loader(Rng& rng, const gp::FitOptions& fo);
  // The busy share's GP also reads the compute rate (its log, scaled to
  // [0,1] over the measured rates): a faster step waits longer on the same
  // loader. At the data it reads the measured rate, at a candidate the
  // compute GP's prediction.
  double m_rate_lo = 0.0, m_rate_span = 1.0;
  std::size_t m_optimised_at = 0;  // the data size at the last hyperparameter optimisation (fit())
  static constexpr std::size_t kLargeData = 30;
  Eigen::MatrixXd with_rate(const Eigen::MatrixXd& x, const Eigen::VectorXd& log_rate) const;
  bool fit_parts(Rng& rng, const gp::FitOptions& fo);
};


// What a pending trial is believed to measure (Surrogate::with_believed):
// its posterior mean less this many standard deviations, in each GP.
// Believing the mean itself (the plain Kriging believer) lowers the spread
// near a pending point but leaves its promise standing for the rest of the
// wave; one sd under, the wave hedges against the pending one's
// disappointing, and weighs its region less. Issue 12's failure
// landscapes with busy shares, 4 slots (waves of 4), paired by seed, mean
// fraction of the optimum (median / p10): @15 fresh seeds 1000-1099 0.844
// -> 0.850 (0.876 / 0.670 -> 0.880 / 0.670; +0.006 +- 0.005), 24
// held-out x 20 0.807 -> 0.825 (0.829 / 0.586 -> 0.851 / 0.634; +0.019
// +- 0.007); @30 p10 0.905 -> 0.914 and 0.904 -> 0.917, failed trials
// after the design per run 1.95 -> 1.79 and 2.20 -> 1.84. Half an sd:
// @15 0.847 and 0.827 (mean); two: 0.835 and 0.807; the mean plus one sd
// (an optimist): 0.773 and 0.769 in median. 2 slots @15 median: fresh
// 0.907 -> 0.905, held-out 0.878 -> 0.899; a 12-trial command job with a
// tight host wall, 2 slots, 20 seeds: mean 0.835 -> 0.816, mostly one path
// shared by 9 seeds (bench/results/failure_parallel.txt). One slot never
// has a trial pending: its runs are unchanged.
inline constexpr double kPendingSdsUnder = 1.0;

// The acquisition is EI x P(feasible)^2. With num_workers read by its log
// (core/knobs.cpp) the GP expects more near a host wall than it did, and
// plain EI x P spent a fifth more trials on failures there (a third of the
// space failing: 0.22 of the trials after the design, against 0.17); the
// square takes the risk back (0.15) and keeps the gain (pooled over six
// failure landscapes, 100 fresh seeds, @15 median 0.838 -> 0.869, p10 0.605
// -> 0.646). Its square alone, on the old encoding, lost (@15 0.824).
// Tried before: the square root (0.5) let third-fails waste 22% of its trials.
inline constexpr double kFeasibleWeight = 2.0;
// Except in bo's last trials of a budget (search/bo_strategy.cpp, final_trials()).

// log(EI x P(fits)^feasible_weight) from a candidate's log EI and P(fits)
// (P floored at 1e-12).
double acquisition(double log_ei, double p_fits, double feasible_weight = kFeasibleWeight);

}  // namespace autotune
