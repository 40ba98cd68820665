// `autotune validate space.yaml`: loads and checks the file, prints
// the resolved space (domains, size, valid configurations after the rules).
#include <iostream>

#include <fmt/format.h>

#include "core/knobs.hpp"
#include "tuner/cli/cli.hpp"
#include "tuner/cli/cli_commands.hpp"
#include "tuner/cli/cli_common.hpp"
#include "tuner/run/machine_load.hpp"

namespace autotune {

std::function<int()> add_validate_command(CLI::App& app) {
  auto config = std::make_shared<std::string>();
  app.add_option("config,--config,-c", *config, "the space.yaml to check (default: the embedded default)");
  return [config]() -> int {
    auto spec = load_spec_or_report(*config);
    if (!spec) return kExitBadInput;
    const auto& s = *spec;
    if (config->empty())
      std::cout << "the embedded default (what `autotune` runs with no file): ok\n"
                   "  to check your own file: autotune validate space.yaml\n";
    else
      std::cout << fmt::format("{}: ok\n", *config);
    std::cout << fmt::format("workload: {}{}\n", s.workload.kind,
                             s.workload.requested_kind != s.workload.kind
                                 ? " (" + s.workload.requested_kind + ")"
                                 : std::string());
    std::cout << "space:\n";
    // The memory each knob grows, as the search reads it (declared, or the knob table).
    const auto memory = knob_memory(s.space);
    for (std::size_t d = 0; d < s.space.dims(); ++d) {
      const auto& p = s.space.param(d);
      std::string vals;
      for (const auto& v : p.values) vals += (vals.empty() ? "" : ", ") + to_string(v);
      std::cout << fmt::format("  {:<16} {:>3} values, {:<11} [{}]  memory: {}\n", p.name, p.values.size(),
                               std::string(to_string(p.scale)), vals, std::string(to_string(memory[d].use)));
    }
    if (s.workload.kind == "cpu")
      if (auto d = s.space.index_of("precision"))
        for (const auto& v : s.space.param(*d).values)
          if (to_string(v) != "fp32")
            std::cout << "warning: the cpu workload measures fp32 only; precision " << to_string(v)
                      << " gives `error` trials\n";
    if (const auto d = s.space.index_of("num_workers")) {
      std::int64_t most = 0;
      for (const auto& v : s.space.param(*d).values)
        if (is_int(v)) most = std::max(most, std::get<std::int64_t>(v));
      if (const int cores = usable_cores(); most * s.ranks > cores)
        std::cout << fmt::format("warning: num_workers up to {} x {} rank{} asks for {} loader processes on the {} "
                                 "cores here; beyond the cores, workers compete with the training and with each "
                                 "other, and what wins on a quiet machine loses on a busy one\n",
                                 most, s.ranks, s.ranks == 1 ? "" : "s", most * s.ranks, cores);
    }
    std::cout << fmt::format("size: {:.0f} configurations before rules\n", s.space.cardinality());
    for (const auto& r : s.space.rules().rules()) std::cout << "rule: " << r << "\n";
    if (auto all = s.space.enumerate())
      std::cout << fmt::format("valid: {} configurations satisfy the rules\n", all->size());
    else
      std::cout << "valid: too many to count exactly; sampled during the search\n";
    if (s.limits.vram_bytes > 0) std::cout << "vram limit: " << format_bytes(s.limits.vram_bytes) << "\n";
    if (s.limits.ram_bytes > 0) std::cout << "ram limit: " << format_bytes(s.limits.ram_bytes) << "\n";
    std::cout << fmt::format("search: {} seed {}, budget {}{}\n", s.search.strategy, s.search.seed,
                             s.search.budget_trials > 0 ? fmt::format("{} trials", s.search.budget_trials) : "",
                             s.search.budget_seconds > 0 ? fmt::format(" {:.0f}s", s.search.budget_seconds) : "");
    if (s.search.confirm > 0)
      std::cout << fmt::format("confirm: the {} best measured once more each after the search\n", s.search.confirm);
    if (s.search.parallel > 1) std::cout << fmt::format("parallel: {} trials in flight\n", s.search.parallel);
    std::cout << "output: " << s.output.tuned.string() << " (journal " << s.output.journal.string() << ")\n";
    return kExitOk;
  };
}

}  // namespace autotune
