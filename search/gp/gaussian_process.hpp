#pragma once
// A Gaussian process regressor on Eigen, free of strategy logic.
//
// Kernel: Matérn-5/2 with one length scale per column *group* (an ordered
// parameter is a group of one column; the one-hot columns of a categorical
// parameter share one length scale, so two different categories are always at
// the same distance sqrt(2)/l: no false order), times a signal variance, plus
// a learned observation noise. Targets are standardised inside; predictions
// come back in the caller's units.
//
// Hyperparameters theta = [log l_0..log l_{G-1}, log sf2, log sn2] (variances
// in standardised units) maximise the log marginal likelihood plus weak
// log-normal priors (length scales as in Hvarfner et al., ICML 2024), with
// NLopt's LD_LBFGS on the analytic gradient, bounded, from several starts
// including the previous optimum. Cholesky failures are met with jitter (x10
// up to a cap); when nothing works the previous hyperparameters are kept and
// a warning is recorded. Nothing here throws on numerical trouble.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <Eigen/Cholesky>
#include <Eigen/Core>

namespace autotune::gp {

struct FitOptions {
  int random_starts = 2;      // besides the previous optimum and the prior mode
  // Start from the prior mode and a short-scale point too; callers refitting
  // a grown data set may turn this off once a previous optimum exists.
  bool default_starts = true;
  int max_evaluations = 80;   // per start
  double min_length_scale = 0.03;
  double max_length_scale = 50.0;
  double min_noise = 1e-6;    // standardised variance floor
  double max_noise = 2.0;
  double min_signal = 0.05;
  double max_signal = 20.0;
  // false: keep the hyperparameters of the last fit and only condition on
  // the data (a fit with no optimum yet optimises all the same).
  bool optimise = true;
};

class GaussianProcess {
 public:
  // group[c] = the length-scale index of encoded column c (0-based, dense).
  explicit GaussianProcess(std::vector<int> column_group);

  int groups() const { return m_groups; }

  // Share of the signal variance in an additive part: the kernel becomes
  // sf2 * ((1 - a) * Matern(all groups) + a * mean over groups of
  // Matern(that group alone)), with the same length scales in both parts.
  // The additive part carries what one knob does to every configuration
  // (Duvenaud et al., NeurIPS 2011, "Additive Gaussian processes"), which a
  // product kernel learns only near the points that showed it. 0 (the
  // default) is the plain product kernel.
  void set_additive_share(double a);
  double additive_share() const { return m_additive; }
  std::size_t size() const { return static_cast<std::size_t>(m_x.rows()); }

  // Replaces the data (rows of X are points). Keeps the hyperparameters.
  // Every point gets the learned noise variance.
  void set_data(const Eigen::MatrixXd& x, const Eigen::VectorXd& y);
  // Per point, a multiple of the learned noise variance (after set_data):
  // a shorter, noisier measurement (a raced trial) weighs less. All >= 1.
  void set_noise_scale(const Eigen::VectorXd& scale);
  // Maximises the penalised marginal likelihood, then conditions. Returns
  // false when the posterior could not be formed (see warnings()).
  bool fit(std::mt19937_64& rng, const FitOptions& options = {});
  // Conditions on the data with the current hyperparameters (no fitting).
  bool condition();
  bool ready() const { return m_ready; }

  // Log marginal likelihood of the standardised targets (no prior), with its
  // gradient in theta when grad is non-null. -inf when no Cholesky succeeds.
  double log_likelihood(const Eigen::VectorXd& theta, Eigen::VectorXd* grad) const;
  // The same plus the log prior density (what fit() maximises).
  double log_posterior(const Eigen::VectorXd& theta, Eigen::VectorXd* grad) const;

  const Eigen::VectorXd& theta() const { return m_theta; }
  void set_theta(const Eigen::VectorXd& theta);
  Eigen::VectorXd length_scales() const;
  double noise_variance() const;  // in the caller's units

  // Posterior mean and latent variance (without the noise) at every row of xs,
  // in the caller's units. Requires ready().
  void predict(const Eigen::MatrixXd& xs, Eigen::VectorXd& mean, Eigen::VectorXd& var) const;
  // The same for the data points themselves.
  Eigen::VectorXd mean_at_data() const;

  // Kriging believer: a copy conditioned on extra points whose targets are
  // this model's posterior means there, less sds_under latent standard
  // deviations (0: the mean itself); hyperparameters unchanged.
  GaussianProcess with_believed(const Eigen::MatrixXd& xp, double sds_under = 0.0) const;

  const std::vector<std::string>& warnings() const { return m_warnings; }

 private:
  Eigen::MatrixXd scaled(const Eigen::MatrixXd& x, const Eigen::VectorXd& theta) const;
  Eigen::MatrixXd squared_distances(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b,
                                    const Eigen::VectorXd& theta) const;
  // K + noise on the standardised scale; LLT with jitter. False when all fail.
  bool decompose(const Eigen::VectorXd& theta, Eigen::LLT<Eigen::MatrixXd>& llt,
                 Eigen::MatrixXd* kernel_only, Eigen::MatrixXd* r2_out) const;
  void clamp_theta(Eigen::VectorXd& theta, const FitOptions& o) const;

  // Per group: the kernel of that group alone between rows of a and b.
  Eigen::MatrixXd additive_cross(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b,
                                 const Eigen::VectorXd& theta) const;

  std::vector<int> m_group;
  int m_groups = 0;
  double m_additive = 0.0;
  Eigen::MatrixXd m_x;
  Eigen::VectorXd m_y;          // standardised
  Eigen::VectorXd m_noise_scale;  // per point, times the learned noise variance
  double m_y_mean = 0.0, m_y_std = 1.0;
  std::vector<Eigen::MatrixXd> m_group_d2;  // per group: squared distances over its columns
  Eigen::VectorXd m_theta;
  bool m_have_optimum = false;
  Eigen::LLT<Eigen::MatrixXd> m_llt;
  Eigen::VectorXd m_alpha;
  bool m_ready = false;
  std::vector<std::string> m_warnings;
};

// Prior on log length scales: N(mu, sigma^2) with mu = log(G)/2 and
// sigma = sqrt(3): Hvarfner et al. 2024's dimension scaling, with their
// sqrt(2) offset dropped: at 6 dimensions it favoured length scales ~10 on
// [0,1] inputs and smoothed away the kinks of pipeline landscapes (median
// 0.98 -> 0.994 of the optimum at 30 trials on the loader-bound landscape).
double length_scale_prior_mean(int groups);

// Expected improvement over `best` for maximisation, and its logarithm
// computed without cancellation (Ament et al., NeurIPS 2023, "logEI").
double expected_improvement(double mean, double sd, double best);
double log_expected_improvement(double mean, double sd, double best);
// log(phi(z) + z Phi(z)), stable for very negative z.
double log_h(double z);

}  // namespace autotune::gp
