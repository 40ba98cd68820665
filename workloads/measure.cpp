#include "workloads/measure.hpp"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cmath>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

namespace autotune {

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double process_cpu_seconds() {
  timespec t{};
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t) != 0) return 0;
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

std::string validate(const MeasureConfig& c) {
  if (!(c.warmup_seconds >= 0)) return "warmup_seconds must be at least 0";
  if (c.warmup_min_steps < 0) return "warmup_min_steps must be at least 0";
  if (c.ahead_min_steps < 0) return "ahead_min_steps must be at least 0";
  if (!(c.window_seconds >= 0)) return "window_seconds must be at least 0";
  if (c.window_min_steps < 1) return "window_min_steps must be at least 1";
  if (c.rsd_windows < 2) return "rsd_windows must be at least 2";
  if (!(c.target_rsd > 0)) return "target_rsd must be positive";
  if (c.fewest_windows < 3) return "fewest_windows must be at least 3";
  if (!(c.target_ci90 >= 0)) return "target_ci90 must be at least 0";
  if (!(c.max_seconds > 0)) return "max_seconds must be positive";
  if (!(c.warmup_floor_seconds >= 0)) return "warmup_floor_seconds must be at least 0";
  return {};
}

double relative_spread(const double* values, std::size_t n) {
  if (n < 2) return 0.0;
  double mean = 0;
  for (std::size_t i = 0; i < n; ++i) mean += values[i];
  mean /= static_cast<double>(n);
  if (mean == 0) return 0.0;
  double ss = 0;
  for (std::size_t i = 0; i < n; ++i) ss += (values[i] - mean) * (values[i] - mean);
  return std::sqrt(ss / static_cast<double>(n - 1)) / std::abs(mean);
}

namespace {
// Two-sided 95% quantiles of Student's t with 1..10 degrees of freedom.
constexpr double kT975[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228};
}  // namespace

bool drifting(const double* rates, std::size_t n) {
  if (n < 3) return false;
  const double xm = (static_cast<double>(n) - 1) / 2;
  double ym = 0;
  for (std::size_t i = 0; i < n; ++i) ym += rates[i];
  ym /= static_cast<double>(n);
  double sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double dx = static_cast<double>(i) - xm;
    sxx += dx * dx;
    sxy += dx * (rates[i] - ym);
  }
  const double slope = sxy / sxx;
  double sse = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double e = rates[i] - ym - slope * (static_cast<double>(i) - xm);
    sse += e * e;
  }
  const std::size_t dof = n - 2;
  // Past 10 degrees of freedom, the 10's: never below the true quantile.
  const double t = kT975[std::min(dof, std::size(kT975)) - 1];
  return std::abs(slope) > t * std::sqrt(sse / static_cast<double>(dof) / sxx);
}

double student_t95(int dof) {
  static constexpr double kT95[] = {6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812,
                                    1.796, 1.782, 1.771, 1.761, 1.753, 1.746, 1.740, 1.734, 1.729, 1.725};
  if (dof < 1) dof = 1;
  if (dof <= 20) return kT95[dof - 1];
  // Each span's largest quantile, so never below the true one.
  return dof <= 30 ? 1.721 : dof <= 60 ? 1.697 : dof <= 120 ? 1.671 : 1.658;
}

bool surely_below(const double* rates, std::size_t n, double bar, double floor_rsd) {
  if (n < 2 || bar <= 0) return false;
  double mean = 0;
  for (std::size_t i = 0; i < n; ++i) mean += rates[i];
  mean /= static_cast<double>(n);
  const double sd = std::max(relative_spread(rates, n), floor_rsd) * mean;
  const double t = student_t95(static_cast<int>(n - 1));
  return mean + t * sd / std::sqrt(static_cast<double>(n)) < bar;
}

namespace {
// Lower 10% quantiles of chi-squared with 2..9 degrees of freedom.
constexpr double kChi2Low10[] = {0.2107, 0.5844, 1.0636, 1.6103, 2.2041, 2.8331, 3.4895, 4.1682};
constexpr int kFewest = 3, kMostEarly = 10;  // the windows the table above covers
}  // namespace

double spread_upper_bound90(double rsd, int m) {
  if (m < kFewest || m > kMostEarly) return rsd;
  return rsd * std::sqrt(static_cast<double>(m - 1) / kChi2Low10[m - kFewest]);
}

