// The cpu workload's knob responses that need free cores: worker threads
// against inline loading with heavy preprocessing, workers beyond the cores,
// and grad_accum's micro-batches. Timings depend on what else the machine
// runs, so they are figures here, not test assertions.
//
// Every comparison is made in pairs measured back to back, in alternating
// order, and judged on the median ratio over the pairs: a virtual core's
// speed drifts by up to 2x within seconds, and a drift that spans one pair
// spoils one ratio, not the median.
//
//   build/bench/bench_cpu_workers [ROUNDS]     (default 7)
//
// What an idle 2-core machine shows: 2 workers / inline >= 1.1 (median),
// 2 workers on >= 1.6 cores and inline on <= 1.15; 2n workers / n within
// 0.7-1.3; grad_accum 4 / 1 within 0.5-2. Each line says whether it met that.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <thread>
#include <vector>

#include "bench/bench_util.hpp"
#include "workloads/workloads.hpp"

using namespace autotune;

namespace {

using I = std::int64_t;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::unique_ptr<Workload> make_cpu(std::map<std::string, OptionValue> given) {
  const WorkloadInfo* info = find_workload("cpu");
  return info->make(Options::with_defaults(info->options, std::move(given)), WorkloadEnv{});
}

// Per-sample CPU work about 40x the MLP's compute: the loader is the bottleneck.
std::map<std::string, OptionValue> options(bool heavy) {
  std::map<std::string, OptionValue> o = {
      {"warmup_seconds", 0.3}, {"window_seconds", 0.1}, {"max_seconds", heavy ? 0.8 : 1.2}, {"target_rsd", 0.05}};
  if (heavy) {
    o["preprocess_passes"] = I{24};
    o["width"] = I{64};
    o["depth"] = I{1};
  }
  return o;
}

Assignment config(I workers, I grad_accum = 1) {
  return Assignment({{"batch_size", Value{I{32}}},
                     {"num_workers", Value{workers}},
                     {"prefetch_factor", Value{I{2}}},
                     {"pin_memory", Value{false}},
                     {"precision", Value{std::string("fp32")}},
                     {"grad_accum", Value{grad_accum}}});
}

struct Paired {
  double ratio = 0, cores_a = 0, cores_b = 0;
  int failed = 0;
};

Paired paired(Workload& w, const Assignment& a, const Assignment& b, int rounds) {
  std::vector<double> ratios, ca, cb;
  Paired p;
  for (int r = 0; r < rounds; ++r) {
    Outcome oa, ob;
    if (r % 2 == 0) {
      oa = w.measure(a, TrialContext{});
      ob = w.measure(b, TrialContext{});
    } else {
      ob = w.measure(b, TrialContext{});
      oa = w.measure(a, TrialContext{});
    }
    if (!oa.ok() || !ob.ok()) {
      ++p.failed;
      continue;
    }
    ratios.push_back(oa.throughput / ob.throughput);
    ca.push_back(oa.get(metric::cpu_cores).value_or(0));
    cb.push_back(ob.get(metric::cpu_cores).value_or(0));
    std::printf("  round %d: %.0f/s on %.2f cores vs %.0f/s on %.2f cores, ratio %.2f\n", r, oa.throughput,
                ca.back(), ob.throughput, cb.back(), ratios.back());
  }
  p.ratio = median(ratios);
  p.cores_a = median(ca);
  p.cores_b = median(cb);
  return p;
}

const char* verdict(bool met) { return met ? "met" : "NOT met"; }

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 7;
  const auto cores = static_cast<I>(std::thread::hardware_concurrency());
  std::printf("machine: %s, %lld cores; %d paired rounds each\n", bench::cpu_model().c_str(),
              static_cast<long long>(cores), rounds);

  auto heavy = make_cpu(options(true));
  std::printf("2 workers against inline loading, heavy preprocessing:\n");
  const Paired w2 = paired(*heavy, config(2), config(0), rounds);
  std::printf("  median ratio %.2f (>= 1.1: %s); cores %.2f (>= 1.6: %s) and %.2f inline (<= 1.15: %s)\n", w2.ratio,
              verdict(w2.ratio >= 1.1), w2.cores_a, verdict(w2.cores_a >= 1.6), w2.cores_b,
              verdict(w2.cores_b <= 1.15));

  std::printf("%lld workers against %lld (the cores), heavy preprocessing:\n", static_cast<long long>(2 * cores),
              static_cast<long long>(cores));
  const Paired over = paired(*heavy, config(2 * cores), config(cores), std::max(1, rounds - 2));
  std::printf("  median ratio %.2f (0.7-1.3: %s); cores %.2f (<= %lld.1: %s)\n", over.ratio,
              verdict(over.ratio >= 0.7 && over.ratio <= 1.3), over.cores_a, static_cast<long long>(cores),
              verdict(over.cores_a <= static_cast<double>(cores) + 0.1));

  auto plain = make_cpu(options(false));
  std::printf("grad_accum 4 against 1 (samples/s counts every micro-batch):\n");
  const Paired accum = paired(*plain, config(1, 4), config(1, 1), 3);
  std::printf("  median ratio %.2f (0.5-2: %s)\n", accum.ratio, verdict(accum.ratio > 0.5 && accum.ratio < 2.0));
  const int failed = w2.failed + over.failed + accum.failed;
  if (failed) std::printf("%d pairs had a trial that was not ok\n", failed);
  return failed ? 1 : 0;
}
