// The feasibility model (issue 12): monotone per failure kind, local, blind
// to the knobs that do not grow the memory that ran out; error attribution.
// Everything is seeded and deterministic: no statistical assertions here.
#include "search/feasibility.hpp"

#include <gtest/gtest.h>

#include "bench/failure_landscapes.hpp"
#include "core/knobs.hpp"
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

// The six-knob space of the failure landscapes (no rules).
const SearchSpace& pipeline() {
  static const SearchSpace s = bench::failure_landscapes()[0].space();
  return s;
}

// batch_size, num_workers, prefetch_factor, pin_memory, precision, grad_accum by value.
Config at(std::int64_t b, std::int64_t w, std::int64_t p, bool pin, const std::string& prec, std::int64_t acc) {
  const SearchSpace& s = pipeline();
  return *s.from_assignment(Assignment({{"batch_size", Value{b}},
                                        {"num_workers", Value{w}},
                                        {"prefetch_factor", Value{p}},
                                        {"pin_memory", Value{pin}},
                                        {"precision", Value{prec}},
                                        {"grad_accum", Value{acc}}}));
}

TEST(Feasibility, AnErrorNamingTheValueExcludesIt) {
  const SearchSpace space = space_with_a_broken_value();
  FeasibilityModel m(space, 0, 0);
  std::vector<Observation> h = {{{0, 0, 1}, run(space, {0, 0, 1})}, {{1, 1, 0}, run(space, {1, 1, 0})}};
  m.update(h);
  EXPECT_TRUE(m.known_infeasible({3, 3, 1})) << "the message names int4";
  EXPECT_FALSE(m.known_infeasible({3, 3, 2}));
  EXPECT_FALSE(m.known_infeasible({3, 3, 0}));
}

TEST(Feasibility, ErrorsExcludeAValueOnlyWhenTheyShareACausePointingAtIt) {
  const SearchSpace space = space_with_a_broken_value();
  FeasibilityModel m(space, 0, 0);
  // Two bf16 errors with different messages: no shared cause.
  std::vector<Observation> h = {{{0, 0, 2}, Outcome::failure(Status::error, "dataset file missing")},
                                {{1, 1, 2}, Outcome::failure(Status::crash, "signal 11")}};
  m.update(h);
  EXPECT_FALSE(m.excluded(2, 2));
  // The same message twice, only ever with bf16: it points at bf16.
  h.push_back({{2, 2, 2}, Outcome::failure(Status::crash, "signal 11")});
  m.update(h);
  EXPECT_TRUE(m.excluded(2, 2));
  // ... unless the same message also came with another value.
  h.push_back({{2, 2, 0}, Outcome::failure(Status::crash, "signal 11")});
  m.update(h);
  EXPECT_FALSE(m.excluded(2, 2));
  EXPECT_FALSE(m.excluded(2, 0));
  // A value that has run is never written off.
  std::vector<Observation> h2 = {{{0, 1, 2}, Outcome::success(50)},
                                 {{1, 2, 2}, Outcome::failure(Status::error, "bf16 is not supported")},
                                 {{2, 3, 2}, Outcome::failure(Status::error, "bf16 is not supported")}};
  m.update(h2);
  EXPECT_FALSE(m.excluded(2, 2));
}

TEST(Feasibility, MemoryFailuresNeverExcludeAValue) {
  const SearchSpace space = space_with_a_broken_value();
  FeasibilityModel m(space, 0, 0);
  std::vector<Observation> h;
  for (int b = 0; b < 4; ++b) h.push_back({{b, 0, 2}, Outcome::failure(Status::oom, "CUDA out of memory (bf16)")});
  m.update(h);
  EXPECT_FALSE(m.excluded(2, 2));
}

