#include "tuner/run/compare.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <numeric>
#include <set>

#include <fmt/format.h>

#include "core/csv_table.hpp"
#include "search/strategy.hpp"
#include "tuner/record/confirm.hpp"
#include "tuner/run/after_search.hpp"
#include "tuner/run/driver.hpp"
#include "tuner/record/racing.hpp"
#include "tuner/run/scheduler.hpp"
#include "tuner/record/study.hpp"

namespace autotune {
namespace {

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

// Position of a configuration in the unconstrained product: a stable id for
// per-configuration noise seeds, the same whichever strategy asks.
std::uint64_t config_id(const SearchSpace& space, const Config& c) {
  std::uint64_t id = 0;
  for (std::size_t d = 0; d < c.size(); ++d)
    id = id * space.param(d).values.size() + static_cast<std::uint64_t>(c[d]);
  return id;
}

// A confirmation's noise seed: its configuration's id, moved off the ids
// of first measurements.
constexpr std::uint64_t kConfirmSeedSalt = 0xC0F1'0000'0000'0000ULL;

constexpr double kTargets[3] = {0.90, 0.95, 0.99};

}  // namespace

double mann_whitney_p_greater(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.empty() || b.empty()) return 1.0;
  std::vector<std::pair<double, int>> all;
  for (double x : a) all.emplace_back(x, 0);
  for (double x : b) all.emplace_back(x, 1);
  std::sort(all.begin(), all.end());
  std::vector<double> rank(all.size());
  double tie_term = 0;
  for (std::size_t i = 0; i < all.size();) {
    std::size_t j = i;
    while (j + 1 < all.size() && all[j + 1].first == all[i].first) ++j;
    const double r = (static_cast<double>(i) + static_cast<double>(j)) / 2.0 + 1.0;
    for (std::size_t k = i; k <= j; ++k) rank[k] = r;
    const double t = static_cast<double>(j - i + 1);
    tie_term += t * t * t - t;
    i = j + 1;
  }
  const double n1 = static_cast<double>(a.size()), n2 = static_cast<double>(b.size()), n = n1 + n2;
  double r1 = 0;
  for (std::size_t i = 0; i < all.size(); ++i)
    if (all[i].second == 0) r1 += rank[i];
  const double u = r1 - n1 * (n1 + 1) / 2.0;
  const double mean = n1 * n2 / 2.0;
  const double var = n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1)));
  if (var <= 0) return u > mean ? 0.0 : 1.0;
  const double z = (u - mean - 0.5) / std::sqrt(var);  // continuity correction
  return 0.5 * std::erfc(z / std::sqrt(2.0));
}

CompareResult run_compare(const SearchSpace& space, Workload& workload, const MeasureFn& measure,
                          const CompareOptions& options, const std::function<void(const std::string&)>& progress) {
  auto executor = make_local_executor(measure, 1);
  TrialSettings settings;
  settings.limits = options.limits;
  return run_compare(space, workload, *executor, settings, options, progress);
}

namespace {

// The noise-free throughput of every configuration, where the workload
// knows it (sets result.exact_optimum and result.optimum); empty otherwise.
std::map<Config, double> exact_truth(const SearchSpace& space, Workload& workload, const CompareOptions& options,
                                     CompareResult& result) {
  std::map<Config, double> truth;
  if (auto all = space.enumerate(); all && !all->empty() && workload.expected(space.to_assignment(all->front()))) {
    result.exact_optimum = true;
    for (const auto& c : *all) {
      auto o = workload.expected(space.to_assignment(c));
      const double v = o && o->ok() ? apply_limits(*o, options.limits).ok() ? o->throughput : 0.0 : 0.0;
      truth[c] = v;
      result.optimum = std::max(result.optimum, v);
    }
  }
  return truth;
}

// One strategy's run with one seed, as tuning runs it (through the driver,
// in the executor's slots): the driver's source (the strategy) and its
// observer (a row per trial).
class CompareRun final : public TrialSource, public TrialObserver {
 public:
  CompareRun(const SearchSpace& space, const CompareOptions& options, const std::map<Config, double>& truth,
             const std::string& name, int rep, CompareResult& result)
      : m_space(space),
        m_options(options),
        m_truth(truth),
        m_name(name),
        m_rep(rep),
        m_result(result),
        m_strategy(make_strategy(name, strategy_context(space, options.seed + static_cast<std::uint64_t>(rep),
                                                        options.budget, options.initial, options.limits,
                                                        options.strategy_options.count(name)
                                                            ? options.strategy_options.at(name)
                                                            : Options{}))) {}

