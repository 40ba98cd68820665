#include "search/strategy.hpp"

#include <stdexcept>

namespace autotune {

StrategyBase::StrategyBase(const StrategyContext& ctx)
    : m_space(*ctx.space), m_ctx(ctx), m_rng(ctx.seed) {}

std::optional<Config> StrategyBase::ask() {
  std::optional<Config> c;
  while (m_next_initial < m_ctx.initial.size() && !c) {
    const Config& init = m_ctx.initial[m_next_initial++];
    if (!was_asked(init) && m_space.is_valid(init)) c = init;
  }
  if (c) {
    m_proposed_as = "initial";
  } else {
    m_proposed_as = {};
    c = propose();
    if (m_proposed_as.empty()) m_proposed_as = name();
  }
  if (!c) return std::nullopt;
  if (was_asked(*c) || !m_space.is_valid(*c))
    throw std::logic_error(std::string(name()) + " proposed an invalid or repeated configuration");
  m_asked.insert(*c);
  m_pending.insert(*c);
  return c;
}

void StrategyBase::tell(const Config& config, const Outcome& outcome) {
  m_asked.insert(config);
  m_pending.erase(config);
  m_history.push_back({config, outcome});
  observe(m_history.back());
}

std::optional<Config> StrategyBase::recommend() const {
  const Observation* best = nullptr;
  for (const auto& o : m_history)
    if (o.outcome.ok() && (!best || o.outcome.throughput > best->outcome.throughput)) best = &o;
  if (!best) return std::nullopt;
  return best->config;
}

const std::optional<std::vector<Config>>& StrategyBase::valid_configs() const {
  if (!m_enumerated) {
    m_valid = m_space.enumerate();
    m_enumerated = true;
  }
  return m_valid;
}

std::optional<Config> StrategyBase::random_unasked() {
  for (int t = 0; t < 64; ++t) {
    auto c = m_space.sample(m_rng, 1000);
    if (!c) break;
    if (!was_asked(*c)) return c;
  }
  // Most of the space is used up (or rules reject most draws): choose among
  // what is left.
  const auto& all = valid_configs();
  if (!all) return std::nullopt;
  std::vector<const Config*> left;
  for (const auto& c : *all)
    if (!was_asked(c)) left.push_back(&c);
  if (left.empty()) return std::nullopt;
  std::uniform_int_distribution<std::size_t> pick(0, left.size() - 1);
  return *left[pick(m_rng)];
}

const StrategyInfo* find_strategy(std::string_view name) {
  for (const auto& s : strategy_catalog())
    if (s.name == name) return &s;
  return nullptr;
}

std::vector<std::string> strategy_names() {
  std::vector<std::string> out;
  for (const auto& s : strategy_catalog()) out.push_back(s.name);
  return out;
}

std::unique_ptr<Strategy> make_strategy(std::string_view name, const StrategyContext& ctx) {
  const StrategyInfo* info = find_strategy(name);
  if (!info) throw std::invalid_argument("unknown strategy '" + std::string(name) + "'");
  StrategyContext filled = ctx;
  filled.options = Options::with_defaults(info->options, ctx.options.values());
  return info->make(filled);
}

}  // namespace autotune
