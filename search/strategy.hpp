#pragma once
// Strategies propose configurations and learn from outcomes (ask/tell).
//
// Contract, for every strategy:
//  - ask() returns a valid configuration (in bounds, satisfying the rules) that
//    has never been returned by ask() nor passed to tell() before; nullopt when
//    the strategy has nothing left to propose (finite space exhausted).
//    ask() may be called again before earlier proposals are told: those are
//    pending, and are never proposed twice.
//  - tell(config, outcome) is called exactly once per asked configuration, in
//    any order. It may also be called for a configuration that was not asked
//    in this process (replay of a journal on --resume): it then counts as
//    asked. Failed outcomes are data; a failed configuration is never proposed
//    again.
//  - Same seed and same outcomes -> same sequence of proposals.
//  - recommend() gives the configuration to report as best: by default the
//    best measured `ok` throughput; model-based strategies may use their
//    posterior mean among measured configurations.
// Throughput is in samples/s, larger is better.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/options.hpp"
#include "core/outcome.hpp"
#include "core/space.hpp"

namespace autotune {

struct Observation {
  Config config;
  Outcome outcome;
};

struct StrategyContext {
  const SearchSpace* space = nullptr;
  std::uint64_t seed = 0;
  int budget = 0;                // trials this run may spend; 0 when unknown
  std::vector<Config> initial;   // user's configurations, proposed first, in order
  double vram_limit_bytes = 0;   // 0 = none; lets model-based strategies learn memory
  double ram_limit_bytes = 0;
  // The strategy's declared options (StrategyInfo::options) as given under
  // `search.options.NAME`; make_strategy fills in the defaults of the rest.
  Options options;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string_view name() const = 0;
  virtual std::optional<Config> ask() = 0;
  virtual void tell(const Config& config, const Outcome& outcome) = 0;
  virtual std::optional<Config> recommend() const = 0;
  // Diagnostics since the last call (a model that could not be fitted, a
  // fallback taken), in plain words; the tuner journals them as notes.
  virtual std::vector<std::string> take_notes() { return {}; }
  // What the configuration the last ask() returned was proposed as, in a
  // word the journal records beside it ("initial": a configuration of the
  // user's; bo: "design", "fill", "model", "final", "polish"; anneal:
  // "probe", "move", "jump"; "random", "grid", "heuristic"); empty when the
  // strategy does not say.
  virtual std::string_view proposed_as() const { return {}; }
  // Whether more trials are unlikely to find anything better (the tuner's
  // `budget: {until_converged: true}` stops then). Never during the strategy's
  // initial design; false for strategies that cannot tell (random, grid).
  virtual bool converged() const { return false; }
};

// Book-keeping every strategy needs: the asked set, pending proposals, the
// history, initial configurations first. Subclasses implement propose() and,
// when they learn, observe().
class StrategyBase : public Strategy {
 public:
  explicit StrategyBase(const StrategyContext& ctx);

  std::optional<Config> ask() final;
  void tell(const Config& config, const Outcome& outcome) final;
  std::optional<Config> recommend() const override;
  std::string_view proposed_as() const override { return m_proposed_as; }

 protected:
  // A valid configuration not yet asked, or nullopt when none is left.
  virtual std::optional<Config> propose() = 0;
  // Called from tell() after the history is updated.
  virtual void observe(const Observation& /*obs*/) {}
  // Sets proposed_as() for the configuration propose() is about to return
  // (ask() sets "initial" itself, and the strategy's name when propose()
  // sets nothing). A string literal: the view is kept.
  void proposing(std::string_view as) { m_proposed_as = as; }

  bool was_asked(const Config& c) const { return m_asked.count(c) > 0; }
  bool is_pending(const Config& c) const { return m_pending.count(c) > 0; }
  const std::set<Config>& pending() const { return m_pending; }
  const std::vector<Observation>& history() const { return m_history; }
  // Trials asked so far: measured and pending.
  std::size_t asked() const { return m_history.size() + m_pending.size(); }
  // A uniformly random valid configuration not yet asked (enumerating the
  // remaining ones when random draws keep hitting asked ones).
  std::optional<Config> random_unasked();
  // Every valid configuration, cached (nullopt when the space is too large).
  const std::optional<std::vector<Config>>& valid_configs() const;

  const SearchSpace& m_space;
  StrategyContext m_ctx;
  Rng m_rng;

 private:
  std::set<Config> m_asked;
  std::set<Config> m_pending;
  std::vector<Observation> m_history;
  std::size_t m_next_initial = 0;
  std::string_view m_proposed_as;
  mutable bool m_enumerated = false;
  mutable std::optional<std::vector<Config>> m_valid;
};

using StrategyFactory = std::function<std::unique_ptr<Strategy>(const StrategyContext&)>;

struct StrategyInfo {
  std::string name;
  std::string summary;
  StrategyFactory make;
  // The options it takes (`search: {options: {NAME: {key: value}}}`),
  // declared as workloads and executors declare theirs; each default is the
  // value the strategy uses when none is given.
  std::vector<OptionSpec> options = {};
};

// All registered strategies, in a stable order.
const std::vector<StrategyInfo>& strategy_catalog();
const StrategyInfo* find_strategy(std::string_view name);
std::vector<std::string> strategy_names();
// Throws std::invalid_argument for an unknown name. The context's options
// are the ones given; the declared defaults fill in the rest.
std::unique_ptr<Strategy> make_strategy(std::string_view name, const StrategyContext& ctx);

}  // namespace autotune
