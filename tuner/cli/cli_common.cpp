#include "tuner/cli/cli_common.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <iostream>

#include <fmt/format.h>

#include "search/strategy.hpp"
#include "tuner/spec/spec_checks.hpp"
#include "tuner/run/progress.hpp"
#include "tuner/record/tuning_time.hpp"
#include "core/options.hpp"

namespace autotune {
namespace {

std::vector<std::string>& command_words() {
  static std::vector<std::string> words;
  return words;
}

std::string shell_quoted(const std::string& word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("_-./=:,@%+", c) != nullptr;
  });
  if (plain) return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

void remember_command_line(int argc, char** argv) {
  command_words().assign(argv, argv + argc);
}

std::string command_line_with(std::string_view add, std::initializer_list<std::string_view> drop) {
  std::string out;
  for (const std::string& w : command_words()) {
    if (std::find(drop.begin(), drop.end(), w) != drop.end()) continue;
    out += (out.empty() ? "" : " ") + shell_quoted(w);
  }
  if (out.empty()) out = "autotune";
  if (!add.empty()) out += " " + std::string(add);
  return out;
}

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

std::unique_ptr<Executor> make_executor_or_report(const Spec& spec, Workload& workload, const std::string& who) {
  try {
    return make_executor(spec, workload);
  } catch (const std::runtime_error& e) {
    std::cerr << who << ": " << e.what() << "\n";
    return nullptr;
  }
}

bool apply_overrides(Spec& spec, const Overrides& o) {
  // The spec file's own checks (tuner/spec/spec_checks.hpp), so that a value the
  // file refuses is refused here too, in the same words.
  auto refused = [](const char* flag, const Invalid& why) {
    std::cerr << flag << ": expected " << why.expected << ", found " << why.found
              << (why.hint.empty() ? "" : " (" + why.hint + ")") << "\n";
    return false;
  };
  if (o.strategy) {
    auto s = check_strategy(*o.strategy);
    if (!s.value) return refused("--strategy", s.error);
    spec.search.strategy = *s.value;
  }
  if (o.budget) {
    auto b = check_budget(*o.budget);
    if (!b.value) return refused("--budget", b.error);
    // A budget flag sets one limit; the spec's other limit still holds, and
    // a run that stops "early" should not surprise: say so.
    if (b.value->trials > 0) {
      spec.search.budget_trials = b.value->trials;
      if (spec.search.budget_seconds > 0)
        std::cerr << fmt::format("autotune: --budget {} sets the limit on trials; the spec's time limit ({}) still "
                                 "holds: the run stops at whichever comes first\n",
                                 *o.budget, format_duration(spec.search.budget_seconds));
    } else {
      spec.search.budget_seconds = b.value->seconds;
      if (spec.search.budget_trials > 0)
        std::cerr << fmt::format("autotune: --budget {} sets the time limit; the spec's limit of {} trials still "
                                 "holds: the run stops at whichever comes first\n",
                                 *o.budget, spec.search.budget_trials);
    }
  }
  if (o.seed) {
    auto v = check_seed(*o.seed);
    if (!v.value) return refused("--seed", v.error);
    spec.search.seed = *v.value;
  }
  if (o.parallel) {
    auto p = check_int(std::to_string(*o.parallel), kParallelRange);
    if (!p.value) return refused("--parallel", p.error);
    spec.search.parallel = *o.parallel;
  }
  if (o.confirm) {
    auto c = check_int(std::to_string(*o.confirm), kConfirmRange);
    if (!c.value) return refused("--confirm", c.error);
    spec.search.confirm = *o.confirm;
  }
  if (o.remeasure) {
    auto c = check_int(std::to_string(*o.remeasure), kConfirmRange);
    if (!c.value) return refused("--remeasure", c.error);
    spec.search.remeasure = *o.remeasure;
  }
  if (o.out) {
    if (o.out->empty()) {
      std::cerr << "--out: expected a path for tuned.yaml, found an empty one\n";
      return false;
    }
    spec.output.tuned = *o.out;
    std::filesystem::path j = *o.out;
    j.replace_extension(".journal.jsonl");
    spec.output.journal = j;
  }
  return true;
}

}  // namespace autotune
