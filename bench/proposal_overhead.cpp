// Time of a GP hyperparameter fit and of one bo proposal (feasibility update,
// GP fit, scoring every unasked configuration) after n observations, on the
// pipeline space with workers 0..31 (21,504 valid configurations). Observations
// are of random configurations on the memory-tight landscape (about 30% ok).
#include <benchmark/benchmark.h>

#include <algorithm>

#include "search/encoding.hpp"
#include "bench/landscapes.hpp"
#include "search/gp/gaussian_process.hpp"
#include "search/strategy.hpp"

namespace autotune {
namespace {

const SearchSpace& space() {
  static const SearchSpace s = bench::pipeline_space(31);
  return s;
}

// n observations of random configurations on the memory-tight landscape.
std::vector<Observation> observations(int n, std::uint64_t seed) {
  Rng rng(seed);
  const auto land = bench::landscapes()[2];
  std::set<Config> seen;
  std::vector<Observation> out;
  while (static_cast<int>(out.size()) < n) {
    auto c = space().sample(rng);
    if (!c || !seen.insert(*c).second) continue;
    out.push_back({*c, land.measure(space(), *c, rng)});
  }
  return out;
}

void BM_GpFit(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  // Only ok outcomes reach the GP; draw until n of them.
  std::vector<Observation> ok;
  for (const auto& o : observations(4 * n, 1))
    if (o.outcome.ok() && static_cast<int>(ok.size()) < n) ok.push_back(o);
  Eigen::MatrixXd x(static_cast<Eigen::Index>(ok.size()), static_cast<Eigen::Index>(space().encoded_dims()));
  Eigen::VectorXd y(static_cast<Eigen::Index>(ok.size()));
  for (std::size_t i = 0; i < ok.size(); ++i) {
    x.row(static_cast<Eigen::Index>(i)) = encode(space(), ok[i].config).transpose();
    y[static_cast<Eigen::Index>(i)] = std::log(ok[i].outcome.throughput);
  }
  std::vector<int> groups(space().encoded_owner().begin(), space().encoded_owner().end());
  std::mt19937_64 rng(2);
  for (auto _ : state) {
    gp::GaussianProcess g(groups);
    g.set_data(x, y);
    benchmark::DoNotOptimize(g.fit(rng));
  }
  state.counters["ok_points"] = static_cast<double>(ok.size());
}

// With busy shares (data_wait_fraction, as the harness and autotune_trial
// report) on the ok outcomes, bo's surrogate fits two GPs instead of one.
Outcome with_wait(Outcome o, const Config& c, bool busy) {
  if (busy && o.ok()) o.set(metric::data_wait_fraction, std::max(0.0, 0.9 - 0.1 * c[1] - 0.05 * c[0]));
  return o;
}

void bo_proposal(benchmark::State& state, bool busy) {
  const int n = static_cast<int>(state.range(0));
  auto obs = observations(n, 3);
  for (auto& o : obs) o.outcome = with_wait(o.outcome, o.config, busy);
  const auto land = bench::landscapes()[2];
  StrategyContext ctx;
  ctx.space = &space();
  ctx.seed = 4;
  ctx.budget = n + 10;
  ctx.vram_limit_bytes = land.vram_limit_mb * 1048576.0;
  ctx.ram_limit_bytes = land.ram_limit_mb * 1048576.0;
  auto s = make_strategy("bo", ctx);
  for (const auto& o : obs) s->tell(o.config, o.outcome);
  // The first ask lists the space (once per run); not what we measure.
  Rng rng(5);
  if (auto c = s->ask()) s->tell(*c, with_wait(land.measure(space(), *c, rng), *c, busy));
  for (auto _ : state) {
    auto c = s->ask();
    state.PauseTiming();
    if (c) s->tell(*c, with_wait(land.measure(space(), *c, rng), *c, busy));
    state.ResumeTiming();
  }
}

void BM_BoProposal(benchmark::State& state) { bo_proposal(state, false); }
void BM_BoProposalWithBusyShares(benchmark::State& state) { bo_proposal(state, true); }

BENCHMARK(BM_GpFit)->Arg(25)->Arg(50)->Arg(100)->Arg(200)->Unit(benchmark::kMillisecond);
// Each timed ask is told back: observations grow from n+1 to n+1+iterations.
BENCHMARK(BM_BoProposal)->Arg(25)->Arg(50)->Arg(100)->Arg(200)->Iterations(8)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BoProposalWithBusyShares)->Arg(25)->Arg(50)->Arg(100)->Arg(200)->Iterations(8)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace autotune

BENCHMARK_MAIN();