  std::uint64_t seed() const { return m_options.seed + static_cast<std::uint64_t>(m_rep); }

  void run(Executor& executor, const TrialSettings& settings) {
    TrialSettings run_settings = settings;
    run_settings.seed = seed();
    run_settings.limits = m_options.limits;
    Scheduler scheduler(executor, run_settings);
    Driver driver(scheduler, m_space, {this});
    driver.run(*this);
    // Exhausted or converged: the recommendation stands for the rest of the budget.
    for (int t = m_rows + 1; t <= m_options.budget; ++t) {
      CompareTrial row = m_last;
      row.strategy = m_name;
      row.repeat = m_rep;
      row.trial = t;
      row.status = Status::ok;
      row.measured = 0;
      row.proposal_ms = 0;
      row.seconds = 0;
      row.raced = false;
      row.trial_true = 0;
      row.config.clear();
      row.proposed_as.clear();
      m_result.trials.push_back(row);
    }
    if (m_options.confirm > 0) confirm(driver);
  }

  std::optional<RunEnd> stop_reason() override {
    if (m_started >= m_options.budget) return RunEnd::budget;
    if (m_options.until_converged && m_strategy->converged()) return RunEnd::converged;
    return std::nullopt;
  }

  std::optional<Proposal> next() override {
    const auto t0 = std::chrono::steady_clock::now();
    auto c = m_strategy->ask();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!c) return std::nullopt;
    ++m_started;
    // The seed follows the configuration, not the trial: every strategy
    // meets the same noise on the same configuration.
    const std::uint64_t key = config_id(m_space, *c);
    return Proposal{std::move(*c), std::string(m_strategy->proposed_as()), Phase::search, key,
                    race_bar(m_study.trials, m_options.race_margin), ms};
  }

  void tell(const Finished& f) override {
    const Config& c = f.proposal.config;
    const Outcome& o = f.outcome;
    m_strategy->tell(c, o);
    m_study.add(f.trial, c, Phase::search, o);
    m_elapsed += o.seconds;
    CompareTrial row;
    row.strategy = m_name;
    row.repeat = m_rep;
    row.trial = ++m_rows;  // trials finished so far: the budget the row stands for
    row.status = o.status;
    row.measured = o.ok() ? o.throughput : 0.0;
    row.proposal_ms = f.proposal.ask_ms;
    row.seconds = o.seconds;
    row.elapsed_s = m_elapsed;  // the trials' seconds, summed over the slots
    row.raced = o.raced();
    row.config = f.config.describe();
    row.proposed_as = f.proposal.proposed_as;
    if (o.ok())
      if (auto it = m_truth.find(c); it != m_truth.end()) row.trial_true = it->second;
    m_study.choose_answer(m_strategy->recommend(), m_options.initial, m_space.index_of("precision"));
    row.recommended_true = answer_true();
    row.answer = m_study.best ? m_space.to_assignment(*m_study.best).describe() : std::string();
    m_result.trials.push_back(row);
    m_last = row;
  }

