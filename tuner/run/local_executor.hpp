#pragma once
// The local executor kind: `search.parallel` slots on this machine, each
// running one trial at a time through a runner (a child process per trial, a
// warm worker, or inline), each with its own GPU(s) (`gpus`) and, where the
// machine allows, its own CPUs (`pin_cpus`): tuner/run/slots.hpp.
#include "tuner/spec/executor_kind.hpp"

namespace autotune {

ExecutorKind local_executor_kind();

}  // namespace autotune
