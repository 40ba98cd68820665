#include "search/feasibility.hpp"

#include <gtest/gtest.h>

#include "search/strategy.hpp"

namespace autotune {
namespace {

SearchSpace space_with_a_broken_value() {
  return SearchSpace({{"batch_size", {Value{std::int64_t{16}}, Value{std::int64_t{32}}, Value{std::int64_t{64}},
                                      Value{std::int64_t{128}}}, Scale::log},
                      {"num_workers", {Value{std::int64_t{0}}, Value{std::int64_t{2}}, Value{std::int64_t{4}},
                                       Value{std::int64_t{8}}}, Scale::linear},
                      {"precision", {Value{std::string("fp32")}, Value{std::string("int4")}, Value{std::string("bf16")}},
                       Scale::categorical}});
}

// int4 always errors; everything else runs, faster with more of everything.
Outcome run(const SearchSpace& space, const Config& c) {
  if (space.param(2).values[static_cast<std::size_t>(c[2])] == Value{std::string("int4")})
    return Outcome::failure(Status::error, "int4 is not supported");
  return Outcome::success(100.0 * (1 + c[0]) * (1 + c[1]) * (c[2] == 2 ? 2.0 : 1.0));
}

TEST(Feasibility, AValueThatKeepsErroringIsLearnedAsUnusable) {
  const SearchSpace space = space_with_a_broken_value();
  FeasibilityModel m(space, 0, 0);
  Rng rng(1);
  std::vector<Observation> h = {{{0, 0, 1}, run(space, {0, 0, 1})}, {{1, 1, 0}, run(space, {1, 1, 0})}};
  m.update(h, rng);
  EXPECT_FALSE(m.known_infeasible({3, 3, 1})) << "one error is not yet a pattern";
  h.push_back({{2, 2, 1}, run(space, {2, 2, 1})});
  m.update(h, rng);
  EXPECT_TRUE(m.known_infeasible({3, 3, 1}));
  EXPECT_FALSE(m.known_infeasible({3, 3, 2}));
  // A value that has run once is not written off by later errors.
  h.push_back({{0, 1, 2}, Outcome::success(50)});
  h.push_back({{1, 2, 2}, Outcome::failure(Status::error, "flaky")});
  h.push_back({{2, 3, 2}, Outcome::failure(Status::crash, "flaky")});
  m.update(h, rng);
  EXPECT_FALSE(m.known_infeasible({3, 3, 2}));
}

TEST(Feasibility, BoStopsProposingAValueTheWorkloadCannotRun) {
  const SearchSpace space = space_with_a_broken_value();
  StrategyContext ctx;
  ctx.space = &space;
  ctx.budget = 20;
  for (std::uint64_t seed : {1, 2, 3}) {
    ctx.seed = seed;
    auto bo = make_strategy("bo", ctx);
    int int4 = 0;
    for (int t = 0; t < 20; ++t) {
      auto c = bo->ask();
      ASSERT_TRUE(c);
      int4 += (*c)[2] == 1;
      bo->tell(*c, run(space, *c));
    }
    EXPECT_LE(int4, 3) << "seed " << seed;
  }
}

}  // namespace
}  // namespace autotune
