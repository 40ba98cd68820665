// heuristic: what a person following the tuning guides does, as the baseline
// a search must beat. Start from the smallest settings (or the user's first
// initial configuration), raise batch_size while it fits and helps, then
// num_workers, prefetch_factor, pin_memory, precision, grad_accum, then any
// other declared parameter, one at a time, keeping each improvement. Ordered
// parameters are walked upward until a step fails or stops helping;
// categorical ones have every value tried. Ordered knobs are raised the way
// the guides say, by doubling (workers 0, 2, 4, 8, ...; batch sizes by their
// next value), and a person tries one more step after a step that did not
// help before giving up on a knob; a failure (out of memory) ends the knob at
// once. When the recipe is done the strategy has nothing more to propose.
#include <algorithm>

#include "core/knobs.hpp"
#include "search/strategies.hpp"

namespace autotune {
namespace {

class HeuristicStrategy final : public StrategyBase {
 public:
  explicit HeuristicStrategy(const StrategyContext& ctx) : StrategyBase(ctx) {
    // The recipe's order is the knob table's (core/knobs.hpp).
    std::vector<const KnobInfo*> recipe;
    for (const auto& k : knob_table()) recipe.push_back(&k);
    std::stable_sort(recipe.begin(), recipe.end(),
                     [](const KnobInfo* a, const KnobInfo* b) { return a->recipe_rank < b->recipe_rank; });
    for (const KnobInfo* k : recipe)
      if (auto d = m_space.index_of(k->name)) m_order.push_back(*d);
    for (std::size_t d = 0; d < m_space.dims(); ++d)
      if (std::find(m_order.begin(), m_order.end(), d) == m_order.end()) m_order.push_back(d);
  }
  std::string_view name() const override { return "heuristic"; }

 protected:
  std::optional<Config> propose() override {
    if (!m_incumbent) {
      if (!m_started) {
        m_started = true;
        Config start(m_space.dims(), 0);
        if (m_space.is_valid(start) && !was_asked(start)) return start;
      }
      // The start did not work out (or was taken): any valid point to begin from.
      if (pending().empty()) return random_unasked();
      return std::nullopt;
    }
    if (!pending().empty()) return std::nullopt;  // the recipe is sequential
    while (m_stage < m_order.size()) {
      if (auto c = next_in_stage()) return c;
      next_stage();
    }
    return std::nullopt;
  }

  void observe(const Observation& obs) override {
    const bool better =
        obs.outcome.ok() && (!m_incumbent || obs.outcome.throughput > m_best_throughput);
    if (!m_incumbent) {
      if (obs.outcome.ok()) {
        m_incumbent = obs.config;
        m_best_throughput = obs.outcome.throughput;
      }
      return;
    }
    if (better) {
      m_incumbent = obs.config;
      m_best_throughput = obs.outcome.throughput;
      m_probe.reset();
      m_misses = 0;
    } else if (is_ordered(current_dim())) {
      // No gain: one more step up from the value tried; a failure ends the knob.
      if (obs.outcome.ok() && m_misses == 0) {
        m_probe = obs.config;
        m_misses = 1;
      } else {
        next_stage();
      }
    }
  }

 private:
  std::size_t current_dim() const { return m_order[std::min(m_stage, m_order.size() - 1)]; }
  bool is_ordered(std::size_t d) const { return m_space.param(d).scale != Scale::categorical; }

  void next_stage() {
    ++m_stage;
    m_tried_in_stage.clear();
    m_probe.reset();
    m_misses = 0;
  }

  // The next value up by doubling: the first one at least max(2x, x + 2) for
  // integers, the next position otherwise.
  int next_up(std::size_t d, int from) const {
    const auto& vals = m_space.param(d).values;
    if (!is_int(vals[static_cast<std::size_t>(from)])) return from + 1;
    const double x = to_number(vals[static_cast<std::size_t>(from)]);
    const double want = std::max(2.0 * x, x + 2.0);
    for (int k = from + 1; k < static_cast<int>(vals.size()); ++k)
      if (to_number(vals[static_cast<std::size_t>(k)]) >= want) return k;
    return static_cast<int>(vals.size()) - 1 > from ? static_cast<int>(vals.size()) - 1 : from + 1;
  }

  std::optional<Config> next_in_stage() {
    const std::size_t d = m_order[m_stage];
    const int n = static_cast<int>(m_space.param(d).values.size());
    if (is_ordered(d)) {
      // Upward from the incumbent (or from the step that did not help),
      // skipping values the rules forbid here.
      const Config& base = m_probe ? *m_probe : *m_incumbent;
      for (int k = next_up(d, base[d]); k < n; k = next_up(d, k)) {
        Config c = *m_incumbent;
        c[d] = k;
        if (!m_space.is_valid(c)) continue;
        if (was_asked(c)) return std::nullopt;
        return c;
      }
      return std::nullopt;
    }
    for (int k = 0; k < n; ++k) {
      if (m_tried_in_stage.count(k)) continue;
      Config c = *m_incumbent;
      c[d] = k;
      m_tried_in_stage.insert(k);
      if (k != (*m_incumbent)[d] && m_space.is_valid(c) && !was_asked(c)) return c;
    }
    return std::nullopt;
  }

  std::vector<std::size_t> m_order;
  std::size_t m_stage = 0;
  std::set<int> m_tried_in_stage;
  bool m_started = false;
  std::optional<Config> m_incumbent;
  std::optional<Config> m_probe;  // a step up that did not help, to step on from
  int m_misses = 0;
  double m_best_throughput = 0.0;
};

}  // namespace

std::unique_ptr<Strategy> make_heuristic_strategy(const StrategyContext& ctx) {
  return std::make_unique<HeuristicStrategy>(ctx);
}

}  // namespace autotune
