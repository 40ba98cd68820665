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

TEST(TimeSplit, NamesTheRankThatStarvedAndTheSlowestRank) {
  // Rank 1's loader starved it: it waited 34% of its time, rank 0 5%; the
  // job moved at rank 1's pace.
  const Outcome starved = with({{"world_size", 2},
                                {"rank0_data_wait", 0.05},
                                {"rank1_data_wait", 0.34},
                                {"rank_data_wait_max", 0.34},
                                {"rank_waiting_most", 1},
                                {"rank_pace_min", 120},
                                {"rank_pace_max", 150},
                                {"rank_slowest", 1}});
  EXPECT_EQ(rank_starved(starved),
            "rank 1 starved: it waited for data 34% of its time, rank 0 5%; the job moves at its slowest rank's "
            "pace: rank 1, 120.0 samples/s against up to 150.0");

  // Ranks that kept level: nothing to say; nor for one rank.
  const Outcome level = with({{"world_size", 2},
                              {"rank0_data_wait", 0.30},
                              {"rank1_data_wait", 0.32},
                              {"rank_data_wait_max", 0.32},
                              {"rank_waiting_most", 1},
                              {"rank_pace_min", 100},
                              {"rank_pace_max", 102},
                              {"rank_slowest", 0}});
  EXPECT_EQ(rank_starved(level), "");
  EXPECT_EQ(rank_starved(with({{"world_size", 1}, {"rank_data_wait_max", 0.5}, {"rank_waiting_most", 0}})), "");
  EXPECT_EQ(rank_starved(with({{"data_wait_fraction", 0.5}})), "");

  // A wait under a tenth of the time is not starving, however uneven.
  EXPECT_EQ(rank_starved(with({{"world_size", 4},
                               {"rank0_data_wait", 0.0},
                               {"rank3_data_wait", 0.08},
                               {"rank_data_wait_max", 0.08},
                               {"rank_waiting_most", 3}})),
            "");
}

}  // namespace
}  // namespace autotune
