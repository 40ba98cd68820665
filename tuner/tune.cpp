#include "tuner/tune.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <deque>
#include <map>
#include <ostream>

#include <fmt/format.h>

#include "search/strategy.hpp"
#include "tuner/interrupt.hpp"
#include "tuner/journal.hpp"
#include "tuner/slots.hpp"
#include "workloads/failure_reading.hpp"

namespace autotune {
namespace {

using Clock = std::chrono::steady_clock;

std::string format_duration(double s) {
  if (s < 60) return fmt::format("{:.0f}s", s);
  if (s < 3600) return fmt::format("{:.0f}m{:02.0f}s", std::floor(s / 60), std::fmod(s, 60));
  return fmt::format("{:.0f}h{:02.0f}m", std::floor(s / 3600), std::fmod(s / 60, 60));
}

// "  <first line of a failure's reason>", cut to a readable length.
std::string reason_suffix(const Outcome& o) {
  if (o.ok() || o.reason.empty()) return {};
  std::string line(first_line(o.reason));
  if (line.size() > 200) line = line.substr(0, 197) + "...";
  return "  " + line;
}

class Progress {
 public:
  Progress(const TuneOptions& opt, int budget) : m_out(opt.progress), m_live(opt.live), m_budget(budget) {}

  void trial(const TrialRecord& t, const std::optional<double>& best, double elapsed, int done) {
    if (!m_out) return;
    const std::string status(to_string(t.outcome.status));
    const std::string what = t.outcome.ok() ? fmt::format("{:.1f} samples/s", t.outcome.throughput) : status;
    std::string eta;
    if (m_budget > 0 && done > 0 && done < m_budget)
      eta = "  eta " + format_duration(elapsed / done * (m_budget - done));
    const std::string budget = m_budget > 0 ? fmt::format("/{}", m_budget) : "";
    const std::string best_s = best ? fmt::format("{:.1f}", *best) : "-";
    if (m_live) {
      *m_out << fmt::format("\r\033[Ktrial {}{}  {:8}  best {}  elapsed {}{}", done, budget, status, best_s,
                            format_duration(elapsed), eta)
             << std::flush;
    } else {
      // A failure's reason comes last, its first line only (the job's own
      // words: the trial's log folder has the whole output).
      *m_out << fmt::format("trial {}{}  {}{}  best {}  elapsed {}{}{}\n", done, budget, what,
                            t.replayed ? "  (from the journal)" : "", best_s, format_duration(elapsed), eta,
                            reason_suffix(t.outcome));
    }
    m_dirty = m_live;
  }
  // A re-measurement after the search (search.confirm).
  void confirm(const TrialRecord& t, double search_throughput, int i, int n, double elapsed) {
    if (!m_out) return;
    finish();
    const std::string what = t.outcome.ok() ? fmt::format("{:.1f} samples/s", t.outcome.throughput)
                                            : std::string(to_string(t.outcome.status));
    *m_out << fmt::format("confirm {}/{}  {}  (in the search {:.1f}){}  elapsed {}{}\n", i, n, what, search_throughput,
                          t.replayed ? "  (from the journal)" : "", format_duration(elapsed),
                          reason_suffix(t.outcome));
  }
  void finish() {
    if (m_out && m_dirty) *m_out << "\n";
    m_dirty = false;
  }

