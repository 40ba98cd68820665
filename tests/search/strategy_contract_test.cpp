// The strategy contract (search/strategy.hpp), run over every registered
// strategy. All randomness is seeded: the suite is deterministic.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <type_traits>
#include <variant>

#include "bench/landscapes.hpp"
#include "search/strategy.hpp"

namespace autotune {
namespace {

SearchSpace small_space() {
  return SearchSpace(
      {
          {"batch_size", {Value{std::int64_t{16}}, Value{std::int64_t{32}}, Value{std::int64_t{64}}}, Scale::log},
          {"num_workers", {Value{std::int64_t{0}}, Value{std::int64_t{2}}, Value{std::int64_t{4}}}, Scale::linear},
          {"precision", {Value{std::string("fp32")}, Value{std::string("bf16")}}, Scale::categorical},
      },
      {"batch_size * num_workers <= 128"});
}

// Pipeline-like outcome on the small space; batch 64 at fp32 is out of memory,
// workers 4 with batch 32 crashes.
Outcome small_outcome(const SearchSpace& s, const Config& c) {
  const auto a = s.to_assignment(c);
  const auto b = a.get_int("batch_size", 16), w = a.get_int("num_workers", 0);
  const bool fp32 = a.get_string("precision", "") == "fp32";
  if (b == 64 && fp32) return Outcome::failure(Status::oom, "oom");
  if (b == 32 && w == 4) return Outcome::failure(Status::crash, "signal 11");
  return Outcome::success(static_cast<double>(b) * (1.0 + static_cast<double>(w)) * (fp32 ? 1.0 : 2.0));
}

class StrategyContract : public ::testing::TestWithParam<std::string> {
 protected:
  StrategyContext context(const SearchSpace& space, std::uint64_t seed, int budget) {
    StrategyContext ctx;
    ctx.space = &space;
    ctx.seed = seed;
    ctx.budget = budget;
    return ctx;
  }
  // Runs ask/tell on a landscape for up to `trials`, returning the proposals.
  std::vector<Config> run_pipeline(std::uint64_t seed, int trials, int batch = 1) {
    const SearchSpace& space = m_space;
    auto strategy = make_strategy(GetParam(), context(space, seed, trials));
    const auto land = bench::landscapes()[2];  // memory-tight: many failures
    std::mt19937_64 noise(seed);
    std::vector<Config> out;
    while (static_cast<int>(out.size()) < trials) {
      std::vector<Config> wave;
      for (int k = 0; k < batch && static_cast<int>(out.size() + wave.size()) < trials; ++k) {
        auto c = strategy->ask();
        if (!c) break;
        wave.push_back(*c);
      }
      if (wave.empty()) break;
      for (const auto& c : wave) {
        strategy->tell(c, land.measure(space, c, noise));
        out.push_back(c);
      }
    }
    return out;
  }
  SearchSpace m_space = bench::pipeline_space();
};

TEST_P(StrategyContract, ProposesValidDistinctConfigurations) {
  const auto proposals = run_pipeline(1, 20);
  EXPECT_GE(proposals.size(), 1u);
  std::set<Config> seen;
  for (const auto& c : proposals) {
    EXPECT_TRUE(m_space.is_valid(c));
    EXPECT_TRUE(seen.insert(c).second) << "repeated proposal";
  }
}

TEST_P(StrategyContract, NoDuplicatesWithPendingProposals) {
  const auto proposals = run_pipeline(2, 20, /*batch=*/4);
  std::set<Config> seen(proposals.begin(), proposals.end());
  EXPECT_EQ(seen.size(), proposals.size());
  for (const auto& c : proposals) EXPECT_TRUE(m_space.is_valid(c));
}

TEST_P(StrategyContract, SameSeedSameSequence) {
  EXPECT_EQ(run_pipeline(7, 14), run_pipeline(7, 14));
}

TEST_P(StrategyContract, SurvivesFailuresAndNeverReproposesThem) {
  const SearchSpace space = small_space();
  auto strategy = make_strategy(GetParam(), context(space, 3, 10));
  std::set<Config> failed, seen;
  const Status kinds[] = {Status::oom, Status::crash, Status::timeout, Status::host_oom};
  for (int i = 0; i < 8; ++i) {
    auto c = strategy->ask();
    if (!c) break;
    EXPECT_FALSE(failed.count(*c));
    EXPECT_TRUE(seen.insert(*c).second);
    if (i % 2 == 0) {
      strategy->tell(*c, Outcome::failure(kinds[(i / 2) % 4], "injected"));
      failed.insert(*c);
    } else {
      strategy->tell(*c, small_outcome(space, *c));
    }
  }
  EXPECT_NO_THROW((void)strategy->recommend());
}

TEST_P(StrategyContract, ExhaustsAFiniteSpaceWithoutRepeats) {
  const SearchSpace space = small_space();
  const std::size_t n = space.enumerate()->size();
  auto strategy = make_strategy(GetParam(), context(space, 4, 0));
  std::set<Config> seen;
  std::size_t asks = 0;
  while (asks < 3 * n) {
    auto c = strategy->ask();
    if (!c) break;
    ++asks;
    ASSERT_TRUE(space.is_valid(*c));
    ASSERT_TRUE(seen.insert(*c).second) << "repeated proposal";
    strategy->tell(*c, small_outcome(space, *c));
  }
  EXPECT_LE(asks, n);
  if (GetParam() != "heuristic") {
    EXPECT_EQ(asks, n);  // the recipe stops by design
  }
  EXPECT_FALSE(strategy->ask().has_value());
}

TEST_P(StrategyContract, AcceptsReplayedOutcomesOfUnaskedConfigurations) {
  const SearchSpace space = small_space();
  auto strategy = make_strategy(GetParam(), context(space, 5, 12));
  const auto all = *space.enumerate();
  std::set<Config> replayed = {all[0], all[3], all[5]};
  strategy->tell(all[0], small_outcome(space, all[0]));
  strategy->tell(all[3], Outcome::failure(Status::oom, "replayed"));
  strategy->tell(all[5], small_outcome(space, all[5]));
  for (int i = 0; i < 8; ++i) {
    auto c = strategy->ask();
    if (!c) break;
    EXPECT_FALSE(replayed.count(*c)) << "re-proposed a replayed configuration";
    replayed.insert(*c);
    strategy->tell(*c, small_outcome(space, *c));
  }
}

TEST_P(StrategyContract, InitialConfigurationsComeFirst) {
  const SearchSpace space = small_space();
  auto ctx = context(space, 6, 10);
  const auto all = *space.enumerate();
  ctx.initial = {all[2], all[1]};
  auto strategy = make_strategy(GetParam(), ctx);
  EXPECT_EQ(strategy->ask(), all[2]);
  EXPECT_EQ(strategy->proposed_as(), "initial");
  EXPECT_EQ(strategy->ask(), all[1]);
  EXPECT_EQ(strategy->proposed_as(), "initial");
  // After them, the strategy's own word (its name where it has no other).
  ASSERT_TRUE(strategy->ask());
  EXPECT_FALSE(strategy->proposed_as().empty());
  EXPECT_NE(strategy->proposed_as(), "initial");
}

// A strategy's declared options: each default lies within its bounds, and
// giving every default explicitly changes nothing (they are the values the
// strategy used before it declared them).
TEST_P(StrategyContract, DeclaredDefaultsAreInBoundsAndAreWhatItUsesUngiven) {
  const StrategyInfo* info = find_strategy(GetParam());
  ASSERT_NE(info, nullptr);
  std::map<std::string, OptionValue> all;
  for (const OptionSpec& o : info->options) {
    ASSERT_TRUE(o.default_value.has_value()) << o.key << ": a strategy's option needs a default";
    EXPECT_FALSE(o.help.empty()) << o.key;
    const double v = std::visit(
        [](const auto& x) -> double {
          if constexpr (std::is_arithmetic_v<std::decay_t<decltype(x)>>) return static_cast<double>(x);
          else return 0.0;
        },
        *o.default_value);
    if (o.min) {
      EXPECT_GE(v, *o.min) << o.key;
    }
    if (o.max) {
      EXPECT_LE(v, *o.max) << o.key;
    }
    all[o.key] = *o.default_value;
  }
  auto run = [&](std::map<std::string, OptionValue> given) {
    StrategyContext ctx = context(m_space, 7, 20);
    ctx.options = Options::with_defaults({}, std::move(given));
    auto strategy = make_strategy(GetParam(), ctx);
    const auto land = bench::landscapes()[2];
    std::mt19937_64 noise(7);
    std::vector<Config> out;
    for (int i = 0; i < 20; ++i) {
      auto c = strategy->ask();
      if (!c) break;
      strategy->tell(*c, land.measure(m_space, *c, noise));
      out.push_back(*c);
    }
    return out;
  };
  EXPECT_EQ(run({}), run(all));
}

INSTANTIATE_TEST_SUITE_P(AllStrategies, StrategyContract, ::testing::ValuesIn(strategy_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace autotune
