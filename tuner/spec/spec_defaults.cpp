// What a spec implies beyond its own fields.
#include "tuner/spec/spec.hpp"

namespace autotune {

int remeasure_rounds(const Spec& spec) {
  return spec.search.remeasure.value_or(spec.workload.kind == "command" ? 6 : 0);
}

StrategyContext strategy_context(const SearchSpace& space, std::uint64_t seed, int budget,
                                 std::vector<Config> initial, const Limits& limits) {
  StrategyContext ctx;
  ctx.space = &space;
  ctx.seed = seed;
  ctx.budget = budget;
  ctx.initial = std::move(initial);
  ctx.vram_limit_bytes = limits.vram_bytes;
  ctx.ram_limit_bytes = limits.ram_bytes;
  return ctx;
}

}  // namespace autotune
