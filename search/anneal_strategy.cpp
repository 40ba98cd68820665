// anneal: simulated annealing over the integer domains.
//
// The walk starts from the best of a few random probes (max(3, budget/8)).
// A move changes one parameter: most of the time a step of s positions along
// an ordered domain, s uniform in 1..smax with smax shrinking with the
// temperature from 30% of the domain to 1 (adjacent values, as
// SearchSpace::neighbours lists them); otherwise any value of that
// parameter (categoricals always). When no such move is left, any unasked
// neighbour, then a random restart. A
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
    const int probes = std::max(3, m_horizon / 8);
    if (!m_current || static_cast<int>(history().size() + pending().size()) < probes) return random_unasked();
    for (int attempt = 0; attempt < 32; ++attempt)
      if (auto c = move_from(*m_current)) return c;
    if (auto c = any_neighbour(*m_current)) return c;
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
    if (!m_current || static_cast<int>(history().size()) <= std::max(3, m_horizon / 8)) {
      if (m_current && y <= m_current_y) return;
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
    std::uniform_int_distribution<std::size_t> dim(0, m_space.dims() - 1);
    const std::size_t d = dim(m_rng);
    const int n = static_cast<int>(m_space.param(d).values.size());
    if (n < 2) return std::nullopt;
    Config c = from;
    if (m_space.param(d).scale != Scale::categorical && u(m_rng) < kAdjacentShare) {
      const double reach = 0.3 * n * std::sqrt(temperature() / kT0);
      const int smax = std::max(1, static_cast<int>(std::lround(reach)));
      std::uniform_int_distribution<int> step(1, smax);
      const int s = step(m_rng) * (u(m_rng) < 0.5 ? -1 : 1);
      c[d] = std::clamp(from[d] + s, 0, n - 1);
    } else {
      std::uniform_int_distribution<int> val(0, n - 1);
      c[d] = val(m_rng);
    }
    if (c == from || was_asked(c) || !m_space.is_valid(c)) return std::nullopt;
    return c;
  }

  std::optional<Config> any_neighbour(const Config& from) {
    std::vector<Config> nbs;
    for (auto& nb : m_space.neighbours(from))
      if (!was_asked(nb)) nbs.push_back(std::move(nb));
    if (nbs.empty()) return std::nullopt;
    std::uniform_int_distribution<std::size_t> pick(0, nbs.size() - 1);
    return nbs[pick(m_rng)];
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
