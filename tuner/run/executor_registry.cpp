// The kind -> factory table of executors. Adding one: its header and source
// (declaring and defining its ExecutorKind), and its line here.
#include "tuner/run/executor_registry.hpp"

#include <stdexcept>

#include "tuner/run/local_executor.hpp"
#include "tuner/run/slurm_executor.hpp"
#include "tuner/spec/spec_checks.hpp"

namespace autotune {

const ExecutorKinds& executor_kinds() {
  static const ExecutorKinds kinds = {
      local_executor_kind(),
      slurm_executor_kind(),
  };
  return kinds;
}

std::unique_ptr<Executor> make_executor(const Spec& spec, Workload& workload, const ExecutorKinds& kinds) {
  const ExecutorKind* kind = find_executor_kind(kinds, spec.executor.kind);
  if (!kind)
    throw std::runtime_error("executor.kind: '" + spec.executor.kind + "' is not one of " +
                             join(executor_kind_names(kinds)));
  // A spec made in code (not loaded) has its options' defaults here too.
  const Options options = Options::with_defaults(kind->options, spec.executor.options.values());
  return kind->make(options, ExecutorEnv{spec, workload});
}

}  // namespace autotune
