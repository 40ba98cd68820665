#include "core/space.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <vector>

namespace autotune {
namespace {

std::vector<double> encoded(const SearchSpace& space, const Config& c) {
  std::vector<double> x(space.encoded_dims());
  space.encode_into(c, x.data());
  return x;
}

SearchSpace pipeline_space(std::vector<std::string> rules = {}) {
  return SearchSpace(
      {
          {"batch_size", {Value{std::int64_t{16}}, Value{std::int64_t{32}}, Value{std::int64_t{64}},
                          Value{std::int64_t{128}}}, Scale::log},
          {"num_workers", {Value{std::int64_t{0}}, Value{std::int64_t{2}}, Value{std::int64_t{4}}},
           Scale::linear},
          {"pin_memory", {Value{false}, Value{true}}, Scale::linear},
          {"precision", {Value{std::string("fp32")}, Value{std::string("bf16")}}, Scale::categorical},
          {"grad_accum", {Value{std::int64_t{1}}, Value{std::int64_t{2}}, Value{std::int64_t{4}}},
           Scale::log},
      },
      std::move(rules));
}

TEST(SearchSpace, EnumeratesProductInLexicographicOrder) {
  auto space = pipeline_space();
  EXPECT_DOUBLE_EQ(space.cardinality(), 4 * 3 * 2 * 2 * 3);
  auto all = space.enumerate();
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 144u);
  EXPECT_EQ(all->front(), (Config{0, 0, 0, 0, 0}));
  EXPECT_EQ((*all)[1], (Config{0, 0, 0, 0, 1}));
  EXPECT_EQ(all->back(), (Config{3, 2, 1, 1, 2}));
  EXPECT_EQ(std::set<Config>(all->begin(), all->end()).size(), all->size());
}

TEST(SearchSpace, RulesFilterBeforeATrial) {
  auto space = pipeline_space({"batch_size * grad_accum <= 128", "precision != bf16 || pin_memory"});
  auto all = space.enumerate();
  ASSERT_TRUE(all);
  for (const auto& c : *all) {
    auto a = space.to_assignment(c);
    EXPECT_LE(a.get_int("batch_size", 0) * a.get_int("grad_accum", 0), 128);
    if (a.get_string("precision", "") == "bf16") {
      EXPECT_TRUE(a.get_bool("pin_memory", false));
    }
  }
  // Count by brute force: bs*ga<=128 pairs = (16:3,32:3,64:2,128:1)=9; x workers 3;
  // (pin,prec) combos allowed: (F,fp32),(T,fp32),(T,bf16) = 3.
  EXPECT_EQ(all->size(), 9u * 3u * 3u);
  EXPECT_FALSE(space.is_valid({3, 0, 0, 0, 1}));
  EXPECT_EQ(space.violated_rule({3, 0, 0, 0, 1}).value(), "batch_size * grad_accum <= 128");
}

TEST(SearchSpace, BadRuleIsRejectedWithItsText) {
  auto err = RuleSet::check("batch_size * nonexistent <= 3", pipeline_space().params());
  ASSERT_TRUE(err);
  EXPECT_NE(err->find("nonexistent"), std::string::npos);
  EXPECT_THROW(pipeline_space({"batch_size <="}), std::invalid_argument);
}

// Facts of the run and the machine in the rules: `ranks * (num_workers + 1)
// <= cores` keeps 2 ranks on 6 cores to 0 or 2 workers each. The space's
// hash holds the facts its rules name (another machine, another space) and
// only those.
TEST(SearchSpace, RulesNameTheRanksAndTheCores) {
  const auto with = [](double cores) {
    return SearchSpace(pipeline_space().params(), {"ranks * (num_workers + 1) <= cores"},
                       {{"ranks", 2}, {"cores", cores}});
  };
  const SearchSpace six = with(6);
  const auto all = six.enumerate();
  ASSERT_TRUE(all);
  for (const auto& c : *all) EXPECT_LE(six.to_assignment(c).get_int("num_workers", 99), 2);
  EXPECT_EQ(all->size(), 4u * 2u * 2u * 2u * 3u);
  EXPECT_EQ(six.facts_in_rules(), (std::map<std::string, double>{{"cores", 6}, {"ranks", 2}}));
  EXPECT_NE(six.hash(), with(8).hash());
  // Facts no rule names change nothing: not the hash either.
  const SearchSpace plain = pipeline_space({"batch_size <= 64"});
  const SearchSpace facts(pipeline_space().params(), {"batch_size <= 64"}, {{"ranks", 2}, {"cores", 6}});
  EXPECT_EQ(plain.hash(), facts.hash());
  EXPECT_TRUE(facts.facts_in_rules().empty());
  // Without the facts, the name is unknown.
  EXPECT_TRUE(RuleSet::check("num_workers <= cores", pipeline_space().params()));
  EXPECT_FALSE(RuleSet::check("num_workers <= cores", pipeline_space().params(), {{"cores", 6}}));
}

TEST(SearchSpace, SamplingIsSeededAndValid) {
  auto space = pipeline_space({"batch_size * grad_accum <= 128"});
  Rng a(7), b(7);
  for (int i = 0; i < 200; ++i) {
    auto x = space.sample(a);
    auto y = space.sample(b);
    ASSERT_TRUE(x && y);
    EXPECT_EQ(*x, *y);
    EXPECT_TRUE(space.is_valid(*x));
  }
}

TEST(SearchSpace, NeighboursAreAdjacentForOrderedAndAnyForCategorical) {
  auto space = pipeline_space();
  auto nbs = space.neighbours({1, 0, 0, 0, 1});
  std::set<Config> got(nbs.begin(), nbs.end());
  std::set<Config> want = {{0, 0, 0, 0, 1}, {2, 0, 0, 0, 1}, {1, 1, 0, 0, 1}, {1, 0, 1, 0, 1},
                           {1, 0, 0, 1, 1}, {1, 0, 0, 0, 0}, {1, 0, 0, 0, 2}};
  EXPECT_EQ(got, want);
}

TEST(SearchSpace, EncodesLogAndOneHot) {
  auto space = pipeline_space();
  EXPECT_EQ(space.encoded_dims(), 1u + 1u + 1u + 2u + 1u);
  auto x = encoded(space, {1, 1, 1, 1, 2});
  EXPECT_NEAR(x[0], 1.0 / 3.0, 1e-12);  // log2(32/16) / log2(128/16)
  // num_workers by log(workers + 2) (the knob table): 2 of [0, 4] is
  // log(4/2) / log(6/2), past the middle.
  EXPECT_NEAR(x[1], std::log(2.0) / std::log(3.0), 1e-12);
  EXPECT_NEAR(x[2], 1.0, 1e-12);
  EXPECT_EQ(x[3], 0.0);
  EXPECT_EQ(x[4], 1.0);
  EXPECT_NEAR(x[5], 1.0, 1e-12);
  for (double v : x) EXPECT_TRUE(v >= 0.0 && v <= 1.0);
}

TEST(SearchSpace, TheSurrogateReadsWorkersByTheirLogAndOtherKnobsByTheirScale) {
  auto ints = [](std::initializer_list<std::int64_t> xs) {
    std::vector<Value> v;
    for (auto x : xs) v.emplace_back(x);
    return v;
  };
  const SearchSpace space({{"num_workers", ints({0, 1, 2, 4, 8, 16}), Scale::linear},
                           {"threads", ints({0, 1, 2, 4, 8, 16}), Scale::linear}});
  auto col = [&](int k, int column) { return encoded(space, {k, k})[static_cast<std::size_t>(column)]; };
  // Workers: equal ratios of (workers + 2) are equal steps; 0 and 1 sit
  // closer together than 8 and 16 do in the linear reading (0.5).
  EXPECT_NEAR(col(0, 0), 0.0, 1e-12);
  EXPECT_NEAR(col(5, 0), 1.0, 1e-12);
  EXPECT_NEAR(col(2, 0), std::log(4.0 / 2.0) / std::log(18.0 / 2.0), 1e-12);
  EXPECT_NEAR(col(5, 0) - col(4, 0), std::log(18.0 / 10.0) / std::log(9.0), 1e-12);
  for (int k = 1; k < 6; ++k) EXPECT_GT(col(k, 0), col(k - 1, 0));
  // A knob the table does not know keeps its linear reading.
  EXPECT_NEAR(col(4, 1), 0.5, 1e-12);
  // The domain position (the initial design's strata, the memory model's
  // coordinates) stays linear for both.
  EXPECT_NEAR(space.position(0, 4), 0.5, 1e-12);
  // A log-scaled worker list keeps its own scale.
  const SearchSpace logged({{"num_workers", ints({1, 2, 4, 8}), Scale::log}});
  EXPECT_NEAR(encoded(logged, {1})[0], 1.0 / 3.0, 1e-12);
}

TEST(SearchSpace, AssignmentRoundTripAndHash) {
  auto space = pipeline_space();
  Config c{2, 1, 1, 1, 0};
  auto a = space.to_assignment(c);
  EXPECT_EQ(a.describe(), "batch_size=64 num_workers=2 pin_memory=true precision=bf16 grad_accum=1");
  EXPECT_EQ(space.from_assignment(a), c);
  EXPECT_EQ(space.hash(), pipeline_space().hash());
  EXPECT_NE(space.hash(), pipeline_space({"batch_size <= 64"}).hash());
  EXPECT_EQ(space.hash().size(), 16u);
}

}  // namespace
}  // namespace autotune
