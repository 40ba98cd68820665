// anneal: simulated annealing over the integer domains.
//
// The walk starts from the best of a few probes: the user's initial
// configurations, then a spread design (search/initial_design.hpp), as many
// as bo's initial design (initial_design_size: d+1, at most 5 and a third of the
// budget; 5 of 15 and of 30, 7 of 30 once). Fewer (budget/8: 3 of 30) left the walk
// starting from the best of three points, often in a poor basin it then
// spent the budget climbing (issue 12: 0.911 / 0.603 median / p10 at 30
// trials on the failure landscapes, 0.915 / 0.705 with bo's design size). A move changes one parameter: most of the time a step of
// s positions along an ordered domain, s uniform in 1..smax with smax
// shrinking with the temperature from 30% of the domain to 1; otherwise any
// value of that parameter (categoricals always). Moves go through the same
// FeasibilityModel as bo (issue 12): a move into a known wall (at least as
// much of a memory as a failure, along the knobs that grow it) or onto an
// excluded value is never made, and a move the model finds risky is made
// only with probability P(fits), so the walk does not run into the same wall
// twice. When no such move is left, any usable unasked neighbour, then a
// restart. Two things make the walk spend its moves where they pay (issue
// 12): the knob a move changes is drawn in proportion to how much moves
// along it have changed the throughput so far (mean |change in log| plus a
// prior of 10% for a knob not yet moved: adaptive coordinate choice, so a
// knob that does nothing in this regime, precision in a loader-bound job,
// stops taking a sixth of the moves), and a step up along a knob that the
// feasibility model says would not fit is paid for by a step down along
// another knob that grows the same memory (a trade: more workers for a
// shorter queue), because the best configurations of a memory-bound pipeline
// sit on the wall, where a single-knob move can only go back. Together,
// on the six failure landscapes over 200 seeds not used to choose them:
// @30 mean 0.874 -> 0.897, 10th percentile 0.685 -> 0.730; @15 mean
// 0.752 -> 0.779 (each alone gave less than half of that); on the analytic
// landscapes of bench/landscapes.hpp, which played no part, within 0.006 on
// loader-bound and equal or better on the other two
// (memory-tight @30 median / p10 0.957 / 0.550 -> 1.000 / 0.814).
// A measured move is accepted when it is better, or with
// probability exp(delta / T) where delta is the change in log-throughput (a
// relative change, so the schedule does not depend on the workload's units).
// T falls geometrically from kT0 to kTEnd over the budget (100 trials when
// unknown). After a stretch without a new best the walk restarts from the
// best feasible region: alternately the best point and the runner-up among
// distinct measured ones. Failed trials never become the current point.
// Proposals come from the current point whether or not earlier ones are
// still pending; the asked set keeps them distinct.
//
// Moves are pre-screened (surrogate-assisted annealing, as in
// metamodel-assisted evolution strategies): a proposal draws up to
// kScreenedMoves distinct moves by the rules above and makes the one that a
// GP on the measured log-throughputs (bo's Surrogate, search/surrogate.hpp) scores best
// by log EI + 2 log P(fits). The walk, its acceptance and its restarts are
// unchanged; what changes is that a move the measurements already call poor
// (inline loading once it was slow, a precision that did nothing) is seldom
// the one measured.
#include <algorithm>
#include <cmath>
#include <map>

#include "search/feasibility.hpp"
#include "search/initial_design.hpp"
#include "search/strategies.hpp"
#include "search/surrogate.hpp"

namespace autotune {
namespace {

constexpr double kT0 = 0.10;     // accept a 10% worse move with p = 1/e at the start
constexpr double kTEnd = 0.004;  // ~greedy at the end
constexpr double kAdjacentShare = 0.8;
// The effect (|change in log-throughput|) a knob is credited with before any
// move along it was measured, and added to every knob's tally: a knob that
// showed nothing keeps being tried, less often.
constexpr double kPriorEffect = 0.1;
// Pre-screening: each proposal draws this many distinct moves and makes the
// one a GP on the measurements expects most of. On the six failure
// landscapes (100 seeds not used to choose it, 1000-1099) @30 median / p10
// 0.919 / 0.719 -> 1.000 / 0.858, @15 0.795 / 0.549 -> 0.880 / 0.593; on
// the 24 held-out landscapes (x 20 seeds) @30 0.926 / 0.735 -> 0.994 /
// 0.874. 16 moves did no better than 8 (40 seeds: @30 1.000 / 0.880 against
// 1.000 / 0.876).
constexpr std::size_t kScreenedMoves = 8;

// The constants above that a user may set (`search: {options: {anneal: {...}}}`).
struct AnnealOptions {
  double t_start = kT0;
  double t_end = kTEnd;
  double adjacent_share = kAdjacentShare;
  std::size_t screened_moves = kScreenedMoves;

