#include "tuner/run/local_executor.hpp"

#include <stdexcept>

#include "tuner/run/builtin_worker.hpp"
#include "tuner/run/executor_registry.hpp"
#include "tuner/run/runner.hpp"
#include "tuner/run/slots.hpp"

namespace autotune {
namespace {

std::unique_ptr<Executor> make_local(const Options& options, const ExecutorEnv& env) {
  const Spec& spec = env.spec;
  std::shared_ptr<TrialRunner> runner = spec.workload.isolation == Isolation::inline_
                                            ? make_inline_runner(env.workload)
                                            : make_process_runner(env.workload, 5.0, builtin_worker_for(spec));
  SlotPlan plan;
  try {
    plan = plan_slots(spec.search.parallel, spec.executor.gpus, allowed_cpus(), options.get_bool("pin_cpus"));
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(std::string("executor.gpus: ") + e.what());
  }
  return make_local_executor([runner](const Assignment& a, const TrialContext& ctx) { return runner->once(a, ctx); },
                             plan);
}

}  // namespace

ExecutorKind local_executor_kind() {
  return {"local",
          "slots on this machine, one trial each, with its own GPU(s) and CPUs",
          {
              {"pin_cpus", OptionType::boolean, OptionValue{true},
               "a contiguous CPU set per slot, where the machine has at least as many CPUs as slots"},
          },
          make_local};
}

}  // namespace autotune
