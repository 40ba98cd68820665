// Strategies on the failure-heavy landscapes of bench/failure_landscapes.hpp
// (issue 12), and the same landscapes exported as tables for a peer tuner
// (bench/optuna_peers.py).
//
// For each landscape x strategy x budget and each seed: `budget` trials
// through the trial driver (bench::drive; in waves of --parallel asks before
// their tells, measured one at a time in order), score recommend()'s
// TRUE throughput as a fraction of the exhaustive optimum (0 when it
// recommends nothing or something that fails). Prints median, 10th percentile
// and minimum over seeds, the share of the trials run that failed, the same
// share after the first third of the budget (the initial design), and the
// mean time per ask.
//
// Usage: bench_failure_efficiency [--seeds 40] [--strategies bo,anneal,random]
//          [--budgets 15,30] [--landscapes a,b] [--parallel 1] [--limits]
//          [--no-memory-metrics] [--runs FILE.csv] [--export DIR] [--trace]
//          [--first-seed 0] [--random N] [--busy] [--free-failures[=STATUS]]
// --random N: instead of the named landscapes, N drawn at random from the
// same model (random_failure_landscapes: held out from any choice of method).
// Trials report vram_bytes and ram_bytes (as the runner and the harness do)
// unless --no-memory-metrics; the spec's limits reach the strategies only
// with --limits (by default they must learn the capacity from failures).
// --busy: each ok trial also reports compute_busy (1 - its data wait, with
// the throughput's noise), as the cpu and cuda harnesses and autotune_trial
// do, so that bo's surrogate reads throughput as compute rate x busy share.
// --free-failures: a failed trial does not count against the budget (a run
// ends after `budget` ok trials, or 3 x budget asks): what a strategy would
// reach if walls cost nothing, so the share of its short-fall that failures
// cause (the rest is the search itself). The strategy is still told the
// budget, so its last-trials rules start as they would. The CSV's tool
// column gets "/free". --free-failures=STATUS frees only the failures of
// that status (error: a precision the card lacks; host_oom; oom), and the
// column gets "/free-STATUS".
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <variant>
#include <vector>

#include "bench/bench_util.hpp"
#include "bench/failure_landscapes.hpp"
#include "search/strategy.hpp"
#include "tuner/run/tune.hpp"

using namespace autotune;

namespace {

// The whole landscape as a table: one row per configuration, the parameters'
// values, then status, noise-free throughput, memory and the failure reason.
// A second file lists each parameter's domain in order (name,kind,values...).
void export_table(const bench::Landscape& land, const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  const SearchSpace space = land.space();
  std::ofstream dom(dir / (land.name + ".space.csv"));
  for (const auto& p : space.params()) {
    dom << p.name << ',' << (p.scale == Scale::categorical || is_bool(p.values[0]) ? "categorical" : "ordered");
    for (const auto& v : p.values) dom << ',' << to_string(v);
    dom << '\n';
  }
  std::ofstream out(dir / (land.name + ".csv"));
  for (const auto& p : space.params()) out << p.name << ',';
  out << "status,throughput,vram_bytes,ram_bytes,reason\n";
  const auto all = space.enumerate();
  for (const auto& c : *all) {
    const auto e = land.model(space, c);
    for (std::size_t d = 0; d < c.size(); ++d) out << to_string(space.param(d).values[static_cast<std::size_t>(c[d])]) << ',';
    out << to_string(e.status) << ',' << (e.status == Status::ok ? e.throughput : 0.0) << ','
        << static_cast<long long>(e.vram_mb * 1048576.0) << ',' << static_cast<long long>(e.ram_mb * 1048576.0)
        << ",\"" << e.reason << "\"\n";
  }
}

struct BenchOptions {
  int seeds = 40;
  std::vector<std::string> strategies = {"bo", "anneal", "random"};
  std::vector<int> budgets = {15, 30};
  std::vector<std::string> only;
  int parallel = 1;
  int first_seed = 0;  // seeds first_seed .. first_seed + seeds - 1 (a fresh set for a check)
  bool limits = false, metrics = true, trace = false, busy = false, free_failures = false;
  std::optional<Status> free_status;  // with --free-failures=STATUS: only these are free
  std::string runs_path, export_dir;
  int random_landscapes = 0;
};

// The options, or the exit code for a bad command line.
std::variant<BenchOptions, int> parse_args(int argc, char** argv) {
  BenchOptions o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool more = i + 1 < argc;
    if (a == "--seeds" && more) o.seeds = std::stoi(argv[++i]);
    else if (a == "--strategies" && more) o.strategies = bench::split(argv[++i]);
    else if (a == "--budgets" && more) {
      o.budgets.clear();
      for (const auto& b : bench::split(argv[++i])) o.budgets.push_back(std::stoi(b));
    } else if (a == "--landscapes" && more) o.only = bench::split(argv[++i]);
    else if (a == "--parallel" && more) o.parallel = std::max(1, std::stoi(argv[++i]));
    else if (a == "--limits") o.limits = true;
    else if (a == "--no-memory-metrics") o.metrics = false;
    else if (a == "--busy") o.busy = true;
    else if (a == "--free-failures") o.free_failures = true;
    else if (constexpr std::string_view prefix = "--free-failures="; a.rfind(prefix, 0) == 0) {
      const std::string named = a.substr(prefix.size());
      o.free_status = parse_status(named);
      if (!o.free_status || *o.free_status == Status::ok) {
        std::fprintf(stderr, "--free-failures=STATUS: expected a failure status (oom, host_oom, error, ...), found '%s'\n",
                     named.c_str());
        return 2;
      }
      o.free_failures = true;
    }
    else if (a == "--runs" && more) o.runs_path = argv[++i];
    else if (a == "--export" && more) o.export_dir = argv[++i];
    else if (a == "--trace") o.trace = true;
    else if (a == "--first-seed" && more) o.first_seed = std::stoi(argv[++i]);
    else if (a == "--random" && more) o.random_landscapes = std::stoi(argv[++i]);
    else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  return o;
}

// One seed's run as a trial source. The strategy is asked a wave of
// `parallel` trials before any is told (the driver's one slot measures them
// in order); with free failures a failed trial does not count against the
// budget, up to 3 x budget asks.
class SeedRun final : public TrialSource {
 public:
  SeedRun(std::unique_ptr<Strategy> strategy, const BenchOptions& opt, int budget, const SearchSpace& space,
          const bench::Landscape& land, double optimum, int seed)
      : m_strategy(std::move(strategy)),
        m_opt(opt),
        m_budget(budget),
        m_space(space),
        m_land(land),
        m_optimum(optimum),
        m_seed(seed) {}

