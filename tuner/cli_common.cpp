#include "tuner/cli_common.hpp"

#include <unistd.h>

#include <iostream>

#include <fmt/format.h>

#include "search/strategy.hpp"
#include "tuner/slurm_executor.hpp"
#include "tuner/runner.hpp"
#include "tuner/slots.hpp"
#include "workloads/options.hpp"

namespace autotune {

std::optional<Spec> load_spec_or_report(const std::string& path) {
  SpecLoadResult r = path.empty()
                         ? load_spec_text(embedded_default_spec(), "<embedded default>", std::filesystem::current_path())
                         : load_spec_file(path);
  if (!r.errors.empty()) {
    for (const auto& e : r.errors) std::cerr << e.format() << "\n";
    std::cerr << fmt::format("{} error{} in {}; nothing was run or written.\n", r.errors.size(),
                             r.errors.size() == 1 ? "" : "s", path.empty() ? "the embedded default" : path);
    return std::nullopt;
  }
  return std::move(r.spec);
}

std::unique_ptr<Workload> make_workload_or_report(const Spec& spec) {
  const WorkloadInfo* info = find_workload(spec.workload.kind);
  if (!info) {
    std::cerr << "workload kind '" << spec.workload.kind << "' is not built into this binary\n";
    return nullptr;
  }
  WorkloadEnv env;
  for (const auto& p : spec.space.params()) env.parameter_names.push_back(p.name);
  env.spec_dir = spec.file.has_parent_path() ? spec.file.parent_path() : std::filesystem::current_path();
  try {
    return info->make(spec.workload.options, env);
  } catch (const std::exception& e) {
    std::cerr << spec.file.string() << ": workload: " << e.what() << "\n";
    return nullptr;
  }
}

std::unique_ptr<Executor> make_executor(const Spec& spec, Workload& workload) {
  // A runner takes one measurement (isolation, timeout, the RAM measurement;
  // it never throws for a failed trial); the executor runs several at once
  // where it places them; the scheduler adds repeats and limits.
  if (spec.executor.kind == "slurm") {
    require_slurm_allocation();
    if (spec.file.empty() || !std::filesystem::exists(spec.file))
      throw std::runtime_error("the slurm executor re-reads the spec on each node: give it with --config");
    SlurmSettings s;
    s.executor = spec.executor;
    s.spec_file = std::filesystem::absolute(spec.file);
    s.self_exe = std::filesystem::read_symlink("/proc/self/exe");
    s.run_tag = std::to_string(::getpid());
    return make_slurm_executor(workload, std::move(s), spec.search.parallel);
  }
  std::shared_ptr<TrialRunner> runner = spec.workload.isolation == Isolation::inline_
                                            ? make_inline_runner(workload)
                                            : make_process_runner(workload);
  SlotPlan plan;
  try {
    plan = plan_slots(spec.search.parallel, spec.executor.gpus, allowed_cpus(), spec.executor.pin_cpus);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(std::string("executor.gpus: ") + e.what());
  }
  return make_local_executor([runner](const Assignment& a, const TrialContext& ctx) { return runner->once(a, ctx); },
                             plan);
}

bool apply_overrides(Spec& spec, const Overrides& o) {
  if (!o.strategy.empty()) {
    if (!find_strategy(o.strategy)) {
      std::string known;
      for (const auto& n : strategy_names()) known += (known.empty() ? "" : ", ") + n;
      std::cerr << "--strategy: expected one of " << known << ", found '" << o.strategy << "'\n";
      return false;
    }
    spec.search.strategy = o.strategy;
  }
  if (!o.budget.empty()) {
    const bool digits = o.budget.find_first_not_of("0123456789") == std::string::npos;
    if (digits && std::stoll(o.budget) > 0 && std::stoll(o.budget) < 1'000'000) {
      spec.search.budget_trials = static_cast<int>(std::stoll(o.budget));
    } else if (auto s = parse_duration(o.budget); s && *s > 0 && !digits) {
      spec.search.budget_seconds = *s;
    } else {
      std::cerr << "--budget: expected a number of trials (40) or a duration (10m, 90s), found '" << o.budget
                << "'\n";
      return false;
    }
  }
  if (o.seed) spec.search.seed = *o.seed;
  if (o.parallel) {
    if (*o.parallel < 1) {
      std::cerr << "--parallel: expected an integer >= 1\n";
      return false;
    }
    spec.search.parallel = *o.parallel;
  }
  if (o.confirm) {
    if (*o.confirm < 0 || *o.confirm > 1000) {
      std::cerr << "--confirm: expected an integer from 0 to 1000, found " << *o.confirm << "\n";
      return false;
    }
    spec.search.confirm = *o.confirm;
  }
  if (!o.out.empty()) {
    spec.output.tuned = o.out;
    std::filesystem::path j = o.out;
    j.replace_extension(".journal.jsonl");
    spec.output.journal = j;
  }
  return true;
}

}  // namespace autotune