  static AnnealOptions from(const Options& o) {
    AnnealOptions a;
    a.t_start = o.get_number("t_start");
    a.t_end = o.get_number("t_end");
    a.adjacent_share = o.get_number("adjacent_share");
    a.screened_moves = static_cast<std::size_t>(o.get_int("screened_moves"));
    return a;
  }
};

class AnnealStrategy final : public StrategyBase {
 public:
  explicit AnnealStrategy(const StrategyContext& ctx)
      : StrategyBase(ctx),
        m_opt(AnnealOptions::from(ctx.options)),
        m_feasibility(m_space, ctx.vram_limit_bytes, ctx.ram_limit_bytes),
        m_model(m_space) {
    m_horizon = ctx.budget > 0 ? ctx.budget : 100;
    m_patience = std::max(5, m_horizon / 5);
    m_probes = initial_design_size(m_space, ctx.budget);
    m_effect_sum.assign(m_space.dims(), 0.0);
    m_effect_count.assign(m_space.dims(), 0);
  }
  std::string_view name() const override { return "anneal"; }

 protected:
  std::optional<Config> propose() override {
    const int asked = static_cast<int>(this->asked());
    if (asked < m_probes || !m_current) {
      proposing("probe");
      if (auto c = probe(m_probes - asked)) return c;
    }
    proposing("jump");
    if (!m_current) return random_usable();
    proposing("move");
    if (auto c = screened_move(*m_current)) return c;
    if (auto c = any_neighbour(*m_current)) return c;
    // Every move from here is used up: jump.
    m_current.reset();
    proposing("jump");
    return random_usable();
  }

  // Its own sign of convergence: two restarts in a row (from the best point,
  // then from the runner-up) found nothing better.
  bool converged() const override { return m_fruitless_restarts >= 2; }

  void observe(const Observation& obs) override {
    ++m_steps;
    m_feasibility.update(history());
    if (!obs.outcome.ok() || !(obs.outcome.throughput > 0)) {
      m_moves.erase(obs.config);
      stagnate();
      return;
    }
    const double y = std::log(obs.outcome.throughput);
    if (!m_best || y > m_best_y) {
      m_best = obs.config;
      m_best_y = y;
      m_since_best = 0;
      m_fruitless_restarts = 0;
    } else {
      stagnate();
    }
    if (!m_current || static_cast<int>(history().size()) <= m_probes) {
      if (m_current && y <= m_current_y) return;
      m_current = obs.config;
      m_current_y = y;
      return;
    }
    const double delta = y - m_current_y;
    std::uniform_real_distribution<double> u(0.0, 1.0);
    if (auto it = m_moves.find(obs.config); it != m_moves.end()) {
      m_effect_sum[it->second.dim] += std::abs(y - it->second.from_y);
      ++m_effect_count[it->second.dim];
      m_moves.erase(it);
    }
    if (delta >= 0 || u(m_rng) < std::exp(delta / temperature())) {
      m_current = obs.config;
      m_current_y = y;
    }
  }

 private:
  double temperature() const {
    const double f = std::min(1.0, static_cast<double>(m_steps) / m_horizon);
    return m_opt.t_start * std::pow(m_opt.t_end / m_opt.t_start, f);
  }

  void stagnate() {
    if (++m_since_best < m_patience) return;
    m_since_best = 0;
    ++m_fruitless_restarts;
    // Restart in the best feasible region: the best point, or the best
    // measured point other than it (a second basin), in turn.
    const Observation* first = nullptr;
    const Observation* second = nullptr;
    for (const auto& o : history()) {
      if (!o.outcome.ok() || !(o.outcome.throughput > 0)) continue;
      if (!first || o.outcome.throughput > first->outcome.throughput) {
        second = first;
        first = &o;
      } else if (!second || o.outcome.throughput > second->outcome.throughput) {
        second = &o;
      }
    }
    const Observation* from = m_restart_from_best || !second ? first : second;
    if (from) {
      m_current = from->config;
      m_current_y = std::log(from->outcome.throughput);
    }
    m_restart_from_best = !m_restart_from_best;
  }

