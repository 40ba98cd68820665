// anneal: simulated annealing over the integer domains.
//
// A move changes one parameter: to an adjacent value most of the time
// (SearchSpace::neighbours), to any value of one parameter otherwise. A
// measured move is accepted when it is better, or with probability
// exp(delta / T) where delta is the change in log-throughput (a relative
// change, so the schedule does not depend on the workload's units). T falls
// geometrically from kT0 to kTEnd over the budget (100 trials when unknown).
// After a stretch without a new best the walk restarts, alternately from the
// best point and from a random one. Failed trials never become the current
// point. Proposals come from the current point whether or not earlier ones
// are still pending; the asked set keeps them distinct.
#include <algorithm>
#include <cmath>

#include "search/strategies.hpp"

namespace autotune {
namespace {

constexpr double kT0 = 0.10;     // accept a 10% worse move with p = 1/e at the start
constexpr double kTEnd = 0.004;  // ~greedy at the end
constexpr double kAdjacentShare = 0.8;

class AnnealStrategy final : public StrategyBase {
 public:
  explicit AnnealStrategy(const StrategyContext& ctx) : StrategyBase(ctx) {
    m_horizon = ctx.budget > 0 ? ctx.budget : 100;
    m_patience = std::max(5, m_horizon / 5);
  }
  std::string_view name() const override { return "anneal"; }

 protected:
  std::optional<Config> propose() override {
    if (!m_current) return random_unasked();
    for (int attempt = 0; attempt < 32; ++attempt)
      if (auto c = move_from(*m_current)) return c;
    // Every move from here is used up: jump.
    m_current.reset();
    return random_unasked();
  }

  void observe(const Observation& obs) override {
    ++m_steps;
    if (!obs.outcome.ok() || !(obs.outcome.throughput > 0)) {
      stagnate();
      return;
    }
    const double y = std::log(obs.outcome.throughput);
    if (!m_best || y > m_best_y) {
      m_best = obs.config;
      m_best_y = y;
      m_since_best = 0;
    } else {
      stagnate();
    }
    if (!m_current) {
      m_current = obs.config;
      m_current_y = y;
      return;
    }
    const double delta = y - m_current_y;
    std::uniform_real_distribution<double> u(0.0, 1.0);
    if (delta >= 0 || u(m_rng) < std::exp(delta / temperature())) {
      m_current = obs.config;
      m_current_y = y;
    }
  }

 private:
  double temperature() const {
    const double f = std::min(1.0, static_cast<double>(m_steps) / m_horizon);
    return kT0 * std::pow(kTEnd / kT0, f);
  }

  void stagnate() {
    if (++m_since_best < m_patience) return;
    m_since_best = 0;
    if (m_restart_from_best && m_best) {
      m_current = m_best;
      m_current_y = m_best_y;
    } else {
      m_current.reset();  // the next ok outcome of a random proposal becomes current
    }
    m_restart_from_best = !m_restart_from_best;
  }

  std::optional<Config> move_from(const Config& from) {
    std::uniform_real_distribution<double> u(0.0, 1.0);
    if (u(m_rng) < kAdjacentShare) {
      std::vector<Config> nbs;
      for (auto& nb : m_space.neighbours(from))
        if (!was_asked(nb)) nbs.push_back(std::move(nb));
      if (!nbs.empty()) {
        std::uniform_int_distribution<std::size_t> pick(0, nbs.size() - 1);
        return nbs[pick(m_rng)];
      }
    }
    // Any value of one parameter.
    std::uniform_int_distribution<std::size_t> dim(0, m_space.dims() - 1);
    const std::size_t d = dim(m_rng);
    const int n = static_cast<int>(m_space.param(d).values.size());
    if (n < 2) return std::nullopt;
    std::uniform_int_distribution<int> val(0, n - 1);
    Config c = from;
    c[d] = val(m_rng);
    if (c == from || was_asked(c) || !m_space.is_valid(c)) return std::nullopt;
    return c;
  }

  int m_horizon = 100;
  int m_patience = 20;
  int m_steps = 0;
  int m_since_best = 0;
  bool m_restart_from_best = true;
  std::optional<Config> m_current;
  double m_current_y = 0.0;
  std::optional<Config> m_best;
  double m_best_y = 0.0;
};

}  // namespace

std::unique_ptr<Strategy> make_anneal_strategy(const StrategyContext& ctx) {
  return std::make_unique<AnnealStrategy>(ctx);
}

}  // namespace autotune
