#pragma once
// How the cpu and cuda workloads time training steps, and when they stop.
//
// 1. Warm-up: steps until BOTH at least `warmup_min_steps` steps (set it to
//    the steps the loader's prefetched backlog feeds: its batches over the
//    step's micro-batches, set_warmup_steps) AND `warmup_seconds` have passed.
//    The loader's workers fill their queues before the first step; a timed
//    window that starts on that backlog measures the queue, not the pipeline
//    (DESIGN.md, "The CUDA harness": a 0.1 s window read 3-5x too fast). If
//    the warm-up would eat more than half of `max_seconds`, it ends there and
//    `warmup_complete` is false.
//    Until drained (`warmup_until_drained`): once a step after the first
//    `warmup_min_steps` has found its data not ready (`starved`: the queue
//    it reads was empty), the backlog is gone and the steps run at the
//    pipeline's own rate; the warm-up then ends after `warmup_floor_seconds`
//    instead of `warmup_seconds` (`warmup_drained`). A job whose steps are
//    never starved (the loader keeps ahead: a backlog cannot inflate its
//    rate, but nothing in the steps proves the queue is not still draining)
//    keeps the full `warmup_seconds`, unless it proves the workers keep
//    ahead: kAheadSteps steps in a row after the first `ahead_min_steps`
//    (set it to the steps that read each worker's queue once,
//    set_warmup_steps) each found every queue
//    they read full with its worker waiting to push a batch it had made
//    (`ahead`). A queue's first read finds the stock laid up before the
//    first step; from its second, a worker found waiting has made a batch
//    since the read before (one round of the workers), so the workers keep
//    the steps' pace by themselves, and what stock is left cannot inflate
//    the rate. That needs no outlasting of `warmup_min_steps`, which on slow
//    steps and deep queues takes half of `max_seconds`: the warm-up ends at
//    the floor (`warmup_ahead`).
//    A starved step among the first
//    `warmup_min_steps` is the workers starting, not the drain. The loader's
//    queue says whether it was empty, not the time the step spent in it: on
//    a busy host a step can lose milliseconds inside the loader's call with
//    batches waiting (a thread descheduled while holding the queue's lock).
// 2. Timed windows: each closes after at least `window_min_steps` steps and
//    `window_seconds`; its throughput is samples / seconds.
// 3. Stop when the last `rsd_windows` windows have a relative standard
//    deviation (sample stddev / mean) at or under `target_rsd` (stopped_by_rsd),
//    or, sooner, when 3 or 4 windows already pin their mean down as well
//    as that would, with 90% confidence (`spread_settled`: a steady job
//    stops after 3 windows instead of 5), or when `max_seconds` since the start have passed (the cap). At least one
//    timed window is always completed, so a step slower than the cap overruns
//    it by one window; a window the cap cuts short is dropped. The result averages the last `rsd_windows` windows
//    (all windows if fewer): their samples over their seconds.
//    Windows that scatter more than `target_rsd` with no trend among them
//    (`stop_on_scatter`, after a complete warm-up): the last `rsd_windows`
//    show no significant least-squares slope over their index (`drifting`,
//    two-sided 95%). The measurement stops there (stopped_on_scatter):
//    running on to the cap would report the same last `rsd_windows`
//    windows' mean, no more precise, and a noisy job's trials used to spend
//    most of their seconds doing that. A trend (a warm-up effect still
//    fading, a throttling card) keeps it going to the spread stop or the cap.
//
//    With `target_ci90` > 0 (the autotune_trial helper's default, 0.03) the
//    timed span grows until the result is precise instead: stop once the
//    windows it counts (counted_from: all since the warm-up, less leading
//    ones while 5 or more trend) give their mean rate +-target_ci90 or better
//    at 90% (precise_enough, at least `fewest_windows` of them:
//    stopped_on_precision), or at the cap; the result averages those windows.
//    The spread and scatter stops are then off.
//
// 4. Racing (stop_below > 0, the bar the tuner sets: the incumbent's
//    throughput, discounted): after each timed window, once there are two,
//    the trial stops when it is below the bar with 95% confidence
//    (`surely_below`), reporting what it measured with raced = true. A trial
//    that is not clearly slower is measured in full.
//
// The step function does one training step and reports its samples and the
// part of its time that was compute (the rest is waiting for data); `failed`
// stops the measurement at once (the caller keeps the reason).
#include <cstdint>
#include <functional>
#include <string>

