// `autotune validate space.yaml`: loads and checks the file, prints
// the resolved space (domains, size, valid configurations after the rules).
// With --run-once it also measures the run's first trial once, to check the
// set-up (the command, its Python, its files) before a session.
#include <cstdint>
#include <iostream>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "workloads/workload.hpp"
#include "core/knobs.hpp"
#include "core/text.hpp"
#include "tuner/cli/cli.hpp"
#include "tuner/cli/cli_commands.hpp"
#include "tuner/cli/cli_common.hpp"
#include "tuner/run/interrupt.hpp"
#include "tuner/run/machine_load.hpp"
#include "tuner/run/run_once.hpp"
#include "workloads/setup_failure.hpp"

namespace autotune {
namespace {

// An option's value as written in space.yaml.
std::string option_text(bool v) { return v ? "true" : "false"; }
std::string option_text(std::int64_t v) { return std::to_string(v); }
std::string option_text(double v) { return fmt::format("{:g}", v); }
std::string option_text(const std::string& v) { return v; }
std::string option_text(const std::vector<std::string>& v) { return "[" + fmt::format("{}", fmt::join(v, ", ")) + "]"; }
std::string option_text(const std::map<std::string, std::string>& v) { return fmt::format("{{{} keys}}", v.size()); }


// --run-once: the first trial measured, and what it says of the set-up.
// How many processes the configurations keep busy on this node (each rank's
// loader workers and threads), against the cores here.
void cores_lines(const Spec& s, const std::vector<Config>& valid) {
  std::optional<CoresAsked> most;
  std::int64_t fewest = -1;
  std::size_t within = 0;
  const int cores = usable_cores();
  for (const Config& c : valid) {
    const auto asked = cores_asked(s, c);
    if (!asked) return;
    if (!most || asked->total() > most->total()) most = asked;
    if (fewest < 0 || asked->total() < fewest) fewest = asked->total();
    if (asked->total() <= cores) ++within;
  }
  if (!most) return;
  std::cout << fmt::format("cores: {} here; the configurations ask for {}{} processes (the most: {}); {} of {} keep "
                           "within the cores\n",
                           cores, fewest == most->total() ? "" : fmt::format("{}-", fewest), most->total(),
                           most->describe(), within, valid.size());
  if (most->total() <= cores) return;
  const bool threads = s.space.index_of("threads").has_value(), workers = s.space.index_of("num_workers").has_value();
  const std::string rule = workers && threads ? "ranks * (num_workers + threads) <= cores"
                           : workers          ? "ranks * (num_workers + 1) <= cores"
                                              : "ranks * threads <= cores";
  std::cout << fmt::format("warning: beyond the cores, loader workers and threads compete with the training and with "
                           "each other, and what wins on a quiet machine loses on a busy one; to keep the search "
                           "within them, add the rule \"{}\" to constraints.rules\n",
                           rule);
}

int run_once(const Spec& spec) {
  auto workload = make_workload_or_report(spec);
  if (!workload) return kExitBadInput;
  auto executor = make_executor_or_report(spec, *workload, "autotune validate");
  if (!executor) return kExitBadInput;
  install_interrupt_handler();
  std::cout << fmt::format("run once: {} (the first trial of a run), as autotune would measure it\n",
                           spec.space.to_assignment(first_trial_config(spec)).describe())
            << std::flush;
  const std::optional<Finished> f = run_first_trial_once(spec, *executor);
  if (!f) {
    std::cout << "run once: interrupted\n";
    return kExitInterrupted;
  }
  const Outcome& o = f->outcome;
  if (o.ok()) {
    std::cout << fmt::format("run once: ok, {:.1f} samples/s in {:.1f}s; nothing was written\n", o.throughput,
                             o.seconds);
    return kExitOk;
  }
  std::cout << fmt::format("run once: failed ({}) in {:.1f}s: {}\n", to_string(o.status), o.seconds, o.reason);
  if (const auto setup = setup_failure_of(o))
    std::cout << "run once: the set-up is broken: " << setup_cause(*setup) << "\n"
              << "run once: to fix: " << setup_fix(*setup) << "\n";
  else
    std::cout << "run once: autotune does not read this failure as a broken set-up; a tuning run would go on to "
                 "other configurations\n";
  return kExitFailure;
}

}  // namespace

std::function<int()> add_validate_command(CLI::App& app) {
  auto config = std::make_shared<std::string>();
  auto once = std::make_shared<bool>(false);
  app.add_option("config,--config,-c", *config, "the space.yaml to check (default: the embedded default)");
  app.add_flag("--run-once", *once,
               "also measure the run's first trial once (the first `initial` configuration, else the strategy's "
               "first), to check the set-up; writes no journal or tuned.yaml; exit 1 when it fails");
  return [config, once]() -> int {
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
    if (const WorkloadInfo* kind = find_workload(s.workload.kind); kind && !kind->precisions.empty())
      if (auto d = s.space.index_of("precision"))
        for (const auto& v : s.space.param(*d).values)
          if (std::find(kind->precisions.begin(), kind->precisions.end(), to_string(v)) == kind->precisions.end())
            std::cout << "warning: the " << kind->kind << " workload measures "
                      << fmt::format("{}", fmt::join(kind->precisions, ", ")) << " only; precision " << to_string(v)
                      << " gives `error` trials\n";
    std::cout << fmt::format("size: {:.0f} configurations before rules\n", s.space.cardinality());
    for (const auto& r : s.space.rules().rules()) std::cout << "rule: " << r << "\n";
    const auto all = s.space.enumerate();
    if (all)
      std::cout << fmt::format("valid: {} configurations satisfy the rules\n", all->size());
    else
      std::cout << "valid: too many to count exactly; sampled during the search\n";
    if (all) cores_lines(s, *all);
    if (s.limits.vram_bytes > 0) std::cout << "vram limit: " << format_bytes(s.limits.vram_bytes) << "\n";
    if (s.limits.ram_bytes > 0) std::cout << "ram limit: " << format_bytes(s.limits.ram_bytes) << "\n";
    std::cout << fmt::format("search: {} seed {}, budget {}{}\n", s.search.strategy, s.search.seed,
                             s.search.budget_trials > 0 ? fmt::format("{} trials", s.search.budget_trials) : "",
                             s.search.budget_seconds > 0 ? fmt::format(" {:.0f}s", s.search.budget_seconds) : "");
    if (const Options given = s.search.options_of(s.search.strategy); !given.values().empty()) {
      std::string listed;
      for (const auto& [key, value] : given.values())
        listed += fmt::format("{}{} {}", listed.empty() ? "" : ", ", key,
                              std::visit([](const auto& v) { return option_text(v); }, value));
      std::cout << fmt::format("strategy options: {} (the rest at their defaults)\n", listed);
    }
    if (s.search.confirm > 0)
      std::cout << fmt::format("confirm: the {} best measured once more each after the search\n", s.search.confirm);
    if (s.search.parallel > 1) std::cout << fmt::format("parallel: {} trials in flight\n", s.search.parallel);
    std::cout << "output: " << s.output.tuned.string() << " (journal " << s.output.journal.string() << ")\n";
    if (*once) return run_once(s);
    return kExitOk;
  };
}

}  // namespace autotune
