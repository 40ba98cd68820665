// The initial design (issue 12): the baseline first, then points spread over
// the space but not on the ranges' ends, at most a third of the budget.
#include "search/initial_design.hpp"

#include <gtest/gtest.h>

#include <set>

#include "bench/failure_landscapes.hpp"
#include "search/strategy.hpp"

namespace autotune {
namespace {

TEST(InitialDesign, SizeIsDPlusOneAtMostAThirdOfTheBudgetAndAtMostFive) {
  const SearchSpace space = bench::failure_landscapes()[0].space();  // 6 parameters
  EXPECT_EQ(initial_design_size(space, 15), 5);
  EXPECT_EQ(initial_design_size(space, 30), 5) << "d+1 is 7: the model speaks after 5 whatever the budget";
  EXPECT_EQ(initial_design_size(space, 60), 5);
  EXPECT_EQ(initial_design_size(space, 0), 5);
  EXPECT_EQ(initial_design_size(space, 12), 4);
  EXPECT_EQ(initial_design_size(space, 4), 2);
}

// A knob with one value (the cpu default's precision: fp32 only; here also
// pinning and accumulation) is no dimension to explore: 3 free knobs of 6
// get 4 points.
TEST(InitialDesign, SizeCountsOnlyTheKnobsThatCanMove) {
  auto ints = [](std::initializer_list<std::int64_t> xs) {
    std::vector<Value> v;
    for (auto x : xs) v.emplace_back(std::in_place_type<std::int64_t>, x);
    return v;
  };
  const SearchSpace space({{"batch_size", ints({32, 64, 128, 256}), Scale::log},
                           {"num_workers", ints({0, 1, 2}), Scale::linear},
                           {"prefetch_factor", ints({2, 4}), Scale::linear},
                           {"pin_memory", {Value{true}}, Scale::linear},
                           {"precision", {Value{std::string("fp32")}}, Scale::categorical},
                           {"grad_accum", ints({1}), Scale::linear}});
  EXPECT_EQ(initial_design_size(space, 30), 4);
  EXPECT_EQ(initial_design_size(space, 0), 4);
  EXPECT_EQ(initial_design_size(space, 15), 4);
  EXPECT_EQ(initial_design_size(space, 9), 3);
}

TEST(InitialDesign, BaselineFirstThenSpreadAwayFromTheEnds) {
  const SearchSpace space = bench::failure_landscapes()[0].space();
  const Config baseline = *space.from_assignment(Assignment({{"batch_size", Value{std::int64_t{32}}},
                                                             {"num_workers", Value{std::int64_t{0}}},
                                                             {"prefetch_factor", Value{std::int64_t{2}}},
                                                             {"pin_memory", Value{false}},
                                                             {"precision", Value{std::string("fp32")}},
                                                             {"grad_accum", Value{std::int64_t{1}}}}));
  for (const char* name : {"bo", "anneal"}) {
    for (std::uint64_t seed = 1; seed <= 5; ++seed) {
      StrategyContext ctx;
      ctx.space = &space;
      ctx.seed = seed;
      ctx.budget = 15;
      ctx.initial = {baseline};
      auto s = make_strategy(name, ctx);
      ASSERT_EQ(s->ask(), baseline) << name;
      s->tell(baseline, Outcome::success(100));
      const int n = (std::string(name) == "bo" ? initial_design_size(space, 15) : 3) - 1;
      std::vector<Config> design;
      for (int i = 0; i < n; ++i) {
        auto c = s->ask();
        ASSERT_TRUE(c);
        design.push_back(*c);
        s->tell(*c, Outcome::success(100 + i));
      }
      // Along every ordered knob with at least 5 values the design points
      // take distinct values (a Latin hypercube), none at either end.
      for (std::size_t d = 0; d < space.dims(); ++d) {
        const auto& p = space.param(d);
        if (p.scale == Scale::categorical || p.values.size() < 5) continue;
        std::set<int> used;
        for (const auto& c : design) {
          EXPECT_GT(c[d], 0) << name << " seed " << seed << ": " << p.name << " at its lowest value";
          EXPECT_LT(c[d], static_cast<int>(p.values.size()) - 1)
              << name << " seed " << seed << ": " << p.name << " at its highest value";
          used.insert(c[d]);
        }
        EXPECT_EQ(used.size(), design.size()) << name << " seed " << seed << ": " << p.name;
      }
      // bo measures the design most workers first (lead_with_parallel_loading).
      if (std::string(name) == "bo") {
        const std::size_t w = *space.index_of("num_workers");
        for (std::size_t i = 1; i < design.size(); ++i)
          EXPECT_GT(design[i - 1][w], design[i][w]) << "seed " << seed << ": design point " << i;
      }
    }
  }
}

// The same points, most workers first, then the larger batch; the other
// knobs and a space without either keep the order they came in.
TEST(InitialDesign, LeadsWithTheMostParallelLoading) {
  auto ints = [](std::initializer_list<std::int64_t> xs) {
    std::vector<Value> v;
    for (auto x : xs) v.emplace_back(std::in_place_type<std::int64_t>, x);
    return v;
  };
  const SearchSpace space({{"batch_size", ints({32, 64, 128}), Scale::log},
                           {"num_workers", ints({0, 2, 4, 8}), Scale::linear},
                           {"grad_accum", ints({1, 2}), Scale::linear}});
  // {batch, workers, accum} as value indices.
  std::vector<Config> design = {{0, 1, 1}, {2, 1, 0}, {1, 3, 0}, {0, 0, 1}, {1, 1, 0}, {0, 3, 1}};
  lead_with_parallel_loading(space, design);
  const std::vector<Config> want = {{1, 3, 0}, {0, 3, 1}, {2, 1, 0}, {1, 1, 0}, {0, 1, 1}, {0, 0, 1}};
  EXPECT_EQ(design, want);

  const SearchSpace other({{"decode_cache_gb", ints({0, 4, 8}), Scale::linear},
                           {"grad_accum", ints({1, 2}), Scale::linear}});
  std::vector<Config> kept = {{0, 1}, {2, 0}, {1, 1}};
  const std::vector<Config> before = kept;
  lead_with_parallel_loading(other, kept);
  EXPECT_EQ(kept, before);
}

TEST(InitialDesign, MovesPointsOffWhatIsNotUsable) {
  const SearchSpace space = bench::failure_landscapes()[0].space();
  Rng rng(3);
  const auto all = *space.enumerate();
  // Nothing with more than 4 workers is usable.
  const std::size_t w = *space.index_of("num_workers");
  auto usable = [&](const Config& c) { return c[w] <= 4; };
  const auto design = spread_design(space, 6, {}, rng, usable, &all);
  ASSERT_EQ(design.size(), 6u);
  std::set<Config> distinct(design.begin(), design.end());
  EXPECT_EQ(distinct.size(), design.size());
  for (const auto& c : design) {
    EXPECT_TRUE(usable(c));
    EXPECT_TRUE(space.is_valid(c));
  }
}

}  // namespace
}  // namespace autotune