  // A risky configuration is proposed only with probability P(fits); a
  // known wall or an excluded value never.
  bool acceptable(const Config& c) {
    if (was_asked(c) || !m_space.is_valid(c) || m_feasibility.known_infeasible(c)) return false;
    std::uniform_real_distribution<double> u(0.0, 1.0);
    return u(m_rng) < m_feasibility.probability(c);
  }

  // The next probe: the spread design laid out on first use, skipping what
  // the model has since ruled out.
  std::optional<Config> probe(int wanted) {
    if (!m_design_made && wanted > 0) {
      m_design_made = true;
      std::vector<Config> taken;
      for (const auto& o : history()) taken.push_back(o.config);
      for (const auto& c : pending()) taken.push_back(c);
      const auto& all = valid_configs();
      m_design = spread_design(m_space, wanted, taken, m_rng, [this](const Config& c) { return !was_asked(c); },
                               all ? &*all : nullptr);
    }
    while (m_next_design < m_design.size()) {
      const Config c = m_design[m_next_design++];
      if (!was_asked(c) && !m_feasibility.known_infeasible(c)) return c;
    }
    return std::nullopt;
  }

  std::optional<Config> random_usable() {
    for (int t = 0; t < 64; ++t) {
      auto c = random_unasked();
      if (!c) return std::nullopt;
      if (acceptable(*c)) return c;
    }
    return random_unasked();
  }

  // A move drawn from a point, and the knob it changed (none for a trade:
  // two knobs moved, credited to neither).
  struct Drawn {
    Config config;
    std::optional<std::size_t> dim;
  };

  // Up to `screened_moves` distinct moves from `from` (each drawn as below),
  // and the one a GP on the measured log-throughputs expects most of (log EI
  // + 2 log P(fits), as bo scores them): pre-screening, so that a measured
  // move is seldom one the measurements already say is poor. With fewer than
  // three measurements, or a GP that cannot be fitted, the first move.
  std::optional<Config> screened_move(const Config& from) {
    std::vector<Drawn> moves;
    for (int attempt = 0; attempt < 64 && moves.size() < m_opt.screened_moves; ++attempt)
      if (auto m = move_from(from); m && std::none_of(moves.begin(), moves.end(), [&](const Drawn& o) {
            return o.config == m->config;
          }))
        moves.push_back(std::move(*m));
    if (moves.empty()) return std::nullopt;
    std::size_t pick = 0;
    if (moves.size() > 1)
      if (const auto s = surrogate_scores(moves))
        pick = static_cast<std::size_t>(std::max_element(s->begin(), s->end()) - s->begin());
    const Drawn& made = moves[pick];
    if (made.dim) m_moves[made.config] = Move{*made.dim, m_current_y};
    return made.config;
  }

  std::optional<std::vector<double>> surrogate_scores(const std::vector<Drawn>& moves) {
    std::vector<const Observation*> ok;
    for (const auto& o : history())
      if (o.outcome.ok() && o.outcome.throughput > 0) ok.push_back(&o);
    if (ok.size() < 3 || !m_model.fit(ok, m_rng)) return std::nullopt;
    const double best = m_model.mean_at_data().maxCoeff();
    Eigen::MatrixXd x(static_cast<Eigen::Index>(moves.size()), m_model.width());
    std::vector<const Config*> configs;
    for (std::size_t i = 0; i < moves.size(); ++i) {
      x.row(static_cast<Eigen::Index>(i)) = m_model.columns(moves[i].config).transpose();
      configs.push_back(&moves[i].config);
    }
    Eigen::VectorXd mean, var;
    m_model.predict(x, mean, var);
    const Eigen::VectorXd p = m_feasibility.probability(configs);
    std::vector<double> s(moves.size());
    for (std::size_t i = 0; i < moves.size(); ++i) {
      const auto k = static_cast<Eigen::Index>(i);
      s[i] = acquisition(gp::log_expected_improvement(mean[k], std::sqrt(var[k]), best), p[k]);
    }
    return s;
  }