  std::optional<RunEnd> stop_reason() override {
    return m_wave.empty() && m_t >= m_budget ? std::optional(RunEnd::budget) : std::nullopt;
  }

  std::optional<Proposal> next() override {
    if (m_wave.empty()) ask_wave();
    if (m_wave.empty()) return std::nullopt;
    Proposal p = std::move(m_wave.front());
    m_wave.pop_front();
    return p;
  }

  void tell(const Finished& f) override {
    const Config& c = f.proposal.config;
    const Outcome& o = f.outcome;
    const bool late = m_t >= m_budget / 3;  // after the initial design
    if (!o.ok()) {
      ++failed;
      if (late) ++failed_late;
    }
    if (m_opt.trace) {
      const auto tt = m_land.true_throughput(m_space, c);
      std::printf("  seed %d trial %2d %-7s %-8s %.3f  %s\n", m_seed, m_t, f.proposal.proposed_as.c_str(),
                  std::string(to_string(o.status)).c_str(), tt ? *tt / m_optimum : 0.0, f.config.describe().c_str());
    }
    m_strategy->tell(c, o);
    ++told;
    if (late) ++told_late;
    const bool free = m_opt.free_failures && !o.ok() && (!m_opt.free_status || o.status == *m_opt.free_status);
    if (!free || asks >= 3 * m_budget) ++m_t;
  }

  std::optional<Config> recommend() const { return m_strategy->recommend(); }

  int failed = 0, failed_late = 0, told = 0, told_late = 0;
  double ask_ms = 0;  // every ask's time, an empty one included
  int asks = 0;

 private:
  // Up to `parallel` asks, as many as the budget has room for; an empty
  // answer ends the wave.
  void ask_wave() {
    for (int k = 0; k < m_opt.parallel && m_t + static_cast<int>(m_wave.size()) < m_budget; ++k) {
      const auto t0 = std::chrono::steady_clock::now();
      auto c = m_strategy->ask();
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      ask_ms += ms;
      ++asks;
      if (!c) break;
      Proposal p;
      p.config = std::move(*c);
      p.proposed_as = m_strategy->proposed_as();
      p.ask_ms = ms;
      m_wave.push_back(std::move(p));
    }
  }

