// `autotune report` on a long run: how long reading a 200-trial journal and
// rendering its page take (the issue asks for under a second). The journal
// comes from a real run of the synthetic workload over configs/synthetic.yaml's
// space (bo, so that the answer is the GP's recommendation, as in a real run;
// with its oom, host_oom and invalid trials).
//
//   build/bench/bench_report_render [trials] [repeats] [strategy]
//   defaults:                        200      5         bo
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "bench/bench_util.hpp"
#include "tuner/cli/cli_common.hpp"
#include "tuner/record/emitter.hpp"
#include "tuner/record/journal_study.hpp"
#include "tuner/report/report_html.hpp"

using namespace autotune;

int main(int argc, char** argv) {
  const int trials = argc > 1 ? std::stoi(argv[1]) : 200;
  const int repeats = argc > 2 ? std::stoi(argv[2]) : 5;
  const std::string strategy = argc > 3 ? argv[3] : "bo";
  std::printf("machine: %s, %u hardware threads\n", bench::cpu_model().c_str(), std::thread::hardware_concurrency());

  const auto dir = std::filesystem::temp_directory_path() / fmt::format("autotune-bench-report-{}", ::getpid());
  std::filesystem::create_directories(dir);
  auto loaded = load_spec_file(std::filesystem::path(AUTOTUNE_SOURCE_DIR) / "configs/synthetic.yaml");
  if (!loaded.spec) {
    std::fprintf(stderr, "configs/synthetic.yaml: %s\n", loaded.errors.front().format().c_str());
    return 1;
  }
  Spec spec = *loaded.spec;
  spec.search.strategy = strategy;
  spec.search.budget_trials = trials;
  spec.search.budget_seconds = 0;
  spec.workload.isolation = Isolation::inline_;
  spec.output.journal = dir / "tuned.journal.jsonl";
  auto workload = make_workload_or_report(spec);
  if (!workload) return 1;
  const auto t0 = std::chrono::steady_clock::now();
  const Study run = run_tuning(spec, *make_executor(spec, *workload), TuneOptions{});
  std::printf("journal: %zu %s trials of the synthetic workload, written in %.1f s\n", run.trials.size(),
              strategy.c_str(), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());

  std::vector<double> read_s, total_s;
  std::size_t bytes = 0;
  for (int r = 0; r < repeats; ++r) {
    const auto a = std::chrono::steady_clock::now();
    const JournalStudy s = read_journal_study(spec.output.journal);
    const auto b = std::chrono::steady_clock::now();
    std::string warning;
    const std::string html = render_report_html(s, &warning);
    write_file_atomically(dir / "report.html", html);
    const auto c = std::chrono::steady_clock::now();
    if (!warning.empty()) std::printf("warning: %s\n", warning.c_str());
    bytes = html.size();
    read_s.push_back(std::chrono::duration<double>(b - a).count());
    total_s.push_back(std::chrono::duration<double>(c - a).count());
  }
  std::sort(read_s.begin(), read_s.end());
  std::sort(total_s.begin(), total_s.end());
  std::printf("report of %d trials: median %.3f s (min %.3f, max %.3f) over %d renders, of which reading the "
              "journal and replaying the strategy %.3f s; page %.0f KiB\n",
              trials, total_s[total_s.size() / 2], total_s.front(), total_s.back(), repeats,
              read_s[read_s.size() / 2], static_cast<double>(bytes) / 1024);
  std::filesystem::remove_all(dir);
  return total_s[total_s.size() / 2] < 1.0 ? 0 : 1;
}
