// Timing-sensitive knob responses of the cpu workload. ctest runs this
// executable alone (RUN_SERIAL), so no other test shares the cores.
//
// These machines are virtual: the speed of one core drifts by up to 2x within
// seconds, whatever we run (on the 2-core CI VM one thread prepared 5k to 9k
// samples/s in the same minute). A configuration measured at one moment and
// another measured a few seconds later can therefore differ by 2x for no
// reason of theirs. So every comparison here is made in pairs measured back to
// back, in alternating order, and judged on the median ratio over the pairs:
// a drift that spans one pair spoils one ratio, not the median.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <thread>
#include <vector>

#include "tests/support/cpu_fixtures.hpp"

namespace autotune {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The preprocessing options every test here uses: per-sample CPU work about
// 40x the MLP's compute, so that the loader is the bottleneck.
std::map<std::string, OptionValue> heavy_preprocessing(double max_seconds) {
  auto opts = quick(max_seconds);
  opts["preprocess_passes"] = I{24};
  opts["width"] = I{64};
  opts["depth"] = I{1};
  return opts;
}

struct Paired {
  double ratio = 0;                  // median of throughput(a) / throughput(b)
  double cores_a = 0, cores_b = 0;   // median cpu_cores of each
};

// `rounds` pairs of trials, workers_a and workers_b measured back to back
// (which one first alternating).
Paired paired(Workload& w, I workers_a, I workers_b, int rounds) {
  std::vector<double> ratios, cores_a, cores_b;
  for (int r = 0; r < rounds; ++r) {
    Outcome a, b;
    if (r % 2 == 0) {
      a = w.measure(config(32, workers_a), TrialContext{});
      b = w.measure(config(32, workers_b), TrialContext{});
    } else {
      b = w.measure(config(32, workers_b), TrialContext{});
      a = w.measure(config(32, workers_a), TrialContext{});
    }
    EXPECT_TRUE(a.ok()) << a.reason;
    EXPECT_TRUE(b.ok()) << b.reason;
    if (!a.ok() || !b.ok()) return {};
    ratios.push_back(a.throughput / b.throughput);
    cores_a.push_back(*a.metric("cpu_cores"));
    cores_b.push_back(*b.metric("cpu_cores"));
    std::cout << "round " << r << ": " << workers_a << " workers " << a.throughput << "/s on " << cores_a.back()
              << " cores, " << workers_b << " workers " << b.throughput << "/s on " << cores_b.back()
              << " cores, ratio " << ratios.back() << "\n";
  }
  const Paired p{median(ratios), median(cores_a), median(cores_b)};
  std::cout << workers_a << " workers / " << workers_b << " workers, median of " << rounds << ": ratio " << p.ratio
            << ", cores " << p.cores_a << " / " << p.cores_b << "\n";
  return p;
}

TEST(CpuWorkload, WorkersBeatInlineLoadingWhenPreprocessingIsHeavy) {
  // With 0 workers the main thread preprocesses and computes in turn, on one
  // core; 2 workers preprocess on two cores while it computes. Two checks,
  // with different robustness:
  // - the workers run in parallel: cpu_cores (process CPU seconds per wall
  //   second) >= 1.6 with 2 workers, <= 1.15 inline. CPU time does not move
  //   with the host's speed (seen: 1.80-1.97 and 0.98-1.00);
  // - so the pipeline is faster: median paired throughput ratio >= 1.1
  //   (seen: medians 1.11-2.00; single pairs 1.04-2.2, low when the host
  //   lends one core's worth of speed to both vCPUs). A median under 1.1
  //   gets one more set of 7 pairs before it fails.
  // False failures: 0 in 19 runs on the idle 2-core CI VM; a 20th failed
  // while another job held a core (inline read 0.88 cores), which ctest
  // prevents by running this suite alone. A deadlock or a queue that
  // serialised the workers fails both checks.
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "needs two cores";
  auto w = make_cpu(heavy_preprocessing(0.8));
  Paired p = paired(*w, 2, 0, 7);
  EXPECT_GE(p.cores_a, 1.6);
  EXPECT_LE(p.cores_b, 1.15);
  if (p.ratio < 1.1) p = paired(*w, 2, 0, 7);
  EXPECT_GE(p.ratio, 1.1);
}

TEST(CpuWorkload, WorkersBeyondTheCoresAddNothing) {
  // Preprocessing-bound: n workers already keep the n cores busy, so 2n
  // workers find no more CPU (cpu_cores <= n + 0.1) and prepare no more: the
  // median throughput ratio stays near 1 (seen: 1.02-1.17; the round-robin
  // queue can cost n workers a little when one lags, hence the upper 1.3),
  // and oversubscription must not collapse it (>= 0.7). No false failure in
  // the same 20 runs.
  const auto cores = static_cast<I>(std::thread::hardware_concurrency());
  if (cores < 2 || cores > 8) GTEST_SKIP() << "sized for 2-8 cores, found " << cores;
  auto w = make_cpu(heavy_preprocessing(0.8));
  const Paired p = paired(*w, 2 * cores, cores, 5);
  EXPECT_LE(p.cores_a, static_cast<double>(cores) + 0.1);
  EXPECT_LE(p.ratio, 1.3);
  EXPECT_GE(p.ratio, 0.7);
}

// Two real measurements compared: here, where no other test shares the
// cores (under ctest -j2 beside the other suites it failed twice).
TEST(CpuWorkload, GradAccumCountsEveryMicroBatch) {
  // With grad_accum 4 a step is four micro-batches; throughput counts samples,
  // so it stays within 2x of grad_accum 1 (the optimizer step amortises).
  auto w = make_cpu(quick(1.2));
  Assignment a = config(16, 1);
  const Outcome one = w->measure(a, TrialContext{});
  a.set("grad_accum", Value{I{4}});
  const Outcome four = w->measure(a, TrialContext{});
  ASSERT_TRUE(one.ok() && four.ok()) << one.reason << four.reason;
  EXPECT_GT(four.throughput, 0.5 * one.throughput);
  EXPECT_LT(four.throughput, 2.0 * one.throughput);
}

}  // namespace
}  // namespace autotune
