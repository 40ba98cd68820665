#pragma once
// Executor kinds as the spec sees them: each kind's name, a line saying where
// it runs trials, the options it declares (read and checked by the loader as
// a workload's are: located errors, defaults filled in) and its factory.
// The table of built-in kinds is tuner/run/executor_registry.cpp, one line per
// kind; it is declared here and given to the loader by its caller
// (load_spec_text's default argument), so that the spec layer checks a kind's
// options without calling up into tuner/run.
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/options.hpp"

namespace autotune {

class Executor;      // tuner/run/executor.hpp
struct ExecutorEnv;  // tuner/run/executor_registry.hpp

struct ExecutorKind {
  std::string kind;
  std::string summary;
  std::vector<OptionSpec> options;  // beside `kind` and `gpus`, which every kind takes
  // The run's executor from the kind's validated options; throws
  // std::runtime_error when it cannot work here (outside a Slurm allocation,
  // fewer GPU entries than slots): bad input, exit 2.
  std::function<std::unique_ptr<Executor>(const Options&, const ExecutorEnv&)> make;
};

using ExecutorKinds = std::vector<ExecutorKind>;

// The kinds built into this binary, in a stable order (defined in
// tuner/run/executor_registry.cpp).
const ExecutorKinds& executor_kinds();

const ExecutorKind* find_executor_kind(const ExecutorKinds& kinds, std::string_view kind);
std::vector<std::string> executor_kind_names(const ExecutorKinds& kinds);

}  // namespace autotune