TEST(Feasibility, DeviceOomTeachesAboutBatchAndPrecisionNotWorkers) {
  FeasibilityModel m(pipeline(), 0, 0);
  m.update({{at(512, 2, 2, false, "fp16", 1), Outcome::failure(Status::oom, "CUDA out of memory")},
            {at(128, 4, 2, false, "fp32", 1), Outcome::success(100)}});
  // Other workers, prefetch, pinning, accumulation: the same wall.
  EXPECT_TRUE(m.known_infeasible(at(512, 8, 8, true, "fp16", 4)));
  EXPECT_TRUE(m.known_infeasible(at(512, 0, 1, false, "bf16", 1))) << "bf16 takes as much as fp16";
  EXPECT_TRUE(m.known_infeasible(at(512, 2, 2, false, "fp32", 1))) << "fp32 takes more";
  EXPECT_FALSE(m.known_infeasible(at(256, 2, 2, false, "fp16", 1)));
  EXPECT_GT(m.probability(at(256, 2, 2, false, "fp16", 1)), 0.2);
  for (std::size_t d = 0; d < pipeline().dims(); ++d) {
    const std::string& n = pipeline().param(d).name;
    EXPECT_EQ(m.depends_on(MemoryKind::device, d), n == "batch_size" || n == "precision") << n;
  }
  // Nothing learned about host memory.
  EXPECT_DOUBLE_EQ(m.probability(at(512, 16, 8, true, "fp16", 1), MemoryKind::host), 1.0);
}

TEST(Feasibility, HostOomTeachesAboutWorkersNotPrecision) {
  FeasibilityModel m(pipeline(), 0, 0);
  m.update({{at(64, 13, 4, false, "fp32", 1), Outcome::failure(Status::host_oom, "killed")},
            {at(64, 0, 2, false, "fp32", 1), Outcome::success(100)}});
  EXPECT_TRUE(m.known_infeasible(at(64, 13, 4, false, "bf16", 4))) << "precision does not grow host memory";
  EXPECT_TRUE(m.known_infeasible(at(128, 14, 8, true, "fp32", 1)));
  EXPECT_FALSE(m.known_infeasible(at(64, 12, 4, false, "fp32", 1)));
  EXPECT_DOUBLE_EQ(m.probability(at(512, 13, 4, false, "fp32", 1), MemoryKind::device), 1.0);
}

TEST(Feasibility, AFailureAtOneEndLeavesTheOtherEndOpen) {
  FeasibilityModel m(pipeline(), 0, 0);
  m.update({{at(64, 13, 4, false, "fp32", 1), Outcome::failure(Status::host_oom, "killed")},
            {at(64, 0, 2, false, "fp32", 1), Outcome::success(100)}});
  EXPECT_GT(m.probability(at(64, 3, 4, false, "fp32", 1)), 0.7) << "3 workers stay open";
  EXPECT_LT(m.probability(at(64, 12, 4, false, "fp32", 1)), 0.3) << "12 workers sit against the wall";
  // Monotone: more workers, never more likely to fit.
  double last = 1.0;
  for (std::int64_t w = 0; w <= 16; ++w) {
    const double p = m.probability(at(64, w, 4, false, "fp32", 1));
    EXPECT_LE(p, last + 1e-12) << "workers " << w;
    last = p;
  }
}