 private:
  // As tuning does: the best few measured once more, the answer chosen on
  // all their runs. A configuration's second measurement has a seed of its
  // own (the first's would repeat its noise).
  void confirm(Driver& driver) {
    CompareRunEnd end;
    end.strategy = m_name;
    end.repeat = m_rep;
    const std::vector<Config> candidates = confirm_candidates(m_study.trials, m_study.best, m_options.confirm);
    ConfirmSource source(
        m_study, candidates, [&](const TrialRecord& t, int, int) { end.confirm_seconds += t.outcome.seconds; },
        [&](const Config& c) -> std::optional<std::uint64_t> { return config_id(m_space, c) ^ kConfirmSeedSalt; });
    if (driver.run(source) == RunEnd::interrupted) return;
    choose_confirmed(candidates, m_study);
    end.confirmed_true = answer_true();
    m_result.runs.push_back(end);
  }

  // The true throughput of the answer when the workload knows it, else what
  // was measured; 0 without an answer.
  double answer_true() const {
    if (!m_study.best) return 0.0;
    auto it = m_truth.find(*m_study.best);
    return it != m_truth.end() ? it->second : m_study.best_outcome->throughput;
  }

  const SearchSpace& m_space;
  const CompareOptions& m_options;
  const std::map<Config, double>& m_truth;
  const std::string& m_name;
  int m_rep;
  CompareResult& m_result;
  std::unique_ptr<Strategy> m_strategy;
  Study m_study;  // this run's trials: the answer is settled as in tuning
  double m_elapsed = 0;
  int m_started = 0, m_rows = 0;
  CompareTrial m_last;
};

// One strategy's summary over its runs in `result`; its fraction at the
// full budget per run goes to `final_fraction`.
StrategySummary summarise(const std::string& name, const CompareResult& result, const CompareOptions& options,
                          const std::vector<int>& budgets, std::vector<double>& final_fraction) {
  StrategySummary s;
  s.strategy = name;
  s.budgets = budgets;
  std::vector<std::vector<double>> at(budgets.size());
  std::vector<double> evals[3], failed, proposal, to_98, total_s, raced;
  for (int rep = 0; rep < options.repeats; ++rep) {
    std::vector<const CompareTrial*> run;
    for (const auto& t : result.trials)
      if (t.strategy == name && t.repeat == rep) run.push_back(&t);
    int fails = 0, races = 0;
    double first_98 = std::numeric_limits<double>::infinity();
    for (const auto* t : run) {
      fails += t->status != Status::ok;
      races += t->raced;
      if (t->proposal_ms > 0) proposal.push_back(t->proposal_ms);
      if (!std::isfinite(first_98) && t->fraction >= 0.98 - 1e-12) first_98 = t->elapsed_s;
    }
    failed.push_back(fails);
    raced.push_back(races);
    to_98.push_back(first_98);
    s.reached_98 += std::isfinite(first_98);
    total_s.push_back(run.empty() ? 0.0 : run.back()->elapsed_s);
    for (std::size_t b = 0; b < budgets.size(); ++b)
      at[b].push_back(run.empty() ? 0.0 : run[static_cast<std::size_t>(std::min<int>(budgets[b], static_cast<int>(run.size())) - 1)]->fraction);
    for (int k = 0; k < 3; ++k) {
      double first = std::numeric_limits<double>::infinity();
      for (const auto* t : run)
        if (t->fraction >= kTargets[k] - 1e-12) {
          first = t->trial;
          break;
        }
      evals[k].push_back(first);
      s.reached[k] += std::isfinite(first);
    }
    final_fraction.push_back(at.back().back());
  }
  for (const auto& v : at) {
    s.median_fraction.push_back(quantile(v, 0.5));
    s.p10_fraction.push_back(quantile(v, 0.1));
  }
  for (int k = 0; k < 3; ++k) {
    const double med = quantile(evals[k], 0.5);
    s.evals_to[k] = std::isfinite(med) ? med : -1;
  }
  const double med_98 = quantile(to_98, 0.5);
  s.seconds_to_98 = std::isfinite(med_98) ? med_98 : -1;
  s.median_total_s = quantile(total_s, 0.5);
  std::vector<double> confirmed, total_confirmed;
  for (const auto& e : result.runs)
    if (e.strategy == name) {
      confirmed.push_back(e.confirmed_fraction);
      total_confirmed.push_back(total_s[static_cast<std::size_t>(e.repeat)] + e.confirm_seconds);
    }
  if (!confirmed.empty()) {
    s.median_confirmed = quantile(confirmed, 0.5);
    s.p10_confirmed = quantile(confirmed, 0.1);
    s.median_total_confirmed_s = quantile(total_confirmed, 0.5);
  }
  s.mean_raced = std::accumulate(raced.begin(), raced.end(), 0.0) / std::max<std::size_t>(1, raced.size());
  s.mean_failed = std::accumulate(failed.begin(), failed.end(), 0.0) / std::max<std::size_t>(1, failed.size());
  s.median_proposal_ms = proposal.empty() ? 0 : quantile(proposal, 0.5);
  return s;
}

}  // namespace

