#pragma once
// Feasibility of configurations before they are run, learned from outcomes.
//
// Three sources, strongest first:
//  1. Monotone memory structure (SEARCH-NOTES): a configuration that uses at
//     least as much memory as one that failed for memory (oom, host_oom,
//     invalid) is infeasible; one that uses at most as much as one that ran
//     is feasible. "At least as much" = every memory-growing parameter
//     (batch_size, num_workers, prefetch_factor, pin_memory, precision with
//     fp32 >= tf32 >= fp16 = bf16) at least as large, grad_accum anything
//     (it repeats the same micro-batch), every other parameter equal.
//  2. Measured memory: when the context gives a vram (ram) limit and trials
//     report vram_bytes (ram_bytes), a GP on log(bytes) predicts
//     P(bytes < limit); memory failures enter as points over the limit. A
//     ridge-regularised linear trend in the encoding comes first (memory is
//     close to linear in log batch size), so the GP extrapolates sensibly
//     towards batch sizes it has not seen.
//  3. Otherwise a ridge-regularised logistic regression on the encoding
//     (ok = 1, resource failure = 0).
// Flaky failures (crash, error) say nothing about fit and are ignored.
#include <optional>
#include <random>
#include <vector>

#include <Eigen/Core>

#include "search/gp/gaussian_process.hpp"
#include "search/space.hpp"
#include "search/strategy.hpp"

namespace autotune {

class FeasibilityModel {
 public:
  FeasibilityModel(const SearchSpace& space, double vram_limit, double ram_limit);

  // Refit from the whole history (cheap: a few Newton steps and small GPs).
  void update(const std::vector<Observation>& history, std::mt19937_64& rng);

  // P(feasible) for each configuration; x holds their encodings as rows.
  Eigen::VectorXd probability(const std::vector<const Config*>& configs, const Eigen::MatrixXd& x) const;

  // c uses at least as much memory as f (hard rule 1).
  bool uses_at_least(const Config& c, const Config& f) const;
  bool known_infeasible(const Config& c) const;
  bool known_feasible(const Config& c) const;
  bool any_failures() const { return !m_failed.empty(); }

 private:
  struct MemoryModel {
    std::string metric;
    double log_limit = 0.0;
    Eigen::VectorXd trend;  // [bias, encoded...]: ridge fit of log(bytes)
    std::optional<gp::GaussianProcess> gp;  // on the residuals of the trend
    std::size_t fitted_size = 0;            // points at the last hyperparameter fit
  };
  void fit_logistic(const std::vector<Eigen::VectorXd>& x, const std::vector<double>& label);
  void fit_memory(MemoryModel& m, const std::vector<Observation>& history,
                  std::initializer_list<Status> over_limit, std::mt19937_64& rng);

  const SearchSpace& m_space;
  std::vector<bool> m_is_memory;             // per parameter: ordered by memory use
  std::vector<bool> m_is_neutral;            // per parameter: no effect on memory (grad_accum)
  std::vector<std::vector<double>> m_rank;   // per parameter, per value
  std::vector<Config> m_failed;              // memory failures
  std::vector<Config> m_fitted;              // ran ok
  // Per categorical parameter, per value: the workload cannot run it (it
  // errored or crashed at least twice and never ran), e.g. a precision the
  // cpu workload does not have.
  std::vector<std::vector<bool>> m_unusable;
  Eigen::VectorXd m_logit_w;                 // [bias, encoded...]; empty = no model
  std::vector<MemoryModel> m_memory;
};

}  // namespace autotune
