#pragma once
// Executors run trials asynchronously: a driver submits trials up to the
// executor's capacity and takes each back as it finishes (submit /
// wait_any). The executor owns where a trial runs: the local one its slots
// (the GPU and CPUs each slot owns, tuner/run/slots.hpp), the Slurm one its
// steps (tuner/run/slurm_executor.hpp). Both are a pool of slots over a runner's
// one measurement; repeats and limits are the scheduler's
// (tuner/run/scheduler.hpp), around the executor. Each kind, with its
// declared options, is one line of tuner/run/executor_registry.cpp; the
// contract below is checked over every kind by
// tests/tuner/run/executor_contract_test.cpp.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "tuner/run/slots.hpp"
#include "workloads/workload.hpp"

namespace autotune {

// One measurement of one configuration; never throws for a failed trial.
using MeasureFn = std::function<Outcome(const Assignment&, const TrialContext&)>;

struct FinishedRun {
  int ticket = 0;  // what submit() was given
  Outcome outcome;
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual int capacity() const = 0;
  // Starts one measurement on a free slot (the caller keeps no more than
  // capacity() running); the slot's placement (environment, CPUs) is added
  // to ctx, and the outcome is labelled with it (`slot` when there are
  // several, `cpus`, `gpus`).
  virtual void submit(int ticket, const Assignment& config, TrialContext ctx) = 0;
  // The next finished measurement, waiting at most `wait`. Each submitted
  // measurement comes back exactly once, under its ticket, unless stop_all()
  // dropped it; a trial that failed (crashed, timed out, exited non-zero)
  // comes back as its outcome, never as an exception.
  virtual std::optional<FinishedRun> wait_any(std::chrono::milliseconds wait) = 0;
  // Stops every running measurement (its process group, as Ctrl-C does) and
  // waits for each; what they report is dropped. Safe to call twice.
  virtual void stop_all() = 0;
  virtual const std::string& summary() const = 0;  // one line for the log
};

// A pool with one slot per entry of `slots`, each running `measure` on its
// own thread. The destructor stops and joins whatever still runs.
std::unique_ptr<Executor> make_pool_executor(MeasureFn measure, std::vector<Slot> slots, std::string summary);

// Local trials: the slots of `plan` over `measure`.
std::unique_ptr<Executor> make_local_executor(MeasureFn measure, const SlotPlan& plan);

// `n` plain slots (no placement) over `measure`: tests and benchmarks.
std::unique_ptr<Executor> make_local_executor(MeasureFn measure, int n = 1);

}  // namespace autotune