CompareResult run_compare(const SearchSpace& space, Workload& workload, Executor& executor,
                          const TrialSettings& settings, const CompareOptions& options,
                          const std::function<void(const std::string&)>& progress) {
  CompareResult result;
  const std::map<Config, double> truth = exact_truth(space, workload, options, result);
  for (const auto& name : options.strategies)
    for (int rep = 0; rep < options.repeats; ++rep) {
      CompareRun(space, options, truth, name, rep, result).run(executor, settings);
      if (progress) progress(fmt::format("{} seed {} done", name, options.seed + static_cast<std::uint64_t>(rep)));
    }
  if (!result.exact_optimum)
    for (const auto& t : result.trials) result.optimum = std::max(result.optimum, t.measured);
  for (auto& t : result.trials) t.fraction = result.optimum > 0 ? t.recommended_true / result.optimum : 0.0;
  for (auto& e : result.runs) e.confirmed_fraction = result.optimum > 0 ? e.confirmed_true / result.optimum : 0.0;

  // Summaries.
  std::vector<int> budgets;
  for (int b : options.budgets)
    if (b <= options.budget) budgets.push_back(b);
  if (std::find(budgets.begin(), budgets.end(), options.budget) == budgets.end()) budgets.push_back(options.budget);
  std::map<std::string, std::vector<double>> final_fraction;
  for (const auto& name : options.strategies)
    result.summary.push_back(summarise(name, result, options, budgets, final_fraction[name]));
  if (final_fraction.count("random"))
    for (auto& s : result.summary)
      s.p_vs_random = s.strategy == "random" ? 1.0 : mann_whitney_p_greater(final_fraction[s.strategy], final_fraction["random"]);
  return result;
}