// Next to a host OOM, the reported bytes decide: a configuration the fit puts
// well under the capacity stays open although a failure is one worker away,
// one the fit puts over it closes, and the cones still rule out what is at
// least as large as the failure. Without the bytes, nearness alone holds the
// same neighbour at a coin flip or below.
TEST(Feasibility, ReportedBytesDecideNextToAFailure) {
  const bench::Landscape land = bench::failure_landscapes()[0];  // worker-cliff: 24 GB, 1.8 GB per worker
  ASSERT_EQ(land.name, "worker-cliff");
  const SearchSpace& s = pipeline();
  std::mt19937_64 noise(3);
  const std::vector<Config> ran = {at(64, 10, 1, false, "fp16", 4), at(32, 8, 2, false, "fp32", 1),
                                   at(128, 6, 4, false, "bf16", 2), at(16, 4, 8, true, "fp16", 1),
                                   at(256, 2, 1, false, "tf32", 4), at(64, 9, 4, true, "fp16", 2)};
  const Config failed = at(64, 11, 2, false, "fp16", 4);
  std::vector<Observation> with_bytes, without;
  for (const auto& c : ran) {
    with_bytes.push_back({c, land.measure(s, c, noise, true)});
    without.push_back({c, land.measure(s, c, noise, false)});
    ASSERT_TRUE(with_bytes.back().outcome.ok());
  }
  with_bytes.push_back({failed, land.measure(s, failed, noise, true)});
  without.push_back({failed, land.measure(s, failed, noise, false)});
  ASSERT_EQ(with_bytes.back().outcome.status, Status::host_oom);

  FeasibilityModel bytes(s, 0, 0), cones(s, 0, 0);
  bytes.update(with_bytes);
  cones.update(without);
  const Config fits = at(64, 10, 2, false, "fp16", 4);   // 22.3 of 24 GB
  const Config over = at(128, 10, 4, false, "fp16", 4);  // 26.1 GB
  ASSERT_TRUE(land.true_throughput(s, fits));
  ASSERT_FALSE(land.true_throughput(s, over));
  EXPECT_GT(bytes.probability(fits), 0.7);
  EXPECT_LE(cones.probability(fits), 0.5);
  EXPECT_LT(bytes.probability(over), 0.2);
  EXPECT_DOUBLE_EQ(bytes.probability(at(128, 12, 2, true, "fp32", 4)), 0.0) << "above the failure";
}

// The cache-knob landscape (its seventh knob, decode_cache_gb, declared
// `memory: host`): configurations by value, and what a sequence of them
// measures with the memory reported (noise seed 5).
struct CacheKnob {
  bench::Landscape land = bench::failure_landscapes()[4];
  SearchSpace s = land.space();
  Config at(std::int64_t b, std::int64_t w, std::int64_t p, bool pin, const std::string& prec, std::int64_t acc,
            std::int64_t cache) const {
    return *s.from_assignment(Assignment({{"batch_size", Value{b}},
                                          {"num_workers", Value{w}},
                                          {"prefetch_factor", Value{p}},
                                          {"pin_memory", Value{pin}},
                                          {"precision", Value{prec}},
                                          {"grad_accum", Value{acc}},
                                          {"decode_cache_gb", Value{cache}}}));
  }
  std::vector<Observation> run(const std::vector<Config>& tried) const {
    std::mt19937_64 noise(5);
    std::vector<Observation> history;
    for (const auto& c : tried) history.push_back({c, land.measure(s, c, noise, true)});
    return history;
  }
};

// With few trials and many terms, the bytes fitted to what ran alone can put
// a failure below the most that ran (here the fit to five trials puts the
// 512-batch host OOM under them, which used to drop the bytes model and
// leave the cones). The failure then joins the fit at that level, and the
// model keeps telling a configuration the bytes put over the wall (a deeper
// queue of 512-batches, unpinned: not at least as large as either failure in
// every knob, so the cones alone leave it open) from one well under it.
// A trial sequence bo ran on the cache-knob landscape (seed 1000).
TEST(Feasibility, AFailureTheFitPutsBelowWhatRanJoinsTheFit) {
  const CacheKnob k;
  ASSERT_EQ(k.land.name, "cache-knob");
  const auto& land = k.land;
  const SearchSpace& s = k.s;
  const std::vector<Config> tried = {k.at(256, 2, 2, false, "tf32", 4, 2),  k.at(128, 6, 4, false, "fp16", 1, 8),
                                     k.at(64, 4, 2, true, "bf16", 2, 4),    k.at(32, 8, 2, false, "fp32", 2, 8),
                                     k.at(128, 10, 4, true, "tf32", 2, 16), k.at(16, 0, 8, true, "fp16", 1, 16),
                                     k.at(512, 5, 8, true, "fp16", 1, 0)};
  const std::vector<Observation> history = k.run(tried);
  ASSERT_EQ(history[4].outcome.status, Status::host_oom);
  ASSERT_EQ(history[6].outcome.status, Status::host_oom);
  FeasibilityModel model(s, 0, 0);
  model.update(history);
  const Config over = k.at(512, 6, 8, false, "fp16", 1, 0);  // 28.1 of 26 GB
  const Config under = k.at(64, 6, 2, false, "fp16", 1, 4);  // 12.8 GB
  ASSERT_FALSE(land.true_throughput(s, over));
  ASSERT_TRUE(land.true_throughput(s, under));
  EXPECT_FALSE(model.known_infeasible(over)) << "the cones alone do not rule it out";
  EXPECT_LT(model.probability(over), 0.5) << "0.83 from the cones alone";
  EXPECT_GT(model.probability(under), 0.7);
}

