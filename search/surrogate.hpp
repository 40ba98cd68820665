#pragma once
// The model of the measurements that bo searches with and anneal screens its
// moves with: a GP (search/gp) on the log-throughput of `ok` trials, read by
// the space's encoding plus a categorical precision's rank, and the
// acquisition both rank candidates by. Failures are not in it: they feed the
// FeasibilityModel, whose P(fits) the acquisition weighs (SEARCH-NOTES).
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

  // The data: the ok observations' columns and log-throughputs, a raced
  // trial with kRacedNoiseScale times the noise variance. Keeps the
  // hyperparameters.
  void set_data(const std::vector<const Observation*>& ok);
  // set_data, then the hyperparameters refitted from the previous optimum
  // (fewer restarts once there are 30 points). False when no posterior
  // could be formed.
  bool fit(const std::vector<const Observation*>& ok, Rng& rng);

  gp::GaussianProcess& gp() { return m_gp; }
  const gp::GaussianProcess& gp() const { return m_gp; }

 private:
  const SearchSpace* m_space;
  // The precision's parameter and its rank per value, when it has one.
  std::optional<std::pair<std::size_t, std::vector<double>>> m_rank;
  gp::GaussianProcess m_gp;
};

// log(EI x P(fits)^kFeasibleWeight) from a candidate's log EI and P(fits)
// (P floored at 1e-12).
double acquisition(double log_ei, double p_fits);

}  // namespace autotune