 private:
  std::ostream* m_out;
  bool m_live;
  int m_budget;
  bool m_dirty = false;
};

// A trial killed by our own Ctrl-C says nothing about its configuration: it
// is run again on --resume rather than recorded as a failure.
bool cut_short_by_interrupt(const Outcome& o) {
  return interrupted() && !o.ok() && (o.status == Status::timeout || o.status == Status::crash);
}

}  // namespace

Outcome apply_limits(Outcome o, const Limits& limits) {
  if (!o.ok()) return o;
  auto over = [&](const char* key, double limit, const char* name) {
    if (limit <= 0) return false;
    auto v = o.metric(key);
    if (!v || *v <= limit) return false;
    o.status = Status::invalid;
    o.reason = fmt::format("{} {} over the limit {}", name, format_bytes(*v), format_bytes(limit));
    return true;
  };
  if (!over("vram_bytes", limits.vram_bytes, "device memory")) over("ram_bytes", limits.ram_bytes, "host memory");
  return o;
}

namespace {
nlohmann::json initial_json(const Spec& spec) {
  nlohmann::json out = nlohmann::json::array();
  for (const Config& c : spec.search.initial) out.push_back(to_json(spec.space.to_assignment(c)));
  return out;
}
}  // namespace

nlohmann::json journal_header(const Spec& spec) {
  nlohmann::json params = nlohmann::json::array();
  for (const auto& p : spec.space.params()) {
    nlohmann::json values = nlohmann::json::array();
    for (const auto& v : p.values) values.push_back(to_string(v));
    params.push_back({{"name", p.name}, {"scale", std::string(to_string(p.scale))}, {"values", values}});
  }
  return {{"version", 1},
          {"space_hash", spec.space.hash()},
          {"spec_file", spec.file.string()},
          {"workload", spec.workload.kind},
          {"parameters", params},
          {"rules", spec.space.rules().rules()},
          {"strategy", spec.search.strategy},
          {"seed", spec.search.seed},
          {"budget", {{"trials", spec.search.budget_trials}, {"seconds", spec.search.budget_seconds}}},
          {"initial", initial_json(spec)},  // the baseline, for the report
          {"confirm", spec.search.confirm},
          {"limits", {{"vram_bytes", spec.limits.vram_bytes}, {"ram_bytes", spec.limits.ram_bytes}}}};
}

StrategyContext strategy_context(const SearchSpace& space, std::uint64_t seed, int budget,
                                 std::vector<Config> initial, const Limits& limits) {
  StrategyContext ctx;
  ctx.space = &space;
  ctx.seed = seed;
  ctx.budget = budget;
  ctx.initial = std::move(initial);
  ctx.vram_limit_bytes = limits.vram_bytes;
  ctx.ram_limit_bytes = limits.ram_bytes;
  return ctx;
}

TuneResult run_tuning(const Spec& spec, const MeasureFn& measure, const TuneOptions& options) {
  const SearchSpace& space = spec.space;
  auto strategy = make_strategy(spec.search.strategy,
                                strategy_context(space, spec.search.seed, spec.search.budget_trials,
                                                 spec.search.initial, spec.limits));

  TuneResult result;
  std::deque<Config> rerun;  // started before a crash, never finished
  double earlier_s = 0;
  int next_trial = 1;

  // Resume: replay finished trials through tell(); queue unfinished ones.
  const bool resuming = options.resume && std::filesystem::exists(spec.output.journal);
  if (resuming) {
    JournalContents j;
    try {
      j = read_journal(spec.output.journal);
    } catch (const JournalError& e) {
      throw TuneError(e.what());
    }
    if (j.header.value("space_hash", "") != space.hash())
      throw TuneError(spec.output.journal.string() + " records another search space (hash " +
                      j.header.value("space_hash", "?") + ", this spec " + space.hash() +
                      "); refusing to resume. Use another output path, or drop --resume to start anew.");
    for (const auto& t : j.trials) {
      next_trial = std::max(next_trial, t.trial + 1);
      auto c = space.from_assignment(t.config);
      if (!c) throw TuneError(spec.output.journal.string() + ": trial " + std::to_string(t.trial) +
                              " has a configuration outside this space");
      if (t.confirm) {  // never told: the strategy saw this configuration's search trial
        if (t.outcome) {
          earlier_s += t.outcome->seconds;
          result.confirmations.push_back({t.trial, *c, *t.outcome, true});
        }
        continue;
      }
      if (!t.outcome) {
        rerun.push_back(*c);
        continue;
      }
      strategy->tell(*c, *t.outcome);
      earlier_s += t.outcome->seconds;
      result.trials.push_back({t.trial, *c, *t.outcome, true});
    }
    // A configuration re-run after a crash must not also be finished already.
    std::erase_if(rerun, [&](const Config& c) {
      for (const auto& t : result.trials)
        if (t.config == c) return true;
      return false;
    });
  }
  JournalWriter journal(spec.output.journal, /*truncate=*/!resuming);
  if (!resuming) journal.header(journal_header(spec));

  const auto t0 = Clock::now();
  auto elapsed = [&] { return earlier_s + std::chrono::duration<double>(Clock::now() - t0).count(); };
  std::optional<double> best_so_far;
  auto note_best = [&](const Outcome& o) {
    if (o.ok() && (!best_so_far || o.throughput > *best_so_far)) best_so_far = o.throughput;
  };

  Progress progress(options, spec.search.budget_trials);
  int done = 0;
  for (const auto& t : result.trials) {  // the journal's trials, in order
    note_best(t.outcome);
    progress.trial(t, best_so_far, elapsed(), ++done);
  }

  // Up to `parallel` trials in flight, each measured on its own thread (a
  // process trial is a child of that thread). The strategy is only touched
  // here, on this thread: asked while others are pending, told as each
  // finishes, so a slow trial never holds up the others' slots.
  struct Done {
    int trial;
    int slot;
    Config config;
    Outcome outcome;
  };
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Done> finished;
  const int parallel = std::max(1, spec.search.parallel);
  std::vector<std::thread> workers(static_cast<std::size_t>(parallel));  // one per slot
  std::vector<bool> slot_busy(static_cast<std::size_t>(parallel), false);
  int in_flight = 0;
  int started = done;

  auto trial_context = [&](int trial, int slot) {
    TrialContext tctx;
    tctx.trial = trial;
    tctx.slot = slot;
    tctx.seed = spec.search.seed * 1000003ULL + static_cast<std::uint64_t>(trial);
    tctx.timeout_s = spec.workload.timeout_s;
    tctx.limits = spec.limits;
    // Absolute: a command trial runs in its own `cwd`, where a path relative
    // to the tuner's folder would point elsewhere.
    tctx.log_dir = std::filesystem::absolute(spec.output.journal).parent_path() /
                   (spec.output.journal.stem().string() + ".trials") / ("trial-" + std::to_string(trial));
    if (options.prepare_slot) options.prepare_slot(slot, tctx);
    return tctx;
  };
  // Never throws; labels what the trial had, for judging measurements taken side by side.
  auto measure_one = [&](const Assignment& a, const TrialContext& tctx) {
    const auto ts = Clock::now();
    Outcome o;
    try {
      o = measure(a, tctx);
    } catch (const std::exception& e) {
      o = Outcome::failure(Status::error, std::string("measurement threw: ") + e.what());
    }
    if (o.seconds <= 0) o.seconds = std::chrono::duration<double>(Clock::now() - ts).count();
    if (parallel > 1) o.labels["slot"] = std::to_string(tctx.slot);
    if (!tctx.cpus.empty()) o.labels["cpus"] = format_cpu_list(tctx.cpus);
    if (auto g = tctx.env.find("CUDA_VISIBLE_DEVICES"); g != tctx.env.end()) o.labels["gpus"] = g->second;
    return o;
  };

  auto launch = [&](const Config& c) {
    int slot = 0;
    while (slot_busy[static_cast<std::size_t>(slot)]) ++slot;
    slot_busy[static_cast<std::size_t>(slot)] = true;
    const int trial = next_trial++;
    const Assignment a = space.to_assignment(c);
    journal.started(trial, a, elapsed());
    const TrialContext tctx = trial_context(trial, slot);
    ++in_flight;
    ++started;
    auto& worker = workers[static_cast<std::size_t>(slot)];
    if (worker.joinable()) worker.join();  // the slot's previous trial has reported already
    worker = std::thread([&, c, a, tctx] {
      Outcome o = measure_one(a, tctx);
      std::lock_guard<std::mutex> lock(mu);
      finished.push_back({tctx.trial, tctx.slot, c, std::move(o)});
      cv.notify_all();
    });
  };

  result.stopped_by = "exhausted";
  bool stop_launching = false;
  while (true) {
    // Launch while there is a free slot and something to run.
    while (!stop_launching && in_flight < parallel) {
      if (interrupted()) {
        result.stopped_by = "interrupted";
        stop_launching = true;
      } else if (spec.search.budget_trials > 0 && started >= spec.search.budget_trials) {
        result.stopped_by = "budget";
        stop_launching = true;
      } else if (spec.search.budget_seconds > 0 && elapsed() >= spec.search.budget_seconds) {
        result.stopped_by = "time";
        stop_launching = true;
      } else {
        std::optional<Config> c;
        if (!rerun.empty()) {
          c = rerun.front();
          rerun.pop_front();
        } else {
          c = strategy->ask();
        }
        if (!c) {
          // Nothing to propose now: the strategy may be waiting on pending
          // trials (then ask again when one finishes), or it is exhausted.
          if (in_flight == 0) stop_launching = true;
          break;
        }
        launch(*c);
      }
    }
    if (in_flight == 0) break;

    Done d;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait_for(lock, std::chrono::milliseconds(100), [&] { return !finished.empty(); });
      if (finished.empty()) continue;  // look at the interrupt flag and the clock again
      d = std::move(finished.front());
      finished.pop_front();
    }
    --in_flight;
    slot_busy[static_cast<std::size_t>(d.slot)] = false;
    Outcome o = apply_limits(std::move(d.outcome), spec.limits);
    if (cut_short_by_interrupt(o)) {
      result.stopped_by = "interrupted";
      continue;
    }
    const Assignment a = space.to_assignment(d.config);
    journal.finished(d.trial, a, o, elapsed());
    strategy->tell(d.config, o);
    result.trials.push_back({d.trial, d.config, o, false});
    note_best(o);
    progress.trial(result.trials.back(), best_so_far, elapsed(), ++done);
  }
  for (auto& w : workers)
    if (w.joinable()) w.join();
  progress.finish();