// The bytes fit prefers the products memory is known to grow by (the knob
// table's memory_products()). In the trials below the loader's queue
// (workers x prefetch x batch) is a tenth of the bytes that ran or less,
// and the one host OOM also had the largest cache. Free to use any product
// of the five host knobs, the fit put the bytes on products with the cache,
// so the same deep queue of 512-batches without the cache (65 of 26 GB)
// read as fitting (P 0.98), then each step down the queue (fewer workers, a
// shorter prefetch) likewise: nine host OOMs in a row on this seed. Read
// as a queue, it is over the wall (P 0.13), while a shallow queue with a
// middling cache stays open. A trial sequence bo ran on the cache-knob landscape
// (seed 1002).
TEST(Feasibility, TheBytesFitReadsTheLoadersQueueAsAQueue) {
  const CacheKnob k;
  ASSERT_EQ(k.land.name, "cache-knob");
  const auto& land = k.land;
  const SearchSpace& s = k.s;
  const std::vector<Config> tried = {k.at(128, 4, 4, false, "fp32", 2, 16),  k.at(64, 6, 4, false, "bf16", 4, 8),
                                     k.at(32, 8, 2, false, "tf32", 2, 4),    k.at(256, 2, 2, true, "bf16", 1, 2),
                                     k.at(128, 10, 2, true, "fp16", 2, 8),   k.at(512, 0, 8, true, "bf16", 2, 16),
                                     k.at(512, 12, 8, true, "bf16", 4, 16)};
  const std::vector<Observation> history = k.run(tried);
  for (std::size_t i = 0; i + 1 < history.size(); ++i) ASSERT_TRUE(history[i].outcome.ok()) << i;
  ASSERT_EQ(history.back().outcome.status, Status::host_oom);
  FeasibilityModel model(s, 0, 0);
  model.update(history);
  const Config deep = k.at(512, 12, 8, true, "bf16", 4, 0);    // 65 of 26 GB
  // One failure does not place the wall yet: a quarter of that queue
  // (512 x 11 x 4, 36 GB) still reads 0.79. One worker fewer does not.
  const Config one_fewer = k.at(512, 11, 8, true, "bf16", 4, 0);  // 60 GB
  const Config shallow = k.at(64, 8, 2, false, "fp16", 4, 4);   // 15 GB
  ASSERT_FALSE(land.true_throughput(s, deep));
  ASSERT_FALSE(land.true_throughput(s, one_fewer));
  ASSERT_TRUE(land.true_throughput(s, shallow));
  EXPECT_FALSE(model.known_infeasible(deep)) << "smaller than the failure in the cache: the cones leave it open";
  EXPECT_LT(model.probability(deep), 0.5) << "0.98 with every product equally free";
  EXPECT_LT(model.probability(one_fewer), 0.5) << "0.99 with every product equally free";
  EXPECT_GT(model.probability(shallow), 0.7);
}

TEST(Feasibility, PrefetchMeansNothingWithoutWorkers) {
  FeasibilityModel m(pipeline(), 0, 0);
  m.update({{at(512, 0, 1, true, "fp32", 1), Outcome::failure(Status::host_oom, "killed")}});
  EXPECT_TRUE(m.known_infeasible(at(512, 0, 8, true, "fp32", 1)));
  m.update({{at(512, 0, 8, true, "fp32", 1), Outcome::success(10)}});
  EXPECT_TRUE(m.known_feasible(at(512, 0, 1, true, "fp32", 1)));
}