  std::optional<Drawn> move_from(const Config& from) {
    std::uniform_real_distribution<double> u(0.0, 1.0);
    std::vector<double> weight(m_space.dims());
    for (std::size_t e = 0; e < weight.size(); ++e)
      weight[e] = (m_effect_sum[e] + kPriorEffect) / static_cast<double>(m_effect_count[e] + 1);
    std::discrete_distribution<std::size_t> dim(weight.begin(), weight.end());
    const std::size_t d = dim(m_rng);
    const int n = static_cast<int>(m_space.param(d).values.size());
    if (n < 2) return std::nullopt;
    Config c = from;
    if (m_space.param(d).scale != Scale::categorical && u(m_rng) < m_opt.adjacent_share) {
      const double reach = 0.3 * n * std::sqrt(temperature() / m_opt.t_start);
      const int smax = std::max(1, static_cast<int>(std::lround(reach)));
      std::uniform_int_distribution<int> step(1, smax);
      const int s = step(m_rng) * (u(m_rng) < 0.5 ? -1 : 1);
      c[d] = std::clamp(from[d] + s, 0, n - 1);
    } else {
      std::uniform_int_distribution<int> val(0, n - 1);
      c[d] = val(m_rng);
    }
    if (c == from) return std::nullopt;
    if (!acceptable(c)) {
      if (m_space.param(d).scale == Scale::categorical || c[d] < from[d]) return std::nullopt;
      if (auto t = trade(from, c, d)) return Drawn{std::move(*t), std::nullopt};
      return std::nullopt;
    }
    return Drawn{std::move(c), d};
  }

  // A step up along knob d that would not fit, paid for by one step down
  // along another ordered knob that the same memory depends on; nullopt when
  // no such pair is usable.
  std::optional<Config> trade(const Config& from, const Config& up, std::size_t d) {
    std::vector<std::size_t> others;
    for (std::size_t e = 0; e < m_space.dims(); ++e) {
      if (e == d || from[e] == 0 || m_space.param(e).scale == Scale::categorical) continue;
      for (auto kind : {MemoryKind::device, MemoryKind::host})
        if (m_feasibility.depends_on(kind, d) && m_feasibility.depends_on(kind, e)) {
          others.push_back(e);
          break;
        }
    }
    std::shuffle(others.begin(), others.end(), m_rng);
    for (std::size_t e : others) {
      Config c = up;
      c[e] = from[e] - 1;
      if (acceptable(c)) return c;
    }
    return std::nullopt;
  }

  std::optional<Config> any_neighbour(const Config& from) {
    std::vector<Config> nbs;
    for (auto& nb : m_space.neighbours(from))
      if (!was_asked(nb) && !m_feasibility.known_infeasible(nb)) nbs.push_back(std::move(nb));
    if (nbs.empty()) return std::nullopt;
    std::uniform_int_distribution<std::size_t> pick(0, nbs.size() - 1);
    return nbs[pick(m_rng)];
  }

  // A proposal made by a move: the knob it changed and the log-throughput
  // of the point it moved from, to credit the knob when the outcome comes.
  struct Move {
    std::size_t dim = 0;
    double from_y = 0.0;
  };
  std::map<Config, Move> m_moves;
  std::vector<double> m_effect_sum;  // per knob: sum of |change in log-throughput| its moves made
  std::vector<int> m_effect_count;   // per knob: measured moves along it
  const AnnealOptions m_opt;
  FeasibilityModel m_feasibility;
  Surrogate m_model;  // the screen's, refitted at each screened move
  bool m_design_made = false;
  std::vector<Config> m_design;
  std::size_t m_next_design = 0;
  int m_horizon = 100;
  int m_probes = 4;
  int m_patience = 20;
  int m_steps = 0;
  int m_since_best = 0;
  bool m_restart_from_best = true;
  int m_fruitless_restarts = 0;  // restarts since the last new best
  std::optional<Config> m_current;
  double m_current_y = 0.0;
  std::optional<Config> m_best;
  double m_best_y = 0.0;
};

}  // namespace

std::vector<OptionSpec> anneal_options() {
  const AnnealOptions d;
  return {
      {"t_start", OptionType::number, d.t_start,
       "the temperature at the start: a move this much worse (as a share) is taken with probability 1/e", {}, 1e-6, 10.0},
      {"t_end", OptionType::number, d.t_end, "the temperature at the end of the budget", {}, 1e-9, 10.0},
      {"adjacent_share", OptionType::number, d.adjacent_share,
       "the share of moves along an ordered knob that go to a nearby value (the rest: anywhere)", {}, 0.0, 1.0},
      {"screened_moves", OptionType::integer, static_cast<std::int64_t>(d.screened_moves),
       "moves drawn per proposal, of which the one a model of the measurements expects most of is made", {}, 1.0,
       64.0},
  };
}

std::unique_ptr<Strategy> make_anneal_strategy(const StrategyContext& ctx) {
  return std::make_unique<AnnealStrategy>(ctx);
}

}  // namespace autotune