namespace {

// trials.csv: one row per trial of every run.
void write_trials_csv(const CompareResult& r, const CompareOptions& options, const std::filesystem::path& dir) {
  std::FILE* f = std::fopen((dir / "trials.csv").c_str(), "w");
  if (!f) throw std::runtime_error((dir / "trials.csv").string() + ": cannot write");
  write_csv_row(f, {"strategy", "seed", "trial", "status", "measured", "recommended_true", "fraction_of_optimum",
                    "proposal_ms", "seconds", "elapsed_s", "raced", "trial_true", "config", "answer", "proposed_as"});
  for (const auto& t : r.trials)
    write_csv_row(f, {t.strategy, std::to_string(options.seed + static_cast<std::uint64_t>(t.repeat)),
                      std::to_string(t.trial), std::string(to_string(t.status)), fmt::format("{:.6g}", t.measured),
                      fmt::format("{:.6g}", t.recommended_true), fmt::format("{:.6f}", t.fraction),
                      fmt::format("{:.4f}", t.proposal_ms), fmt::format("{:.4g}", t.seconds),
                      fmt::format("{:.6g}", t.elapsed_s), t.raced ? "1" : "0", fmt::format("{:.6g}", t.trial_true), t.config, t.answer,
                      t.proposed_as});
  std::fclose(f);
}

// One strategy's line of summary.md and row of summary.csv.
std::pair<std::string, std::vector<std::string>> summary_row(const StrategySummary& s, const CompareOptions& options) {
  std::string line = "| " + s.strategy + " |";
  std::vector<std::string> row = {s.strategy};
  for (std::size_t b = 0; b < s.budgets.size(); ++b) {
    line += fmt::format(" {:.3f} | {:.3f} |", s.median_fraction[b], s.p10_fraction[b]);
    row.push_back(fmt::format("{:.4f}", s.median_fraction[b]));
    row.push_back(fmt::format("{:.4f}", s.p10_fraction[b]));
  }
  for (int k = 0; k < 3; ++k) {
    line += s.evals_to[k] < 0 ? fmt::format(" >{} ({}/{}) |", options.budget, s.reached[k], options.repeats)
                              : fmt::format(" {:.0f} |", s.evals_to[k]);
    row.push_back(s.evals_to[k] < 0 ? "" : fmt::format("{:.1f}", s.evals_to[k]));
  }
  // Three significant digits: an in-process model's run takes milliseconds,
  // not "0" seconds.
  line += s.seconds_to_98 < 0 ? fmt::format(" never ({}/{}) |", s.reached_98, options.repeats)
                              : fmt::format(" {:.3g} |", s.seconds_to_98);
  line += fmt::format(" {:.3g} | {:.1f} |", s.median_total_s, s.mean_raced);
  row.push_back(s.seconds_to_98 < 0 ? "" : fmt::format("{:.2f}", s.seconds_to_98));
  row.push_back(fmt::format("{:.2f}", s.median_total_s));
  row.push_back(fmt::format("{:.2f}", s.mean_raced));
  line += fmt::format(" {:.1f} | {:.2f} | {} |\n", s.mean_failed, s.median_proposal_ms,
                      s.strategy == "random" ? std::string("-") : fmt::format("{:.3g}", s.p_vs_random));
  row.push_back(fmt::format("{:.2f}", s.mean_failed));
  row.push_back(fmt::format("{:.3f}", s.median_proposal_ms));
  row.push_back(fmt::format("{:.4g}", s.p_vs_random));
  const bool confirmed = s.median_confirmed >= 0;
  row.push_back(confirmed ? fmt::format("{:.4f}", s.median_confirmed) : "");
  row.push_back(confirmed ? fmt::format("{:.4f}", s.p10_confirmed) : "");
  row.push_back(confirmed ? fmt::format("{:.2f}", s.median_total_confirmed_s) : "");
  return {line, row};
}

// summary.md (returned, and written) and summary.csv: one row per strategy.
std::string write_summary(const CompareResult& r, const CompareOptions& options, const std::filesystem::path& dir) {
  // Summary: Markdown for people, CSV for scripts.
  std::string md = fmt::format("optimum: {:.6g} samples/s ({}); {} seeds per strategy, budget {}\n\n",
                               r.optimum, r.exact_optimum ? "exact, enumerated" : "best measured in this comparison",
                               options.repeats, options.budget);
  std::string header = "| strategy |";
  std::string rule = "|---|";
  const auto& budgets = r.summary.empty() ? std::vector<int>{} : r.summary.front().budgets;
  for (int b : budgets) {
    header += fmt::format(" @{} median | @{} p10 |", b, b);
    rule += "---|---|";
  }
  header += " evals to 90% | 95% | 99% | seconds to 98% | seconds/run | raced/run | failed/run | ms/proposal | p vs random |\n";
  rule += "---|---|---|---|---|---|---|---|---|\n";
  md += header + rule;
  std::FILE* sf = std::fopen((dir / "summary.csv").c_str(), "w");
  std::vector<std::string> scols = {"strategy"};
  for (int b : budgets) {
    scols.push_back(fmt::format("median_fraction_at_{}", b));
    scols.push_back(fmt::format("p10_fraction_at_{}", b));
  }
  for (const char* c : {"evals_to_90", "evals_to_95", "evals_to_99", "seconds_to_98", "seconds_per_run", "raced_per_run",
                        "failed_per_run", "ms_per_proposal", "p_vs_random", "median_fraction_confirmed",
                        "p10_fraction_confirmed", "seconds_per_run_confirmed"})
    scols.emplace_back(c);
  if (sf) write_csv_row(sf, scols);
  for (const auto& s : r.summary) {
    auto [line, row] = summary_row(s, options);
    md += line;
    if (sf) write_csv_row(sf, row);
  }
  if (sf) std::fclose(sf);
  if (options.confirm > 0) {
    md += fmt::format("\nAfter each run, the best {} measured once more and the answer chosen on all their runs, as "
                      "tuning does (search.confirm):\n\n| strategy | median | p10 | seconds/run with them |\n|---|---|---|---|\n",
                      options.confirm);
    for (const auto& s : r.summary)
      md += fmt::format("| {} | {:.3f} | {:.3f} | {:.3g} |\n", s.strategy, s.median_confirmed, s.p10_confirmed,
                        s.median_total_confirmed_s);
  }
  md += "\nfraction: true throughput of the strategy's recommended configuration / the optimum.\n"
        "evals to X%: median trials until the recommendation reaches X% of the optimum\n"
        "(>budget when fewer than half the seeds get there; reached/seeds in brackets).\n"
        "seconds to 98%: median of the trials' seconds summed until the recommendation reaches 98%\n"
        "(the workload's seconds: simulated ones with synthetic simulated_time); seconds/run: a whole run.\n"
        "p vs random: one-sided Mann-Whitney U on the fraction at the full budget.\n";
  std::ofstream(dir / "summary.md") << md;
  return md;
}

// One strategy's plot data: the recommendation's fraction of the optimum
// against seconds and against trials (median and quartiles over the runs),
// and each run's trials to 95% (budget + 1 when never reached).
void write_plot_data(const CompareResult& r, const CompareOptions& options, const std::filesystem::path& dir,
                     const StrategySummary& s, const std::string& stem, double longest) {
  // The time axis: each run's recommendation as of elapsed second tau (0
  // before its first trial), median and quartiles over the runs.
  std::ofstream td(dir / (stem + "_best_so_far_time.dat"));
  td << "# seconds median q25 q75\n";
  constexpr int kPoints = 200;
  for (int i = 0; i <= kPoints && longest > 0; ++i) {
    const double tau = longest * i / kPoints;
    std::vector<double> v;
    for (int rep = 0; rep < options.repeats; ++rep) {
      double f = 0;
      for (const auto& x : r.trials)
        if (x.strategy == s.strategy && x.repeat == rep && x.elapsed_s <= tau) f = x.fraction;
      v.push_back(f);
    }
    td << fmt::format("{:.4g} {:.5f} {:.5f} {:.5f}\n", tau, quantile(v, 0.5), quantile(v, 0.25), quantile(v, 0.75));
  }
  std::ofstream d(dir / (stem + "_best_so_far.dat"));
  d << "# trial median q25 q75\n";
  for (int t = 1; t <= options.budget; ++t) {
    std::vector<double> v;
    for (const auto& x : r.trials)
      if (x.strategy == s.strategy && x.trial == t) v.push_back(x.fraction);
    d << fmt::format("{} {:.5f} {:.5f} {:.5f}\n", t, quantile(v, 0.5), quantile(v, 0.25), quantile(v, 0.75));
  }
  std::ofstream e(dir / (stem + "_evals95.dat"));
  for (int rep = 0; rep < options.repeats; ++rep) {
    int first = options.budget + 1;
    for (const auto& x : r.trials)
      if (x.strategy == s.strategy && x.repeat == rep && x.fraction >= 0.95 - 1e-12) {
        first = x.trial;
        break;
      }
    e << first << "\n";
  }
}

// The plots' data per strategy, plots.gp, and gnuplot run on it; a warning
// in `plot_warning` when gnuplot fails.
void write_plots(const CompareResult& r, const CompareOptions& options, const std::filesystem::path& dir,
                 std::string* plot_warning) {
  // Plot data: per strategy, median and quartiles of the fraction per trial;
  // evaluations to 95% per seed (budget + 1 when never reached).
  std::string bsf_plot, box_plot, xtics, time_plot;
  double longest = 0;
  for (const auto& x : r.trials) longest = std::max(longest, x.elapsed_s);
  int idx = 0;
  for (const auto& s : r.summary) {
    ++idx;
    const std::string stem = "plot_" + s.strategy;
    write_plot_data(r, options, dir, s, stem, longest);
    const std::string sep = bsf_plot.empty() ? "" : ", \\\n     ";
    bsf_plot += fmt::format(
        "{}'{}_best_so_far.dat' using 1:3:4 with filledcurves fs transparent solid 0.18 lc {} notitle, \\\n"
        "     '{}_best_so_far.dat' using 1:2 with lines lw 2.5 lc {} title '{}'",
        sep, stem, idx, stem, idx, s.strategy);
    time_plot += fmt::format(
        "{}'{}_best_so_far_time.dat' using 1:3:4 with filledcurves fs transparent solid 0.18 lc {} notitle, \\\n"
        "     '{}_best_so_far_time.dat' using 1:2 with lines lw 2.5 lc {} title '{}'",
        sep, stem, idx, stem, idx, s.strategy);
    box_plot += fmt::format("{}'{}_evals95.dat' using ({}):1 with boxplot lc {} notitle", sep, stem, idx, idx);
    xtics += fmt::format("{}'{}' {}", xtics.empty() ? "" : ", ", s.strategy, idx);
  }
  std::ofstream gp(dir / "plots.gp");
  gp << "# Rendered by `autotune compare`; re-run with: gnuplot plots.gp\n"
     << "set terminal pngcairo size 1000,620 enhanced font 'Sans,11'\n"
     << "set output 'best_so_far.png'\n"
     << "set title 'Quality of the recommended configuration (median, quartile band)'\n"
     << "set xlabel 'trials'\nset ylabel 'fraction of the optimum'\n"
     << "set key bottom right\nset grid\nset yrange [*:1.02]\n"
     << fmt::format("set xrange [1:{}]\n", options.budget) << "plot " << bsf_plot << "\n\n"
     << "reset\nset output 'best_so_far_time.png'\n"
     << "set title 'Quality of the recommended configuration against the seconds spent (median, quartile band)'\n"
     << "set xlabel \"seconds (the trials' own, summed)\"\nset ylabel 'fraction of the optimum'\n"
     << "set key bottom right\nset grid\nset yrange [*:1.02]\n"
     << "plot " << time_plot << "\n\n"
     << "reset\nset output 'evals_to_95.png'\n"
     << "set title 'Trials until the recommendation reaches 95% of the optimum'\n"
     << fmt::format("set ylabel 'trials ({} = never)'\n", options.budget + 1)
     << "set style fill solid 0.3\nset style boxplot outliers pointtype 7\nset boxwidth 0.5\nset grid y\n"
     << fmt::format("set xtics ({})\nset xrange [0.3:{}.7]\nset yrange [0:{}]\n", xtics, idx, options.budget + 3)
     << "plot " << box_plot << "\n";
  gp.close();
  const std::string cmd = "cd '" + dir.string() + "' && gnuplot plots.gp 2>gnuplot.log";
  if (std::system(cmd.c_str()) != 0 && plot_warning)
    *plot_warning = "gnuplot failed or is not installed (see " + (dir / "gnuplot.log").string() +
                    "); the data and plots.gp are written";
}

}  // namespace

std::string write_compare_report(const CompareResult& r, const CompareOptions& options,
                                 const std::filesystem::path& dir, std::string* plot_warning) {
  std::filesystem::create_directories(dir);
  write_trials_csv(r, options, dir);
  const std::string md = write_summary(r, options, dir);
  write_plots(r, options, dir, plot_warning);
  return md;
}

}  // namespace autotune