// On a failure-heavy landscape, with the history of random trials: whatever
// the model learned, using more memory never makes a configuration more
// likely to fit (checked on every pair of neighbours along an ordered knob).
TEST(Feasibility, MonotoneInEveryMemoryKnob) {
  const auto land = bench::failure_landscapes()[3];  // third-fails
  const SearchSpace space = land.space();
  for (bool metrics : {false, true}) {
    Rng rng(11);
    std::vector<Observation> h;
    for (int i = 0; i < 25; ++i) {
      const Config c = *space.sample(rng);
      h.push_back({c, land.measure(space, c, rng, metrics)});
    }
    FeasibilityModel m(space, 0, 0);
    m.update(h);
    const auto knobs = knob_memory(space);
    int checked = 0;
    for (int i = 0; i < 300; ++i) {
      const Config c = *space.sample(rng);
      for (std::size_t d = 0; d < space.dims(); ++d) {
        if (space.param(d).scale == Scale::categorical || knobs[d].use == MemoryUse::none) continue;
        if (c[d] + 1 >= static_cast<int>(space.param(d).values.size())) continue;
        Config up = c;
        ++up[d];
        EXPECT_LE(m.probability(up), m.probability(c) + 1e-12)
            << space.to_assignment(c).describe() << " -> " << space.param(d).name << " up";
        ++checked;
      }
    }
    EXPECT_GT(checked, 500);
  }
}

// The table's story can be wrong for a workload: here pinning takes device
// memory. A run that contradicts it widens the knobs that kind depends on.
TEST(Feasibility, AContradictionWidensTheKnobsAKindDependsOn) {
  FeasibilityModel m(pipeline(), 0, 0);
  m.update({{at(256, 4, 2, true, "fp32", 1), Outcome::failure(Status::oom, "CUDA out of memory")},
            {at(256, 4, 2, false, "fp32", 1), Outcome::success(100)}});
  const std::size_t pin = *pipeline().index_of("pin_memory");
  EXPECT_TRUE(m.depends_on(MemoryKind::device, pin));
  EXPECT_FALSE(m.known_infeasible(at(256, 4, 2, false, "fp32", 2)));
  EXPECT_TRUE(m.known_infeasible(at(256, 8, 2, true, "fp32", 1)));
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
    EXPECT_LE(int4, 1) << "seed " << seed;
  }
}

// Neither model-based strategy walks into a wall it has already met: no
// proposal uses at least as much of a memory as an earlier failure of that
// memory, along the knobs that grow it.
TEST(Feasibility, StrategiesNeverWalkIntoTheSameWallTwice) {
  for (const auto& land : bench::failure_landscapes()) {
    if (land.cache_knob) continue;  // the same space as the others plus a knob: slower, nothing new
    const SearchSpace space = land.space();
    for (const char* name : {"bo", "anneal"}) {
      for (std::uint64_t seed : {1, 2}) {
        StrategyContext ctx;
        ctx.space = &space;
        ctx.seed = seed;
        ctx.budget = 30;
        auto s = make_strategy(name, ctx);
        FeasibilityModel seen(space, 0, 0);
        std::vector<Observation> h;
        std::mt19937_64 noise(seed);
        for (int t = 0; t < 30; ++t) {
          auto c = s->ask();
          ASSERT_TRUE(c);
          EXPECT_FALSE(seen.known_infeasible(*c))
              << name << " on " << land.name << " seed " << seed << " trial " << t << ": "
              << space.to_assignment(*c).describe();
          const Outcome o = land.measure(space, *c, noise, true);
          s->tell(*c, o);
          h.push_back({*c, o});
          seen.update(h);
        }
      }
    }
  }
}

}  // namespace
}  // namespace autotune
