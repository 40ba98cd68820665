#pragma once
// Pieces the subcommands share: loading a spec (or the embedded default) with
// every error printed, building the workload, and the measure function.
#include <memory>
#include <optional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "tuner/spec/spec.hpp"
#include "tuner/run/executor.hpp"
#include "tuner/run/executor_registry.hpp"
#include "tuner/run/tune.hpp"
#include "workloads/workload.hpp"

namespace autotune {

// Loads `path` (or the embedded default when empty); prints every error to
// stderr and returns nullopt on failure.
std::optional<Spec> load_spec_or_report(const std::string& path);

// Builds the spec's workload; prints the reason and returns nullptr on failure.
std::unique_ptr<Workload> make_workload_or_report(const Spec& spec);

// The spec's executor (make_executor, tuner/run/executor_registry.hpp),
// printing "<who>: <why>" and returning nullptr when it cannot work here.
std::unique_ptr<Executor> make_executor_or_report(const Spec& spec, Workload& workload, const std::string& who);

// Overrides from the command line, applied after loading and re-validated.
// Given empty (`--seed=`) is given, and refused as the spec's key would be.
struct Overrides {
  std::optional<std::string> strategy;
  std::optional<std::string> budget;  // "40" trials, or a duration ("10m")
  std::optional<std::string> seed;    // checked as search.seed is
  std::optional<std::string> out;     // tuned.yaml path; the journal goes beside it
  std::optional<int> parallel;
  std::optional<int> confirm;
  std::optional<int> remeasure;
};
// Returns false (after printing why) when an override is invalid.
bool apply_overrides(Spec& spec, const Overrides& o);

// The command line this process was started with (kept by cli_main), so that
// a message can give the exact command that carries on.
void remember_command_line(int argc, char** argv);
// That command line, quoted for a POSIX shell, without the words in `drop`
// and with `add` appended (when not empty).
std::string command_line_with(std::string_view add, std::initializer_list<std::string_view> drop);

}  // namespace autotune
