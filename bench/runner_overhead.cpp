// The runner's own overhead per trial: how much a trial costs before the
// workload does anything. Two cases, N trials each:
//   command `true`      — the command workload through the process executor
//                         (fork + exec of /bin/sh, pipes, /proc polling, result file)
//   in-process no-op    — a workload whose measure() returns at once, through
//                         the process executor (fork, Outcome back as JSON)
//   inline no-op        — the same through the inline executor (the floor)
// Prints mean / median / p90 ms per trial and the machine.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "bench/bench_util.hpp"
#include "tuner/run/runner.hpp"
#include "workloads/workloads.hpp"

using namespace autotune;

namespace {

class NoopWorkload : public Workload {
 public:
  std::string_view kind() const override { return "noop"; }
  Outcome measure(const Assignment&, const TrialContext&) override { return Outcome::success(1); }
};


void report(const char* name, TrialRunner& exec, int n) {
  Assignment a({{"batch_size", Value{std::int64_t{64}}}});
  TrialContext ctx;
  ctx.timeout_s = 30;
  std::vector<double> ms;
  int failed = 0;
  for (int i = 0; i < n; ++i) {
    ctx.trial = i + 1;
    const auto t0 = std::chrono::steady_clock::now();
    Outcome o = exec.once(a, ctx);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      if (!o.ok()) ++failed;
  }
  std::sort(ms.begin(), ms.end());
  const double mean = std::accumulate(ms.begin(), ms.end(), 0.0) / ms.size();
  std::printf("%-28s N=%d  mean %8.4f ms  median %8.4f ms  p90 %8.4f ms  min %8.4f ms  not ok %d\n", name, n, mean,
              ms[ms.size() / 2], ms[ms.size() * 9 / 10], ms.front(), failed);
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::max(1, std::atoi(argv[1])) : 200;
  std::printf("machine: %ld CPUs online, %s\n", ::sysconf(_SC_NPROCESSORS_ONLN), bench::cpu_model().c_str());
  const WorkloadInfo info = command_workload_info();
  auto command = info.make(Options::with_defaults(info.options, {{"command", std::string("true")}}),
                           WorkloadEnv{{"batch_size"}, "/"});
  auto echo = info.make(Options::with_defaults(info.options, {{"command", std::string(R"(echo '{"throughput": 1}')")}}),
                        WorkloadEnv{{"batch_size"}, "/"});
  NoopWorkload noop;
  // `true` writes no result: every trial is an `error` outcome by contract;
  // the cost measured is the runner's, which is the point.
  report("command `true` (process)", *make_process_runner(*command), n);
  report("command echo JSON (process)", *make_process_runner(*echo), n);
  report("in-process no-op (process)", *make_process_runner(noop), n);
  report("in-process no-op (inline)", *make_inline_runner(noop), n);
  return 0;
}