bool spread_settled(const double* rates, std::size_t n, const MeasureConfig& c) {
  const auto k = static_cast<std::size_t>(std::max(2, c.rsd_windows));
  if (n >= k) return relative_spread(rates + (n - k), k) <= c.target_rsd;
  const int m = static_cast<int>(n);
  if (m < std::max(kFewest, c.fewest_windows) || m > kMostEarly) return false;
  const double bound = spread_upper_bound90(relative_spread(rates, n), m);
  return bound / std::sqrt(static_cast<double>(m)) <= c.target_rsd / std::sqrt(static_cast<double>(k));
}

std::size_t counted_from(const double* rates, std::size_t n, int rsd_windows) {
  const auto k = static_cast<std::size_t>(std::max(3, rsd_windows));
  if (n < k) return 0;
  for (std::size_t start = 0; start + k <= n; ++start)
    if (!drifting(rates + start, n - start)) return start;
  return n - k;
}

double ci90(const double* rates, std::size_t n) {
  if (n < 2) return 0;
  return student_t95(static_cast<int>(n - 1)) * relative_spread(rates, n) / std::sqrt(static_cast<double>(n));
}

bool precise_enough(const double* rates, std::size_t n, const MeasureConfig& c) {
  const std::size_t first = counted_from(rates, n, c.rsd_windows);
  const std::size_t m = n - first;
  return m >= static_cast<std::size_t>(std::max(3, c.fewest_windows)) && ci90(rates + first, m) <= c.target_ci90;
}

// One function on purpose: warm-up, windows and summary share the clock, the
// windows and the result, and the stop rule's order of checks reads best whole.
MeasureResult measure_steps(const MeasureConfig& c, const std::function<StepResult()>& step,
                            const SecondsClock& clock, const SecondsClock& cpu_clock) {
  MeasureResult r;
  const double start = clock();

  // Warm-up.
  bool drained = false;
  int ahead_streak = 0;
  for (;;) {
    const double now = clock() - start;
    const bool ahead = ahead_streak >= kAheadSteps;
    const bool long_enough = now >= c.warmup_seconds || ((drained || ahead) && now >= c.warmup_floor_seconds);
    // Workers shown keeping ahead need not outlast the stock (see measure.hpp).
    if (r.warmup_steps >= (ahead ? 0 : c.warmup_min_steps) && long_enough) {
      r.warmup_drained = drained && now < c.warmup_seconds;
      r.warmup_ahead = !drained && ahead && now < c.warmup_seconds;
      break;
    }
    if (now >= 0.5 * c.max_seconds && r.warmup_steps > 0) {
      r.warmup_complete = false;
      break;
    }
    const StepResult s = step();
    if (s.failed) {
      r.failed = true;
      r.elapsed_seconds = clock() - start;
      return r;
    }
    ++r.warmup_steps;
    const bool settled = c.warmup_until_drained && r.warmup_steps > c.warmup_min_steps;
    if (settled && s.starved) drained = true;
    const bool past_first_reads = c.warmup_until_drained && r.warmup_steps > c.ahead_min_steps;
    ahead_streak = past_first_reads && s.ahead ? ahead_streak + 1 : 0;
  }
  r.warmup_seconds = clock() - start;
  const double timed_wall0 = clock(), timed_cpu0 = cpu_clock();

  struct Window {
    double samples = 0, seconds = 0, busy = 0;
  };
  std::vector<Window> windows;
  std::vector<double> rates;
  const auto k = static_cast<std::size_t>(c.rsd_windows);

  for (;;) {
    Window w;
    std::int64_t steps = 0;
    bool partial = false;
    const double w0 = clock();
    for (;;) {
      const StepResult s = step();
      if (s.failed) {
        r.failed = true;
        break;
      }
      ++steps;
      w.samples += static_cast<double>(s.samples);
      w.busy += s.busy_seconds;
      w.seconds = clock() - w0;
      if (steps >= c.window_min_steps && w.seconds >= c.window_seconds) break;
      if (clock() - start >= c.max_seconds && !windows.empty()) {
        partial = true;  // the cap: a short last window would only add noise, drop it
        break;
      }
    }
    if (r.failed) break;
    r.timed_steps += steps;
    if (!partial && w.seconds > 0) {
      windows.push_back(w);
      rates.push_back(w.samples / w.seconds);
    }
    if (c.target_ci90 > 0 && precise_enough(rates.data(), rates.size(), c)) {
      r.stopped_on_precision = true;
      break;
    }
    if (c.target_ci90 <= 0 && spread_settled(rates.data(), rates.size(), c)) {
      r.stopped_by_rsd = true;
      r.settled_early = rates.size() < k;
      break;
    }
    if (c.stop_below > 0 && surely_below(rates.data(), rates.size(), c.stop_below)) {
      r.raced = true;
      break;
    }
    if (c.target_ci90 <= 0 && c.stop_on_scatter && r.warmup_complete && k >= 3 && rates.size() >= k && !drifting(&rates[rates.size() - k], k)) {
      r.stopped_on_scatter = true;
      break;
    }
    if (clock() - start >= c.max_seconds && !windows.empty()) break;
  }

  r.elapsed_seconds = clock() - start;
  if (const double wall = clock() - timed_wall0; wall > 0) r.cpu_cores = (cpu_clock() - timed_cpu0) / wall;
  r.windows = static_cast<int>(windows.size());
  if (windows.empty()) return r;
  const std::size_t first = c.target_ci90 > 0 ? counted_from(rates.data(), rates.size(), c.rsd_windows)
                            : windows.size() > k ? windows.size() - k
                                                 : 0;
  r.mean_windows = static_cast<int>(windows.size() - first);
  // Chosen for its low spread (stopped as soon as it was precise enough): the
  // tuner's racing bar reads the spread as its 90% upper bound.
  if (r.stopped_on_precision && r.mean_windows <= kMostEarly) r.settled_early = true;
  double samples = 0, seconds = 0, busy = 0;
  for (std::size_t i = first; i < windows.size(); ++i) {
    samples += windows[i].samples;
    seconds += windows[i].seconds;
    busy += windows[i].busy;
  }
  r.throughput = samples / seconds;
  r.throughput_rsd = relative_spread(&rates[first], rates.size() - first);
  r.throughput_ci90 = ci90(&rates[first], rates.size() - first);
  r.busy_fraction = std::clamp(busy / seconds, 0.0, 1.0);
  return r;
}