  std::unique_ptr<Strategy> m_strategy;
  const BenchOptions& m_opt;
  int m_budget;
  const SearchSpace& m_space;
  const bench::Landscape& m_land;
  double m_optimum;
  int m_seed;
  int m_t = 0;  // trials that count against the budget
  std::deque<Proposal> m_wave;
};

// One landscape x strategy x budget over every seed: its summary line, and
// a row per seed in `runs` when open.
void run_cell(const BenchOptions& opt, const bench::Landscape& land, const SearchSpace& space, std::size_t configs,
              double optimum, const std::string& name, int budget, const std::string& tool_suffix,
              std::ofstream& runs) {
  std::vector<double> fraction;
  double failed = 0, failed_late = 0, trials = 0, late_trials = 0, ask_ms = 0;
  int asks = 0;
  for (int seed = opt.first_seed; seed < opt.first_seed + opt.seeds; ++seed) {
    const Limits given = opt.limits ? Limits{land.vram_limit_mb * 1048576.0, land.ram_limit_mb * 1048576.0}
                                    : Limits{};
    SeedRun run(
        make_strategy(name, strategy_context(space, 1000 + static_cast<std::uint64_t>(seed), budget, {}, given)),
        opt, budget, space, land, optimum, seed);
    std::mt19937_64 noise(77 + static_cast<std::uint64_t>(seed));
    bench::drive(space, run, [&](const Config& c) { return land.measure(space, c, noise, opt.metrics, opt.busy); });
    const auto rec = run.recommend();
    const auto tt = rec ? land.true_throughput(space, *rec) : std::nullopt;
    const double f = tt ? *tt / optimum : 0.0;
    fraction.push_back(f);
    failed += run.failed;
    failed_late += run.failed_late;
    trials += run.told;  // the budget, unless the run ended early or failures were free
    late_trials += run.told_late;
    ask_ms += run.ask_ms;
    asks += run.asks;
    if (opt.trace)
      std::printf("  seed %d recommends %.3f %s\n", seed, f, rec ? space.to_assignment(*rec).describe().c_str() : "-");
    if (runs.is_open())
      runs << land.name << ',' << name << tool_suffix << ',' << budget << ',' << seed << ',' << f << ','
           << run.failed << ',' << run.failed_late << ',' << run.ask_ms / std::max(1, run.asks) << '\n';
  }
  std::printf("%-13s %7zu %-9s %6d %7.3f %7.3f %7.3f %7.2f %9.3f %8.2f\n", land.name.c_str(), configs, name.c_str(),
              budget, bench::quantile(fraction, 0.5), bench::quantile(fraction, 0.1),
              *std::min_element(fraction.begin(), fraction.end()), failed / std::max(1.0, trials),
              failed_late / std::max(1.0, late_trials), ask_ms / asks);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const auto parsed = parse_args(argc, argv);
  if (const int* code = std::get_if<int>(&parsed)) return *code;
  const BenchOptions& opt = std::get<BenchOptions>(parsed);

  const std::vector<bench::Landscape> landscapes = opt.random_landscapes > 0
                                                       ? bench::random_failure_landscapes(opt.random_landscapes, 2026)
                                                       : bench::failure_landscapes();
  auto chosen = [&](const bench::Landscape& land) {
    return opt.only.empty() || std::find(opt.only.begin(), opt.only.end(), land.name) != opt.only.end();
  };
  if (!opt.export_dir.empty()) {
    for (const auto& land : landscapes)
      if (chosen(land)) export_table(land, opt.export_dir);
    return 0;
  }

  std::ofstream runs;
  if (!opt.runs_path.empty()) {
    runs.open(opt.runs_path);
    runs << "landscape,tool,budget,seed,fraction,failed,failed_after_design,ms_per_ask\n";
  }
  // What is free, named once for the header and the CSV's tool column.
  const std::string freed = !opt.free_failures ? std::string()
                            : opt.free_status  ? std::string(to_string(*opt.free_status))
                                               : std::string("failed");
  const std::string free_note = freed.empty() ? freed : fmt::format("; {} trials free (not counted in the budget)", freed);
  const std::string tool_suffix = (opt.parallel > 1 ? "/p" + std::to_string(opt.parallel) : std::string()) +
                                  (!opt.free_failures ? std::string() : opt.free_status ? "/free-" + freed : "/free");
  std::printf("machine: %s, %u hardware threads; %d seeds; parallel %d; memory metrics %s; limits %s%s\n",
              bench::cpu_model().c_str(), std::thread::hardware_concurrency(), opt.seeds, opt.parallel,
              opt.metrics ? "reported" : "withheld", opt.limits ? "given" : "withheld", free_note.c_str());
  std::printf("%-13s %7s %-9s %6s %7s %7s %7s %7s %9s %8s\n", "landscape", "configs", "strategy", "budget", "median",
              "p10", "min", "failed", "fail>1/3", "ms/ask");
  for (const auto& land : landscapes) {
    if (!chosen(land)) continue;
    const SearchSpace space = land.space();
    const auto all = *space.enumerate();
    double optimum = 0;
    std::size_t failing = 0;
    for (const auto& c : all) {
      if (auto t = land.true_throughput(space, c)) optimum = std::max(optimum, *t);
      else ++failing;
    }
    for (const auto& name : opt.strategies)
      for (int budget : opt.budgets) run_cell(opt, land, space, all.size(), optimum, name, budget, tool_suffix, runs);
    std::printf("%-13s %zu of %zu configurations fail (%.0f%%)%s%s\n", land.name.c_str(), failing, all.size(),
                100.0 * static_cast<double>(failing) / static_cast<double>(all.size()),
                opt.random_landscapes > 0 ? "; " : "", opt.random_landscapes > 0 ? land.summary.c_str() : "");
  }
  return 0;
}
