// The tool's own metrics written and read by their typed names
// (core/metric_names.hpp): each kind round-trips, lands in `metrics` under
// its name as the journal writes it, and a value of the wrong kind does not
// compile.
#include "core/outcome.hpp"

#include <cmath>
#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

namespace autotune {
namespace {

template <class Name, class V>
concept Settable = requires(Outcome o, Name n, V v) { o.set(n, v); };

static_assert(Settable<metric::Real, double> && Settable<metric::Real, int>);
static_assert(!Settable<metric::Real, bool>, "a quantity is not a flag");
static_assert(Settable<metric::Count, int> && Settable<metric::Count, std::size_t>);
static_assert(!Settable<metric::Count, double>, "a count takes a whole number");
static_assert(!Settable<metric::Count, bool>);
static_assert(Settable<metric::Flag, bool>);
static_assert(!Settable<metric::Flag, double> && !Settable<metric::Flag, int>, "a flag takes a bool");
// A typed name is read by its kind, never as a script's string.
template <class Name>
concept ReadByString = requires(Outcome o, Name n) { o.metric(n); };
static_assert(ReadByString<const char*> && !ReadByString<metric::Real> && !ReadByString<metric::Flag>);

TEST(OutcomeMetrics, ARealRoundTripsUnderItsName) {
  Outcome o;
  EXPECT_EQ(o.get(metric::ram_bytes), std::nullopt);
  o.set(metric::ram_bytes, 1.5e9);
  o.set(metric::gpu_busy, 0.25);
  EXPECT_EQ(o.get(metric::ram_bytes), 1.5e9);
  EXPECT_EQ(o.ram_bytes(), 1.5e9);
  EXPECT_EQ(o.get(metric::gpu_busy), 0.25);
  EXPECT_EQ(o.metrics.at("ram_bytes"), 1.5e9);
  EXPECT_EQ(o.metrics.size(), 2u);
  o.set(metric::ram_bytes, 7);  // overwritten, an integer taken as a quantity
  EXPECT_EQ(o.get(metric::ram_bytes), 7.0);
}

TEST(OutcomeMetrics, ACountRoundTripsAsAWholeNumber) {
  Outcome o;
  EXPECT_EQ(o.get(metric::windows), std::nullopt);
  o.set(metric::windows, 12);
  o.set(metric::repeats, std::size_t{3});
  o.set(metric::timed_steps, std::int64_t{1} << 40);
  EXPECT_EQ(o.get(metric::windows), 12);
  EXPECT_EQ(o.get(metric::repeats), 3);
  EXPECT_EQ(o.get(metric::timed_steps), std::int64_t{1} << 40);
  EXPECT_EQ(o.metrics.at("windows"), 12.0);
  EXPECT_EQ(o.metrics.at("repeats"), 3.0);
}

TEST(OutcomeMetrics, ACountAScriptReportedReadsToTheNearestWholeNumber) {
  Outcome o;
  o.metrics["world_size"] = 3.9999999;  // as a job's float arithmetic may write it
  EXPECT_EQ(o.get(metric::world_size), 4);
  for (double v : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(), 1e300}) {
    o.metrics["world_size"] = v;
    EXPECT_EQ(o.get(metric::world_size), std::nullopt) << v;
  }
}

TEST(OutcomeMetrics, AFlagIsWrittenAsOneOrZero) {
  Outcome o;
  EXPECT_FALSE(o.has(metric::settled_early));
  EXPECT_EQ(o.get(metric::settled_early), std::nullopt);
  o.set(metric::settled_early, true);
  EXPECT_TRUE(o.has(metric::settled_early));
  EXPECT_EQ(o.get(metric::settled_early), true);
  EXPECT_EQ(o.metrics.at("settled_early"), 1.0);
}

TEST(OutcomeMetrics, AFlagSetFalseIsPresentButNotSet) {
  Outcome o;
  o.set(metric::warmup_ahead, false);
  EXPECT_FALSE(o.has(metric::warmup_ahead));
  EXPECT_EQ(o.get(metric::warmup_ahead), false) << "said no, which differs from not said";
  EXPECT_EQ(o.metrics.at("warmup_ahead"), 0.0);
  o.set(metric::warmup_ahead, true);
  EXPECT_TRUE(o.has(metric::warmup_ahead));
}

TEST(OutcomeMetrics, AFlagAScriptReportedIsSetOnlyAboveZero) {
  Outcome o;
  for (double v : {0.0, -1.0, std::numeric_limits<double>::quiet_NaN()}) {
    o.metrics["raced"] = v;
    EXPECT_FALSE(o.has(metric::raced)) << v;
    EXPECT_FALSE(o.raced()) << v;
  }
  o.metrics["raced"] = 2;
  EXPECT_TRUE(o.has(metric::raced));
}

TEST(OutcomeMetrics, MarkRacedIsTheRacedFlag) {
  Outcome o = Outcome::success(10);
  EXPECT_FALSE(o.raced());
  o.mark_raced();
  EXPECT_TRUE(o.raced());
  EXPECT_TRUE(o.has(metric::raced));
  EXPECT_EQ(o.metrics.at("raced"), 1.0);
}

TEST(OutcomeMetrics, TheBusyShareReadsTheTypedNames) {
  Outcome o;
  o.set(metric::gpu_busy, 0.6);
  ASSERT_TRUE(o.busy());
  EXPECT_EQ(o.busy()->share, 0.6);
  EXPECT_FALSE(o.busy()->data_wait);
  o.set(metric::data_wait_fraction, 0.25);
  EXPECT_EQ(o.busy()->share, 0.75);
  EXPECT_TRUE(o.busy()->data_wait);
  o.set(metric::compute_busy, 0.9);
  EXPECT_EQ(o.busy_share(), 0.9);
}

TEST(OutcomeMetrics, AScriptsOwnNamesAreReadByString) {
  Outcome o;
  o.metrics["tokens_per_joule"] = 42;
  EXPECT_EQ(o.metric("tokens_per_joule"), 42.0);
  EXPECT_EQ(o.metric("absent"), std::nullopt);
  o.set(metric::loss, 0.5);
  EXPECT_EQ(o.metric(metric::loss.name), 0.5) << "the same map, by the name the journal writes";
}

}  // namespace
}  // namespace autotune