MeasureResult simulate_measurement(const MeasureConfig& c, double throughput, double samples_per_step,
                                   std::uint64_t seed, const SimulatedLoader& loader, double step_jitter) {
  std::mt19937_64 rng(seed ^ 0x5DEECE66DULL);
  std::normal_distribution<double> z(0.0, step_jitter);
  const double mean_step = samples_per_step / throughput;
  const double w = std::clamp(loader.wait_fraction, 0.0, 0.99);
  // While batches are queued a step runs at the compute rate and the loader
  // adds (1 - w) of what the step takes: the queue shrinks by w per batch.
  double queued = w > 0 ? std::max(0.0, loader.queued_batches) : 0;
  double now = 0;
  return measure_steps(
      c,
      [&] {
        const double jitter = std::exp(z(rng) - 0.5 * step_jitter * step_jitter);
        StepResult s{static_cast<std::int64_t>(samples_per_step), 0, false};
        s.busy_seconds = (1 - w) * mean_step * jitter;
        double wait = 0;
        if (queued >= loader.batches_per_step) {
          queued -= w * loader.batches_per_step;
        } else {
          queued = 0;
          wait = w * mean_step * jitter;
          s.starved = w > 0;
        }
        s.ahead = w == 0 && loader.keeps_ahead;
        now += s.busy_seconds + wait;
        return s;
      },
      [&] { return now; }, [&] { return now; });
}

namespace {
double status_kib(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  const std::string prefix = std::string(key) + ":";
  while (std::getline(f, line))
    if (line.rfind(prefix, 0) == 0) {
      try {
        return std::stod(line.substr(prefix.size()));
      } catch (...) {
        return 0;
      }
    }
  return 0;
}
}  // namespace

double peak_host_bytes() {
  double kib = status_kib("VmHWM");
  if (kib <= 0) kib = status_kib("VmRSS");
  return kib * 1024.0;
}

double current_host_bytes() { return status_kib("VmRSS") * 1024.0; }

bool reset_peak_host_bytes() {
  // "5" resets the peak RSS (Documentation/filesystems/proc.rst, clear_refs).
  std::ofstream f("/proc/self/clear_refs");
  if (!f) return false;
  f << "5";
  f.flush();
  return static_cast<bool>(f);
}

}  // namespace autotune