namespace autotune {

struct MeasureConfig {
  double warmup_seconds = 1.5;
  std::int64_t warmup_min_steps = 1;
  std::int64_t ahead_min_steps = 1;   // steps before full queues count as keeping ahead (the workers)
  bool warmup_until_drained = true;
  double warmup_floor_seconds = 0.5;  // the warm-up once the queue is seen drained
  double window_seconds = 0.2;
  std::int64_t window_min_steps = 2;
  int rsd_windows = 5;
  // 5%: the figure averages the last rsd_windows windows whichever way the
  // measurement stops, so windows that scatter by 2-5% give the same
  // precision (their spread over sqrt(5)) stopped now as after running to
  // the cap, which a 2% target made them do; what the target still buys is
  // a guard against a drift (windows trending by more than 5%).
  double target_rsd = 0.05;
  // The fewest windows the stop on the spread may take (spread_settled);
  // rsd_windows or more: only the last rsd_windows windows' spread, the rule
  // before early settling.
  int fewest_windows = 3;
  double max_seconds = 6.0;
  double stop_below = 0;  // samples/s; 0: no racing
  // Stop after rsd_windows windows that scatter without a trend (rule 3);
  // false: only the spread stop or the cap end a measurement (the rule
  // before, kept for benchmarks that compare against it).
  bool stop_on_scatter = true;
  // > 0: the stop on precision (rule 3's last paragraph): +-this share of the
  // mean at 90% confidence. 0: the spread and scatter stops above.
  double target_ci90 = 0;
};

struct StepResult {
  std::int64_t samples = 0;
  double busy_seconds = 0;  // compute part of the step
  bool failed = false;
  bool starved = false;  // its data was not ready: the queue was empty (or it is prepared inline)
  bool ahead = false;    // every queue it read was full: the workers were waiting to push
};

// Steps in a row found `ahead` that end the warm-up at the floor (one can be
// a worker's lucky spell).
constexpr int kAheadSteps = 3;

struct MeasureResult {
  bool failed = false;             // a step reported failure
  double throughput = 0;           // samples/s over the last rsd_windows windows
  double throughput_rsd = 0;       // over the same windows; 0 with one window
  bool stopped_by_rsd = false;     // false: the time cap, racing (or a failure) stopped it
  bool settled_early = false;      // stopped by the spread with fewer than rsd_windows windows
  bool stopped_on_scatter = false; // stopped after rsd_windows windows that scatter without a trend
  bool stopped_on_precision = false;  // target_ci90 met
  bool raced = false;              // stopped early below stop_below
  bool warmup_complete = true;     // both warm-up conditions were met
  bool warmup_drained = false;     // the warm-up ended early: the queue was seen empty
  bool warmup_ahead = false;       // the warm-up ended early: the queues were seen full, kAheadSteps in a row
  double busy_fraction = 0;        // busy seconds / wall seconds, same windows
  // Process CPU seconds / wall seconds from the first timed window's start to
  // the end: how many cores the pipeline kept busy (1 inline, up to the core
  // count with workers). Unlike throughput it does not move with the host's
  // speed, so it shows whether the workers ran in parallel at all.
  double cpu_cores = 0;
  std::int64_t warmup_steps = 0;
  std::int64_t timed_steps = 0;    // all timed windows
  int windows = 0;
  int mean_windows = 0;            // the windows `throughput` averages (the last rsd_windows, or counted_from's)
  double throughput_ci90 = 0;      // their mean's 90% half-width, relative; 0 under 2 windows
  double warmup_seconds = 0;
  double elapsed_seconds = 0;      // warm-up + timed
};

// Seconds from an arbitrary origin, monotonic. Injectable for tests.
using SecondsClock = std::function<double()>;
double steady_seconds();
// CPU seconds (user + system) used by every thread of this process so far.
double process_cpu_seconds();

// Empty when usable, else why not.
std::string validate(const MeasureConfig& c);

MeasureResult measure_steps(const MeasureConfig& c, const std::function<StepResult()>& step,
                            const SecondsClock& clock = steady_seconds,
                            const SecondsClock& cpu_clock = process_cpu_seconds);

// The one-sided 95% quantile of Student's t with `dof` degrees of freedom
// (dof >= 1; past 20, the largest of its span, so never below the true one).
double student_t95(int dof);

// Whether windows with these rates are below `bar` with 95% confidence: the
// one-sided Student t upper bound of their mean, with the spread taken as at
// least `floor_rsd` of the mean (a few windows can agree by chance), is under
// the bar. Needs two windows or more.
bool surely_below(const double* rates, std::size_t n, double bar, double floor_rsd = 0.02);

// The stop on the spread (rule 3) over the windows so far (rates[0..n)),
// with k = c.rsd_windows and c.target_rsd. With k of them or more: the last k have rsd <= target_rsd, so
// their mean is known to about target_rsd / sqrt(k). With m of them, 3 <= m
// < k (m >= c.fewest_windows, m <= 10): settled when even the 90% upper bound on the windows'
// true spread, rsd * sqrt((m-1) / chi2_0.10(m-1)), gives m windows that
// precision: bound / sqrt(m) <= target_rsd / sqrt(k). The bound, not the
// spread itself, because three windows can agree by chance: stopping on a
// lucky low spread would report a noisy mean as a precise one. With k = 5
// and a 5% target, 3 windows stop at a 1.26% spread, 4 at 1.97%: a steady
// job is measured in 3 windows instead of 5, a noisy one as before.
bool spread_settled(const double* rates, std::size_t n, const MeasureConfig& c);

// Where the windows a result counts begin under the stop on precision: 0 (all
// of them) unless `rsd_windows` (at least 3) or more trend (drifting); then
// the first start whose windows to the end do not, keeping at least
// `rsd_windows` (a trend to the end keeps the last `rsd_windows`).
std::size_t counted_from(const double* rates, std::size_t n, int rsd_windows);

// The 90% confidence half-width of the mean of these rates, relative to it:
// student_t95(n - 1) * relative_spread / sqrt(n). 0 for fewer than 2.
double ci90(const double* rates, std::size_t n);

// The stop on precision: the windows from counted_from, at least
// max(3, c.fewest_windows) of them, have ci90 <= c.target_ci90.
bool precise_enough(const double* rates, std::size_t n, const MeasureConfig& c);

// Whether the windows' rates trend: the least-squares slope over their
// index differs from 0 at 95% (two-sided Student t, n - 2 degrees of
// freedom). Needs 3 windows or more (fewer: false).
bool drifting(const double* rates, std::size_t n);

// The one-sided 90% upper bound on the true relative spread of m windows
// (3 <= m <= 10) whose sample spread is rsd: rsd * sqrt((m-1) /
// chi2_0.10(m-1)). A measurement that settled early was chosen for its low
// sample spread, so whatever reads its precision afterwards (the racing
// bar) takes this bound instead. Outside 3..10: rsd itself.
double spread_upper_bound90(double rsd, int m);

// The loader as the virtual clock below sees it: the share of a step spent
// waiting for data once the queue is drained (0: the loader keeps ahead), the
// batches queued when the first step starts, and batches taken per step.
struct SimulatedLoader {
  double wait_fraction = 0;
  double queued_batches = 0;
  double batches_per_step = 1;
  bool keeps_ahead = false;  // workers that wait on full queues (only without wait_fraction)
};

// The rule above on a virtual clock, for workloads that model a pipeline
// rather than run one (synthetic, replay): steps of `samples_per_step`
// samples whose times scatter by `step_jitter` (relative) around the mean
// that gives `throughput`, so that windows, warm-up, the cap and racing take
// the seconds a real measurement would (elapsed_seconds), without waiting.
// With a loader that waits, the steps first drain its queue at the compute
// rate (1 - wait_fraction of the mean step, not starved), then wait for data;
// a loader that `keeps_ahead` finds every step's queue full.
MeasureResult simulate_measurement(const MeasureConfig& c, double throughput, double samples_per_step,
                                   std::uint64_t seed, const SimulatedLoader& loader = {},
                                   double step_jitter = 0.15);

// Relative standard deviation (sample stddev / mean) of values; 0 for fewer
// than two values or a zero mean.
double relative_spread(const double* values, std::size_t n);

// Peak resident set of this process in bytes (VmHWM, else VmRSS, from
// /proc/self/status); 0 where unavailable.
double peak_host_bytes();
// Current resident set (VmRSS) in bytes; 0 where unavailable.
double current_host_bytes();
// Resets the kernel's peak (VmHWM) to the current RSS, so that a trial run in
// a long-lived process reports its own peak. Best effort: false if refused.
bool reset_peak_host_bytes();

}  // namespace autotune
