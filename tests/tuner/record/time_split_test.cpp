// Where the time went (data wait against compute) and the bottleneck that
// moved between the baseline and the answer.
#include "tuner/record/time_split.hpp"

#include <gtest/gtest.h>

namespace autotune {
namespace {

Outcome with(std::map<std::string, double> metrics) {
  Outcome o = Outcome::success(100);
  o.metrics = std::move(metrics);
  return o;
}

TEST(TimeSplit, ReadsDataWaitOrComputeBusyAndDeviceBusy) {
  TimeSplit s = time_split(with({{"data_wait_fraction", 0.62}, {"gpu_busy", 0.35}}));
  ASSERT_TRUE(s.known());
  EXPECT_DOUBLE_EQ(*s.compute, 0.38);
  EXPECT_DOUBLE_EQ(*s.device_busy, 0.35);
  EXPECT_EQ(s.bound(), "loader-bound");
  EXPECT_EQ(describe(s), "waiting for data 62%, computing 38%, device busy 35% (loader-bound)");

  s = time_split(with({{"compute_busy", 0.97}}));
  ASSERT_TRUE(s.known());
  EXPECT_NEAR(*s.data_wait, 0.03, 1e-12);
  EXPECT_EQ(s.bound(), "compute-bound");

  EXPECT_FALSE(time_split(with({{"throughput_rsd", 0.01}})).known()) << "a script that reports no split";
  EXPECT_EQ(describe(time_split(with({}))), "");
}

TEST(TimeSplit, ExplainsTheBottleneckThatMoved) {
  const TimeSplit loader = time_split(with({{"data_wait_fraction", 0.62}}));
  const TimeSplit compute = time_split(with({{"data_wait_fraction", 0.01}}));
  EXPECT_NE(explain_speedup(loader, compute).find("no longer starves"), std::string::npos);
  EXPECT_NE(explain_speedup(compute, loader).find("more loader workers"), std::string::npos);
  EXPECT_NE(explain_speedup(compute, compute).find("both are compute-bound"), std::string::npos);
  EXPECT_NE(explain_speedup(loader, loader).find("still the bottleneck"), std::string::npos);
  EXPECT_EQ(explain_speedup(loader, time_split(with({}))), "");
}

}  // namespace
}  // namespace autotune
