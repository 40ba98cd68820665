// What a spec implies beyond its own fields.
#include "tuner/spec/spec.hpp"

#include <fmt/format.h>

#include "core/machine.hpp"
#include "workloads/workload.hpp"

namespace autotune {

int remeasure_rounds(const Spec& spec) {
  const WorkloadInfo* kind = find_workload(spec.workload.kind);
  return spec.search.remeasure.value_or(kind ? kind->remeasure_pairs : 0);
}

StrategyContext strategy_context(const SearchSpace& space, std::uint64_t seed, int budget,
                                 std::vector<Config> initial, const Limits& limits, Options options) {
  StrategyContext ctx;
  ctx.space = &space;
  ctx.seed = seed;
  ctx.budget = budget;
  ctx.initial = std::move(initial);
  ctx.vram_limit_bytes = limits.vram_bytes;
  ctx.ram_limit_bytes = limits.ram_bytes;
  ctx.options = std::move(options);
  return ctx;
}

std::string CoresAsked::describe() const {
  return fmt::format("{} rank{} x ({} worker{} + {} thread{}) = {}", ranks, ranks == 1 ? "" : "s", workers,
                     workers == 1 ? "" : "s", threads, threads == 1 ? "" : "s", total());
}

std::optional<CoresAsked> cores_asked(const Spec& spec, const Config& config) {
  const auto workers = spec.space.index_of("num_workers"), threads = spec.space.index_of("threads");
  if (!workers && !threads) return std::nullopt;
  const auto int_at = [&](std::size_t d) -> std::optional<std::int64_t> {
    const Value& v = spec.space.param(d).values[static_cast<std::size_t>(config[d])];
    if (!is_int(v)) return std::nullopt;
    return std::get<std::int64_t>(v);
  };
  CoresAsked out;
  out.ranks = spec.ranks;
  if (workers)
    if (auto w = int_at(*workers)) out.workers = *w;
  if (threads)
    if (auto t = int_at(*threads)) out.threads = std::max<std::int64_t>(1, *t);
  return out;
}

std::string cores_warning(const Spec& spec, const Config& config) {
  const auto asked = cores_asked(spec, config);
  const int cores = usable_cores();
  if (!asked || asked->total() <= cores) return {};
  return fmt::format("the answer asks for {} processes on {} cores: it counts on cores that other work on this "
                     "machine would take; under load, fewer may be faster",
                     asked->describe(), cores);
}

}  // namespace autotune