  result.best = strategy->recommend();
  if (result.best)
    for (const auto& t : result.trials)
      if (t.config == *result.best && t.outcome.ok()) result.best_outcome = t.outcome;

  // search.confirm: re-measure the best few, one at a time, in slot 0; those
  // the journal already has (a resumed run) are not measured again.
  if (spec.search.confirm > 0 && result.stopped_by != "interrupted") {
    const std::vector<Config> candidates = confirm_candidates(result.trials, result.best, spec.search.confirm);
    const int n = static_cast<int>(candidates.size());
    auto search_throughput = [&](const Config& c) {
      for (const auto& t : result.trials)
        if (t.config == c && t.outcome.ok()) return t.outcome.throughput;
      return 0.0;
    };
    for (int i = 0; i < n; ++i) {
      const Config& c = candidates[static_cast<std::size_t>(i)];
      const auto have = std::find_if(result.confirmations.begin(), result.confirmations.end(),
                                     [&](const TrialRecord& t) { return t.config == c; });
      if (have != result.confirmations.end()) {
        progress.confirm(*have, search_throughput(c), i + 1, n, elapsed());
        continue;
      }
      if (interrupted()) {
        result.stopped_by = "interrupted";
        break;
      }
      const int trial = next_trial++;
      const Assignment a = space.to_assignment(c);
      journal.started(trial, a, elapsed(), /*confirm=*/true);
      Outcome o = apply_limits(measure_one(a, trial_context(trial, 0)), spec.limits);
      if (cut_short_by_interrupt(o)) {
        result.stopped_by = "interrupted";
        break;
      }
      journal.finished(trial, a, o, elapsed(), /*confirm=*/true);
      result.confirmations.push_back({trial, c, o, false});
      progress.confirm(result.confirmations.back(), search_throughput(c), i + 1, n, elapsed());
    }
    choose_confirmed(candidates, result);
  }
  result.elapsed_s = elapsed();
  if (!spec.search.initial.empty())
    for (const auto& t : result.trials)
      if (t.config == spec.search.initial.front()) result.baseline = t;
  return result;
}

}  // namespace autotune
