// The timing loop with an injected clock: each fake step advances it by a
// scripted duration, so every assertion is exact.
#include "workloads/measure.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

namespace autotune {
namespace {

struct FakePipeline {
  double now = 0;
  std::int64_t steps = 0;
  double cpu = 0;
  std::function<double(std::int64_t)> step_seconds;  // by step number, from 0
  std::function<double(std::int64_t)> step_cores = [](std::int64_t) { return 1.0; };  // threads busy in it
  double busy_share = 0.5;
  std::function<bool(std::int64_t)> starved = [](std::int64_t) { return false; };
  std::function<bool(std::int64_t)> full = [](std::int64_t) { return false; };  // found its queue full

  StepResult step() {
    const double dt = step_seconds(steps);
    const bool hungry = starved(steps), ahead = full(steps);
    cpu += dt * step_cores(steps);
    ++steps;
    now += dt;
    return {10, dt * busy_share, false, hungry, ahead};
  }
  MeasureResult run(const MeasureConfig& c) {
    return measure_steps(c, [this] { return step(); }, [this] { return now; }, [this] { return cpu; });
  }
};

MeasureConfig config() {
  MeasureConfig c;
  c.warmup_seconds = 1.5;
  c.warmup_min_steps = 1;
  c.window_seconds = 0.2;
  c.window_min_steps = 2;
  c.rsd_windows = 5;
  c.target_rsd = 0.02;
  c.max_seconds = 10;
  return c;
}

TEST(Measure, SteadyStepsStopByRsdWithExactThroughput) {
  FakePipeline p;
  p.step_seconds = [](std::int64_t) { return 0.01; };
  const MeasureResult r = p.run(config());
  EXPECT_FALSE(r.failed);
  EXPECT_TRUE(r.stopped_by_rsd);
  EXPECT_TRUE(r.warmup_complete);
  EXPECT_EQ(r.windows, 3) << "windows that agree exactly settle at the fewest";
  EXPECT_EQ(r.mean_windows, 3);
  EXPECT_NEAR(r.throughput, 1000.0, 1e-6);  // 10 samples per 10 ms
  EXPECT_NEAR(r.throughput_rsd, 0.0, 1e-9);
  EXPECT_NEAR(r.busy_fraction, 0.5, 1e-9);
  EXPECT_GE(r.warmup_seconds, 1.5);
  EXPECT_LT(r.elapsed_seconds, 1.5 + 3 * 0.2 + 0.1);
}

// The early stop on the spread: 3 or 4 windows stop only when even the 90%
// bound on their spread gives the precision of 5 windows at the target.
TEST(Measure, SteadyWindowsSettleInThreeOrFourNoisierOnesTakeFive) {
  MeasureConfig c = config();
  c.target_rsd = 0.05;  // 5 windows: 5% / sqrt(5) = 2.24% on the mean
  const double steady3[] = {100, 101, 100};  // rsd 0.58%: bound 1.77%, / sqrt(3) = 1.02%
  EXPECT_TRUE(spread_settled(steady3, 3, c));
  const double loose3[] = {100, 103, 100};  // rsd 1.7%: bound 5.3%, / sqrt(3) = 3.0%
  EXPECT_FALSE(spread_settled(loose3, 3, c)) << "three windows can agree by chance";
  const double steady4[] = {100, 102, 98, 100};  // rsd 1.63%: bound 3.7%, / 2 = 1.85%
  EXPECT_TRUE(spread_settled(steady4, 4, c));
  const double two[] = {100, 100};
  EXPECT_FALSE(spread_settled(two, 2, c)) << "two windows never settle";
  const double five[] = {100, 109, 100, 109, 100};  // rsd 4.9%: the plain rule
  EXPECT_TRUE(spread_settled(five, 5, c));
  const double drift[] = {90, 100, 100, 100, 100, 100};  // the last 5 decide
  EXPECT_TRUE(spread_settled(drift, 6, c));
  c.target_rsd = 0.04;
  EXPECT_FALSE(spread_settled(five, 5, c));
  c.target_rsd = 0.05;
  c.fewest_windows = 5;  // the rule before early settling
  EXPECT_FALSE(spread_settled(steady3, 3, c));
  EXPECT_FALSE(spread_settled(steady4, 4, c));
  EXPECT_TRUE(spread_settled(five, 5, c));
}

TEST(Measure, WindowsThatScatterByTwoPercentRunToFive) {
  // Windows of exactly 20 steps (after a 20-step warm-up) alternate between
  // steps of 9.8 ms and of 10.2 ms: rates 1020 and 980, a 2% spread, too
  // loose for 3 or 4 windows to settle, within the 5% target for 5.
  FakePipeline p;
  p.step_seconds = [](std::int64_t i) { return (i / 20) % 2 ? 0.0102 : 0.0098; };
  MeasureConfig c = config();
  c.target_rsd = 0.05;
  c.warmup_seconds = 0;
  c.warmup_min_steps = 20;
  c.warmup_until_drained = false;
  c.window_seconds = 0;
  c.window_min_steps = 20;
  const MeasureResult r = p.run(c);
  EXPECT_EQ(r.warmup_steps, 20);
  EXPECT_TRUE(r.stopped_by_rsd);
  EXPECT_EQ(r.windows, 5);
  EXPECT_NEAR(r.throughput, 1000.0, 15.0);
}

TEST(Measure, WarmUpOutlastsThePrefetchedBacklog) {
  // The first 400 steps come from a full queue (1 ms each), then the pipeline's
  // true pace (20 ms). A short warm-up would report the backlog's 10000/s.
  FakePipeline p;
  p.step_seconds = [](std::int64_t i) { return i < 400 ? 0.001 : 0.02; };
  MeasureConfig c = config();
  c.warmup_min_steps = 400;  // the queue capacity
  c.warmup_seconds = 0.1;
  const MeasureResult r = p.run(c);
  EXPECT_GE(r.warmup_steps, 400);
  EXPECT_NEAR(r.throughput, 500.0, 1e-6);
  EXPECT_TRUE(r.stopped_by_rsd);
}

TEST(Measure, MinimumWarmUpTimeHoldsEvenWithFewSteps) {
  FakePipeline p;
  p.step_seconds = [](std::int64_t i) { return i < 100 ? 0.001 : 0.02; };  // 0.1 s of backlog
  const MeasureResult r = p.run(config());  // warm-up 1.5 s, min 1 step
  EXPECT_GE(r.warmup_seconds, 1.5);
  EXPECT_NEAR(r.throughput, 500.0, 1e-6);
}

// A loader-bound pipeline behind a full queue: the first `backlog` steps
// take the queue's batches at the compute pace (5 ms), then each step finds
// the queue empty and waits 5 ms for its batch (10 ms: 1000 samples/s).
FakePipeline draining(std::int64_t backlog) {
  FakePipeline p;
  p.step_seconds = [backlog](std::int64_t i) { return i < backlog ? 0.005 : 0.01; };
  p.starved = [backlog](std::int64_t i) { return i >= backlog; };
  return p;
}

// Compute-bound behind workers that keep ahead: steps of step_seconds (5 ms: 2000 samples/s),
// each from step `first` on finding its queue full.
FakePipeline keeping_ahead(std::int64_t first, double step_seconds = 0.005) {
  FakePipeline p;
  p.step_seconds = [step_seconds](std::int64_t) { return step_seconds; };
  p.full = [first](std::int64_t i) { return i >= first; };
  return p;
}

// The warm-up ended by one step past its floor, not at 1.5 s.
void expect_floor_ended(const MeasureResult& r, const MeasureConfig& c, double step_seconds) {
  EXPECT_TRUE(r.warmup_complete);
  EXPECT_GE(r.warmup_seconds, c.warmup_floor_seconds);
  EXPECT_LT(r.warmup_seconds, c.warmup_floor_seconds + step_seconds + 1e-3);
}

TEST(Measure, OnceAStepWaitsForItsDataTheWarmUpEndsAtItsFloor) {
  FakePipeline p = draining(40);  // drained 0.2 s in
  MeasureConfig c = config();
  c.warmup_min_steps = 8;
  const MeasureResult r = p.run(c);
  EXPECT_TRUE(r.warmup_drained);
  expect_floor_ended(r, c, 0.01);
  EXPECT_NEAR(r.throughput, 1000.0, 1e-6) << "the pipeline's pace, not the backlog's 2000/s";
}

TEST(Measure, ADrainLongerThanTheFloorEndsTheWarmUpAtTheFirstWait) {
  FakePipeline p = draining(160);  // drained 0.8 s in: the floor alone would time the backlog
  MeasureConfig c = config();
  c.warmup_min_steps = 8;
  const MeasureResult r = p.run(c);
  EXPECT_TRUE(r.warmup_drained);
  EXPECT_EQ(r.warmup_steps, 161) << "the step that waited ends it";
  EXPECT_NEAR(r.throughput, 1000.0, 1e-6);
}

TEST(Measure, WaitsWhileTheWorkersStartDoNotEndTheWarmUp) {
  // The first 8 steps (the queue's capacity) wait for workers starting up;
  // after that the loader keeps ahead and no step waits: the full warm-up.
  FakePipeline p;
  p.step_seconds = [](std::int64_t i) { return i < 8 ? 0.05 : 0.005; };
  p.starved = [](std::int64_t i) { return i < 8; };
  MeasureConfig c = config();
  c.warmup_min_steps = 8;
  const MeasureResult r = p.run(c);
  EXPECT_FALSE(r.warmup_drained);
  EXPECT_GE(r.warmup_seconds, 1.5);
}

TEST(Measure, QueuesFoundFullThreeStepsRunningEndTheWarmUpAtItsFloor) {
  // Every step after the queue's capacity finds its queue full.
  MeasureConfig c = config();
  c.warmup_min_steps = 8;
  const MeasureResult r = keeping_ahead(8).run(c);
  EXPECT_TRUE(r.warmup_ahead);
  EXPECT_FALSE(r.warmup_drained);
  expect_floor_ended(r, c, 0.005);
  EXPECT_NEAR(r.throughput, 2000.0, 1e-6);
}

TEST(Measure, FullQueuesFromTheSecondReadOfEachEndTheWarmUpWithoutOutlastingTheStock) {
  // 4 workers x prefetch 9: 40 batches laid up before the first step, 2 s of
  // 50 ms steps to outlast. Each queue's second read (from step 5) finds its
  // worker waiting with a batch made since: it ends at the floor.
  MeasureConfig c = config();
  c.warmup_min_steps = 40;
  c.ahead_min_steps = 4;
  const MeasureResult r = keeping_ahead(0, 0.05).run(c);
  EXPECT_TRUE(r.warmup_ahead);
  expect_floor_ended(r, c, 0.05);
  EXPECT_LT(r.warmup_steps, 40);
}

TEST(Measure, FullQueuesAmongTheFirstStepsOrTwoInARowDoNotEndTheWarmUp) {
  MeasureConfig c = config();
  c.warmup_min_steps = 8;
  c.ahead_min_steps = 8;
  // Full only on the first read of each of 8 queues (the stock laid up before them).
  FakePipeline early;
  early.step_seconds = [](std::int64_t) { return 0.005; };
  early.full = [](std::int64_t i) { return i < 8; };
  EXPECT_FALSE(early.run(c).warmup_ahead);
  EXPECT_GE(early.run(c).warmup_seconds, 1.5);
  // After them, full on two steps of every three: never kAheadSteps running.
  FakePipeline spells;
  spells.step_seconds = [](std::int64_t) { return 0.005; };
  spells.full = [](std::int64_t i) { return i >= 8 && i % 3 != 0; };
  const MeasureResult r = spells.run(c);
  EXPECT_FALSE(r.warmup_ahead);
  EXPECT_GE(r.warmup_seconds, 1.5);
}

TEST(Measure, TheDrainRuleCanBeTurnedOff) {
  MeasureConfig c = config();
  c.warmup_min_steps = 8;
  c.warmup_until_drained = false;
  FakePipeline p = draining(40);
  const MeasureResult r = p.run(c);
  EXPECT_FALSE(r.warmup_drained);
  EXPECT_GE(r.warmup_seconds, 1.5);
  EXPECT_NEAR(r.throughput, 1000.0, 1e-6);
  const MeasureResult a = keeping_ahead(8).run(c);  // and the full queues' rule with it
  EXPECT_FALSE(a.warmup_ahead);
  EXPECT_GE(a.warmup_seconds, 1.5);
}

TEST(Measure, TheVirtualLoaderDrainsItsQueueBeforeItWaits) {
  MeasureConfig c = config();
  c.warmup_min_steps = 3 * (4 + 1);
  c.ahead_min_steps = 3;
  // 3 workers x prefetch 4 queued; half of each step waits once drained.
  const MeasureResult drained = simulate_measurement(c, 1000, 10, 7, SimulatedLoader{0.5, 12, 1}, 0.05);
  EXPECT_TRUE(drained.warmup_drained);
  EXPECT_LT(drained.warmup_seconds, 0.6);
  EXPECT_NEAR(drained.throughput, 1000, 1000 * 0.05);
  const MeasureResult even = simulate_measurement(c, 1000, 10, 7, SimulatedLoader{0, 12, 1}, 0.05);
  EXPECT_FALSE(even.warmup_drained) << "a loader that never waits";
  EXPECT_FALSE(even.warmup_ahead) << "but not shown waiting on full queues";
  EXPECT_GE(even.warmup_seconds, 1.5);
  const MeasureResult ahead = simulate_measurement(c, 1000, 10, 7, SimulatedLoader{0, 12, 1, true}, 0.05);
  EXPECT_FALSE(ahead.warmup_drained);
  EXPECT_TRUE(ahead.warmup_ahead);
  EXPECT_LT(ahead.warmup_seconds, 0.6);
  EXPECT_NEAR(ahead.throughput, 1000, 1000 * 0.05);
}

TEST(Measure, NoisyStepsHitTheTimeCap) {
  // Alternating windows of very different pace never settle under 2%; with
  // the stop on scatter off (the rule before it) they run to the cap.
  FakePipeline p;
  p.step_seconds = [](std::int64_t i) { return (i / 20) % 2 ? 0.01 : 0.03; };
  MeasureConfig c = config();
  c.max_seconds = 4;
  c.stop_on_scatter = false;
  const MeasureResult r = p.run(c);
  EXPECT_FALSE(r.stopped_by_rsd);
  EXPECT_GT(r.throughput_rsd, 0.02);
  EXPECT_GE(r.elapsed_seconds, 4.0);
  EXPECT_LT(r.elapsed_seconds, 4.0 + 0.1);
  EXPECT_GT(r.throughput, 10.0 / 0.03 * 0.9);
  EXPECT_LT(r.throughput, 10.0 / 0.01 * 1.1);
}

TEST(Measure, DriftingIsASignificantSlopeOverTheWindows) {
  const std::vector<double> rising = {100, 103, 106, 109, 112};
  const std::vector<double> noisy = {100, 87, 111, 91, 118};  // 12% spread, no trend
  const std::vector<double> rising_noisy = {100, 112, 118, 131, 142};
  EXPECT_TRUE(drifting(rising.data(), rising.size()));
  EXPECT_FALSE(drifting(noisy.data(), noisy.size()));
  EXPECT_TRUE(drifting(rising_noisy.data(), rising_noisy.size()));
  EXPECT_FALSE(drifting(rising.data(), 2)) << "two windows cannot show a trend";
}

// Window paces by the window a step falls in (after the 1.5 s warm-up, 0.2 s
// windows): 0%, +15%, -10%, +10%, -15% slower, repeating: a 12% spread, no trend.
double scattered_step(double now) {
  static constexpr double kFactor[] = {1.0, 1.15, 0.9, 1.1, 0.85};
  if (now < 1.5) return 0.01;
  return 0.01 * kFactor[static_cast<int>((now - 1.5) / 0.2) % 5];
}

TEST(Measure, WindowsThatScatterWithoutATrendStopAfterFive) {
  FakePipeline p;
  p.step_seconds = [&p](std::int64_t) { return scattered_step(p.now); };
  const MeasureResult r = p.run(config());  // target 2%, cap 10 s
  EXPECT_TRUE(r.stopped_on_scatter);
  EXPECT_FALSE(r.stopped_by_rsd);
  EXPECT_EQ(r.windows, 5);
  EXPECT_GT(r.throughput_rsd, 0.05);
  EXPECT_LT(r.elapsed_seconds, 3.0) << "not the 10 s cap, which would report the same last 5 windows";
  EXPECT_NEAR(r.throughput, 1000.0, 100.0);
}

TEST(Measure, WindowsThatTrendAreNotStoppedOnScatter) {
  // The pace rises 25% a second (a warm-up effect still fading): each
  // window 5% faster than the one before. It runs to the cap.
  FakePipeline p;
  p.step_seconds = [&p](std::int64_t) { return 0.01 / (1 + 0.25 * std::max(0.0, p.now - 1.5)); };
  MeasureConfig c = config();
  c.max_seconds = 4;
  const MeasureResult r = p.run(c);
  EXPECT_FALSE(r.stopped_on_scatter);
  EXPECT_FALSE(r.stopped_by_rsd);
  EXPECT_GE(r.elapsed_seconds, 4.0);
}

TEST(Measure, AWarmUpCutShortIsNotStoppedOnScatter) {
  // The warm-up ran to half the cap without its conditions met: the windows
  // after it may still carry the backlog, so only the spread or the cap end it.
  FakePipeline p;
  p.step_seconds = [&p](std::int64_t) { return scattered_step(p.now); };
  MeasureConfig c = config();
  c.warmup_min_steps = 1'000'000;
  c.max_seconds = 4;
  const MeasureResult r = p.run(c);
  EXPECT_FALSE(r.warmup_complete);
  EXPECT_FALSE(r.stopped_on_scatter);
  EXPECT_GE(r.elapsed_seconds, 4.0);
}

TEST(Measure, WarmUpLongerThanHalfTheCapIsCutAndSaysSo) {
  FakePipeline p;
  p.step_seconds = [](std::int64_t) { return 0.01; };
  MeasureConfig c = config();
  c.warmup_seconds = 5;
  c.max_seconds = 2;
  const MeasureResult r = p.run(c);
  EXPECT_FALSE(r.warmup_complete);
  EXPECT_NEAR(r.warmup_seconds, 1.0, 0.011);
  EXPECT_GE(r.windows, 1);
}

TEST(Measure, AStepSlowerThanTheCapStillGivesOneWindow) {
  FakePipeline p;
  p.step_seconds = [](std::int64_t) { return 3.0; };
  MeasureConfig c = config();
  c.max_seconds = 2;
  const MeasureResult r = p.run(c);
  EXPECT_EQ(r.windows, 1);
  EXPECT_NEAR(r.throughput, 10.0 / 3.0, 1e-9);
  EXPECT_FALSE(r.stopped_by_rsd);
}

TEST(Measure, CpuCoresCountsTheTimedPartOnly) {
  // Warm-up steps keep 4 threads busy (workers filling their queues), timed
  // ones 2: the result is the timed part's 2 cores.
  FakePipeline p;
  p.step_seconds = [](std::int64_t) { return 0.01; };
  p.step_cores = [&p](std::int64_t) { return p.now < 1.5 ? 4.0 : 2.0; };
  const MeasureResult r = p.run(config());
  EXPECT_NEAR(r.cpu_cores, 2.0, 1e-9);
}

TEST(Measure, AFailedStepStopsAtOnce) {
  double now = 0;
  int calls = 0;
  const MeasureResult r = measure_steps(
      config(),
      [&] {
        now += 0.01;
        return StepResult{1, 0, ++calls == 3};
      },
      [&] { return now; });
  EXPECT_TRUE(r.failed);
  EXPECT_EQ(calls, 3);
}

TEST(Measure, RealClockWithSleeps) {
  // 5 ms sleeps: about 200 steps/s. Loose bounds for a loaded machine.
  MeasureConfig c = config();
  c.warmup_seconds = 0.1;
  c.window_seconds = 0.05;
  c.target_rsd = 0.5;
  c.max_seconds = 2;
  const MeasureResult r = measure_steps(c, [] {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return StepResult{1, 0.005, false};
  });
  EXPECT_GT(r.throughput, 50.0);
  EXPECT_LT(r.throughput, 201.0);
  EXPECT_GT(r.busy_fraction, 0.2);
  EXPECT_LT(r.cpu_cores, 0.5);  // sleeping is not CPU time
}

TEST(Measure, ATrialSurelyBelowTheBarStopsAfterTwoWindowsAndSaysSo) {
  FakePipeline p;
  p.step_seconds = [](std::int64_t) { return 0.01; };  // 1000 samples/s
  MeasureConfig c = config();
  c.stop_below = 1500;
  const MeasureResult r = p.run(c);
  EXPECT_TRUE(r.raced);
  EXPECT_FALSE(r.stopped_by_rsd);
  EXPECT_EQ(r.windows, 2) << "the fewest windows that decide it";
  EXPECT_NEAR(r.throughput, 1000.0, 1e-6) << "what it measured";
  EXPECT_GE(r.warmup_seconds, 1.5) << "never before the warm-up ends";
}

TEST(Measure, ATrialNearTheBarIsMeasuredInFull) {
  FakePipeline p;
  p.step_seconds = [](std::int64_t) { return 0.01; };
  MeasureConfig c = config();
  c.stop_below = 1010;  // 1% above: within what three windows can tell apart (the spread's floor is 2%)
  const MeasureResult r = p.run(c);
  EXPECT_FALSE(r.raced);
  EXPECT_TRUE(r.stopped_by_rsd);
  EXPECT_EQ(r.windows, 3) << "settled, as a steady trial with no bar is";
}

TEST(Measure, NoisyWindowsNeedMoreEvidenceBeforeRacing) {
  // Windows alternating 800 and 1200 samples/s (mean 1000, rsd 0.2) against
  // a bar of 1300: two windows do not settle it, more do.
  FakePipeline p;
  p.step_seconds = [](std::int64_t i) { return (i / 20) % 2 ? 1.0 / 120 : 1.0 / 80; };
  MeasureConfig c = config();
  c.stop_below = 1300;
  const MeasureResult r = p.run(c);
  EXPECT_TRUE(r.raced);
  EXPECT_GT(r.windows, 2);
}

TEST(Measure, SurelyBelowNeedsTwoWindowsAndAFloorOnTheSpread) {
  const double one[] = {100};
  EXPECT_FALSE(surely_below(one, 1, 1000));
  const double same[] = {100, 100};  // agree exactly: the 2% floor still applies
  EXPECT_TRUE(surely_below(same, 2, 120));
  EXPECT_FALSE(surely_below(same, 2, 105));
  EXPECT_FALSE(surely_below(same, 2, 0)) << "no bar, no racing";
}

TEST(Measure, RelativeSpreadAndConfigChecks) {
  const double v[] = {1, 2, 3};
  EXPECT_NEAR(relative_spread(v, 3), 0.5, 1e-12);
  EXPECT_EQ(relative_spread(v, 1), 0.0);
  EXPECT_TRUE(validate(config()).empty());
  MeasureConfig bad = config();
  bad.rsd_windows = 1;
  EXPECT_FALSE(validate(bad).empty());
  bad = config();
  bad.fewest_windows = 2;
  EXPECT_FALSE(validate(bad).empty());
}

TEST(Measure, PeakHostBytesIsReadable) {
  EXPECT_GT(peak_host_bytes(), 1e6);
  reset_peak_host_bytes();  // best effort; must not break the reading
  EXPECT_GT(peak_host_bytes(), 1e6);
}

// The stopping rule's vectors that autotune_trial's tests read too
// (tests/support/stop_rule_vectors.json): one rule in two languages.
nlohmann::json stop_rule_vectors() {
  std::ifstream f(AUTOTUNE_SOURCE_DIR "/tests/support/stop_rule_vectors.json");
  return nlohmann::json::parse(f);
}

TEST(StopRuleVectors, TheHarnessComputesWhatTheHelperDoes) {
  const nlohmann::json v = stop_rule_vectors();
  for (const auto& c : v.at("student_t95")) EXPECT_EQ(student_t95(c[0].get<int>()), c[1].get<double>()) << c;
  for (const auto& c : v.at("drifting")) {
    const auto r = c.at("rates").get<std::vector<double>>();
    EXPECT_EQ(drifting(r.data(), r.size()), c.at("expect").get<bool>()) << c;
  }
  for (const auto& c : v.at("surely_below")) {
    const auto r = c.at("rates").get<std::vector<double>>();
    EXPECT_EQ(surely_below(r.data(), r.size(), c.at("bar").get<double>()), c.at("expect").get<bool>()) << c;
  }
  // A case's rule settings over MeasureConfig's defaults.
  auto config_of = [](const nlohmann::json& c) {
    MeasureConfig m;
    m.target_rsd = c.value("target_rsd", m.target_rsd);
    m.target_ci90 = c.value("target_ci90", m.target_ci90);
    m.fewest_windows = c.value("fewest_windows", m.fewest_windows);
    return m;
  };
  for (const auto& c : v.at("spread_settled")) {
    const auto r = c.at("rates").get<std::vector<double>>();
    EXPECT_EQ(spread_settled(r.data(), r.size(), config_of(c)), c.at("expect").get<bool>()) << c;
  }
  for (const auto& c : v.at("counted_from")) {
    const auto r = c.at("rates").get<std::vector<double>>();
    EXPECT_EQ(counted_from(r.data(), r.size(), c.at("rsd_windows").get<int>()), c.at("expect").get<std::size_t>())
        << c;
  }
  for (const auto& c : v.at("ci90")) {
    const auto r = c.at("rates").get<std::vector<double>>();
    EXPECT_NEAR(ci90(r.data(), r.size()), c.at("expect").get<double>(), 1e-9) << c;
  }
  for (const auto& c : v.at("precise_enough")) {
    const auto r = c.at("rates").get<std::vector<double>>();
    EXPECT_EQ(precise_enough(r.data(), r.size(), config_of(c)), c.at("expect").get<bool>()) << c;
  }
}

// The stop on precision on the fake pipeline: windows that scatter by 12%
// without a trend run on (no stop on scatter) until +-3% or the cap, and the
// result counts every window, with its precision.
TEST(Measure, WithATargetCi90TheSpanGrowsUntilThePrecisionOrTheCap) {
  MeasureConfig c = config();
  c.target_ci90 = 0.03;
  c.max_seconds = 30;
  FakePipeline p;
  p.step_seconds = [&p](std::int64_t) { return scattered_step(p.now); };
  const MeasureResult r = p.run(c);
  EXPECT_TRUE(r.stopped_on_precision);
  EXPECT_FALSE(r.stopped_on_scatter);
  EXPECT_FALSE(r.stopped_by_rsd);
  EXPECT_GT(r.windows, 10) << "a 12% scatter needs more than 5 windows for +-3%";
  EXPECT_EQ(r.mean_windows, r.windows) << "no trend: every window counts";
  EXPECT_LE(r.throughput_ci90, 0.03);
  EXPECT_GT(r.throughput_ci90, 0.0);
  EXPECT_NEAR(r.throughput, 1000.0, 30.0);

  c.max_seconds = 3;  // the cap first: it says how precise it got
  FakePipeline q;
  q.step_seconds = [&q](std::int64_t) { return scattered_step(q.now); };
  const MeasureResult capped = q.run(c);
  EXPECT_FALSE(capped.stopped_on_precision);
  EXPECT_GE(capped.elapsed_seconds, 3.0);
  EXPECT_GT(capped.throughput_ci90, 0.03);

  FakePipeline steady;  // a steady job stops after the fewest windows
  steady.step_seconds = [](std::int64_t) { return 0.01; };
  const MeasureResult quick = steady.run(c);
  EXPECT_TRUE(quick.stopped_on_precision);
  EXPECT_EQ(quick.windows, 3);
  EXPECT_TRUE(quick.settled_early) << "chosen for its low spread: the racing bar reads it as a bound";
}

TEST(Measure, WithATargetCi90ATrendAtTheStartIsLeftBehind) {
  // 8 windows 20% slow (a warm-up effect still fading), then steady: the
  // result counts from where the trend ends, not the slow start.
  MeasureConfig c = config();
  c.target_ci90 = 0.03;
  c.warmup_seconds = 0;
  c.warmup_until_drained = false;
  c.window_seconds = 0;
  c.window_min_steps = 20;
  c.fewest_windows = 12;
  FakePipeline p;
  p.step_seconds = [](std::int64_t i) { return i < 20 * 4 ? 0.0125 : 0.01; };
  const MeasureResult r = p.run(c);
  EXPECT_TRUE(r.stopped_on_precision);
  EXPECT_LT(r.mean_windows, r.windows);
  EXPECT_NEAR(r.throughput, 1000.0, 50.0);
}

}  // namespace
}  // namespace autotune

