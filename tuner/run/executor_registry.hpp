#pragma once
// A run's executor, made by its kind (`executor.kind`). Each kind is its own
// files, a header declaring its ExecutorKind function and a source defining
// it (tuner/run/local_executor.*, tuner/run/slurm_executor.*), and one line in
// executor_registry.cpp; the kind's declared options are checked by the spec
// loader (tuner/spec/executor_kind.hpp) before anything runs.
#include <memory>

#include "tuner/run/executor.hpp"
#include "tuner/spec/executor_kind.hpp"
#include "tuner/spec/spec.hpp"
#include "workloads/workload.hpp"

namespace autotune {

// What a kind's factory is given beside its own options.
struct ExecutorEnv {
  const Spec& spec;    // search.parallel (how many trials at once), the workload's isolation, the spec's file
  Workload& workload;  // what each trial measures
};

// The spec's executor, from the kind of `kinds` it names. A runner takes one
// measurement (isolation, timeout, the RAM measurement; it never throws for
// a failed trial); the executor runs several at once where it places them;
// the scheduler adds repeats and limits. Throws std::runtime_error when the
// executor cannot work here (slurm outside an allocation, fewer GPU entries
// than slots, a kind not among `kinds`): bad input.
std::unique_ptr<Executor> make_executor(const Spec& spec, Workload& workload,
                                        const ExecutorKinds& kinds = executor_kinds());

}  // namespace autotune
