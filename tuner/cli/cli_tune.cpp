// The main job: `autotune [--config space.yaml] [overrides]`. Runs the search,
// journals every trial, writes tuned.yaml (also on Ctrl-C, with the best so far).
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/metric_names.hpp"
#include "core/text.hpp"
#include "search/strategy.hpp"
#include "tuner/cli/cli.hpp"
#include "tuner/cli/cli_commands.hpp"
#include "tuner/cli/cli_common.hpp"
#include "tuner/record/emitter.hpp"
#include "tuner/record/drift.hpp"
#include "tuner/record/explain.hpp"
#include "tuner/run/interrupt.hpp"
#include "tuner/run/machine_load.hpp"
#include "tuner/run/scheduler.hpp"
#include "tuner/record/journal.hpp"
#include "tuner/record/journal_lock.hpp"
#include "tuner/cli/output_paths.hpp"
#include "tuner/report/report_html.hpp"
#include "tuner/report/report_facts.hpp"
#include "tuner/record/same_training.hpp"
#include "tuner/record/setup_stop.hpp"
#include "tuner/cli/set_aside.hpp"
#include "tuner/record/time_split.hpp"
#include "tuner/record/tuning_time.hpp"

namespace autotune {
namespace {

struct TuneArgs {
  std::string config;
  Overrides overrides;
  bool resume = false;
  bool fresh = false;
  bool quiet = false;
  bool verbose = false;
  std::optional<std::string> report;  // --report [PATH]: "" means beside tuned.yaml
};

// The end of the run in words: "stopped by budget", "stopped: interrupted".
std::string how_it_stopped(RunEnd stopped_by) {
  const std::string name(run_end_name(stopped_by));
  if (stopped_by == RunEnd::budget || stopped_by == RunEnd::time) return "stopped by " + name;
  if (stopped_by == RunEnd::exhausted) return "stopped: every valid configuration was measured";
  if (stopped_by == RunEnd::failed) return "stopped: the tool failed";
  if (stopped_by == RunEnd::setup_failed) return "stopped: the set-up is broken";
  return "stopped: " + name;
}

// When the answer is not the fastest search trial (the figure the progress
// lines called best), why, unless another line of the summary says it.
std::string why_not_the_fastest(const Spec& spec, const Study& r) {
  const TrialRecord* fastest = nullptr;
  for (const auto& t : r.trials)
    if (t.outcome.ok() && (!fastest || t.outcome.throughput > fastest->outcome.throughput)) fastest = &t;
  if (!fastest || !r.best || fastest->config == *r.best) return {};
  if (r.nearer_than && r.nearer_than->config == fastest->config) return {};  // Occam's line says it
  for (const ConfirmRow& row : r.confirmed)
    if (row.config == fastest->config && !row.chosen)
      return fmt::format("trial {} measured {:.1f} samples/s once; measured again it did not hold up{}",
                         fastest->trial, fastest->outcome.throughput,
                         row.all_ok ? fmt::format(" (mean {:.1f}, below the chosen one's)", row.mean)
                                    : std::string(" (it failed)"));
  if (std::any_of(r.knobs.begin(), r.knobs.end(), [](const KnobRow& k) { return k.put_back; }))
    return fmt::format("trial {} measured {:.1f} samples/s; the knobs below that bought less than the noise, or "
                       "cost throughput, were put back to the baseline's",
                       fastest->trial, fastest->outcome.throughput);
  return fmt::format("trial {} measured {:.1f} samples/s ({}); the {} strategy recommends this one from all its "
                     "trials",
                     fastest->trial, fastest->outcome.throughput,
                     spec.space.to_assignment(fastest->config).describe(), spec.search.strategy);
}

// How busy the rest of the machine was while the trials ran, and the trials
// that shared it the most; empty when nothing was read.
std::string machine_line(const Study& r) {
  std::vector<std::pair<double, int>> foreign;  // (cores, trial)
  for (const auto* records :
       {&r.trials, &r.confirmations, &r.explanations, &r.baseline_again, &r.answer_again, &r.controls})
    for (const TrialRecord& t : *records)
      if (const auto f = t.outcome.get(metric::foreign_cores)) foreign.emplace_back(*f, t.trial);
  if (foreign.empty()) return {};
  double sum = 0;
  for (const auto& [f, t] : foreign) sum += f;
  const double mean = sum / static_cast<double>(foreign.size());
  std::sort(foreign.begin(), foreign.end(), std::greater<>());
  std::string line = fmt::format("other processes used {:.1f} of {} cores on average while trials ran", mean,
                                 usable_cores());
  std::string controls;
  if (!r.controls.empty()) {
    const double drift = largest_drift(r);
    controls = fmt::format("; the control measured again {} time{}{}", r.controls.size(),
                           r.controls.size() == 1 ? "" : "s",
                           drift > 0 ? fmt::format(", trials read against the nearest (drift up to {:.0f}%)", drift * 100)
                                     : std::string(", no drift beyond the noise"));
  }
  int gpu_trials = 0;
  double gpu_most = 0, gpu_bytes = 0;
  for (const TrialRecord& t : r.trials)
    if (const auto n = t.outcome.get(metric::foreign_gpu_processes); n && *n > 0) {
      ++gpu_trials;
      gpu_most = std::max(gpu_most, static_cast<double>(*n));
      gpu_bytes = std::max(gpu_bytes, t.outcome.get(metric::foreign_gpu_bytes).value_or(0));
    }
  if (gpu_trials > 0)
    controls += fmt::format("; other processes on the GPU during {} trial{} (up to {:.0f}, holding {})", gpu_trials,
                            gpu_trials == 1 ? "" : "s", gpu_most, format_bytes(gpu_bytes));
  if (const std::string busy = foreign_gpu_busy_words(r.trials); !busy.empty()) controls += "; " + busy;
  if (foreign.front().first < kBusyCores) return line + " (quiet)" + controls;
  std::string most;
  for (std::size_t i = 0; i < foreign.size() && i < 3 && foreign[i].first >= kBusyCores; ++i)
    most += fmt::format("{}trial {} ({:.1f})", most.empty() ? "" : ", ", foreign[i].second, foreign[i].first);
  return line + "; most beside: " + most + "; figures taken under load scatter" + controls;
}

// " (1.80-2.00x at 90%, 4 pairs)", or empty without an interval.
std::string interval_words(const Study::Speedup& x) {
  if (!x.low || !x.high) return {};
  return fmt::format(" ({:.2f}-{:.2f}x at 90%, {} pairs)", *x.low, *x.high, x.runs);
}

void print_summary(const Spec& spec, const Study& r) {
  std::cout << "\n";
  if (r.best && r.best_outcome) {
    std::cout << "best:   " << spec.space.to_assignment(*r.best).describe() << "\n";
    const Study::Shown shown = *r.shown();
    std::cout << fmt::format("        {:.1f} samples/s", shown.answer);
    if (shown.remeasured) std::cout << fmt::format(" (the median of {} side-by-side runs)", shown.runs);
    if (auto busy = r.best_outcome->get(metric::gpu_busy)) std::cout << fmt::format(", busy {:.0f}%", *busy * 100);
    std::cout << "\n";
    if (r.nearer_than && r.nearer_than->outcome.throughput > r.best_outcome->throughput)
      std::cout << fmt::format("        trial {} measured {:.1f} samples/s, within the noise of this one, which changes "
                               "fewer knobs from the baseline\n",
                               r.nearer_than->trial, r.nearer_than->outcome.throughput);
    if (const std::string why = why_not_the_fastest(spec, r); !why.empty()) std::cout << "        " << why << "\n";
    for (const ConfirmRow& row : r.confirmed)
      if (row.chosen && row.config == *r.best)
        std::cout << fmt::format("        as measured again; chosen on the mean of its {} runs ({:.1f}); {} of {} "
                                 "candidates held up\n",
                                 row.measurements.size(), row.mean,
                                 std::count_if(r.confirmed.begin(), r.confirmed.end(),
                                               [](const ConfirmRow& x) { return x.all_ok; }),
                                 r.confirmed.size());
    if (const auto x = r.speedup()) {
      if (x->remeasured && r.kept_baseline_over)
        std::cout << fmt::format("        the search's answer ({}) was not shown to be faster than the baseline: "
                                 "{:.2f}x{}, measured again side by side; the baseline is kept\n",
                                 spec.space.to_assignment(*r.kept_baseline_over).describe(), x->ratio,
                                 interval_words(*x));
      else if (x->remeasured)
        std::cout << fmt::format("        {:.2f}x the baseline{}, measured again side by side: {:.1f} against {:.1f} "
                                 "samples/s (medians of {} runs each, in pairs; baseline: {})\n",
                                 x->ratio, interval_words(*x), x->answer, x->baseline, x->runs,
                                 spec.space.to_assignment(r.baseline->config).describe());
      if (x->remeasured && r.pairs_overruled_occam)
        std::cout << "        the search's single runs could not tell it from the baseline (they scattered); the "
                     "side-by-side pairs show it faster\n";
      if (x->remeasured && x->others && *x->others >= kBusyCores)
        std::cout << fmt::format("        the pairs ran while other processes used {:.1f} of {} cores: the speedup "
                                 "is the one a machine that busy gives; on a quiet one it may differ\n",
                                 *x->others, usable_cores());
      if (!x->remeasured)
        std::cout << fmt::format("        {:.2f}x the baseline ({:.1f} samples/s: {})\n", x->ratio, x->baseline,
                                 spec.space.to_assignment(r.baseline->config).describe());
      for (std::size_t i = 0; i < r.knobs.size() && !r.kept_baseline_over; ++i)
        std::cout << (i == 0 ? "knobs:  " : "        ") << describe(r.knobs[i]) << "\n";
      for (const std::string& line : describe(*training_change(spec, r))) std::cout << "train:  " << line << "\n";
      // Why: where each one's time went, and what moved.
      const TimeSplit before = time_split(r.baseline->outcome), after = time_split(*r.best_outcome);
      std::vector<std::string> why;
      if (*r.best != r.baseline->config && before.known() && after.known())
        why = {"baseline " + describe(before), "answer   " + describe(after)};
      for (std::string& line : what_moved(r)) why.push_back(std::move(line));
      if (*r.best == r.baseline->config && after.known()) why.push_back(describe(after));
      if (const std::string ranks = rank_starved(r.baseline->outcome); !ranks.empty() && *r.best != r.baseline->config)
        why.push_back("baseline: " + ranks);
      if (const std::string ranks = rank_starved(*r.best_outcome); !ranks.empty())
        why.push_back((*r.best != r.baseline->config ? "answer: " : "") + ranks);
      for (std::size_t i = 0; i < why.size(); ++i) std::cout << (i == 0 ? "why:    " : "        ") << why[i] << "\n";
    } else if (const TimeSplit after = time_split(*r.best_outcome); after.known()) {
      std::cout << "        " << describe(after) << "\n";
    }
    if (const std::string cores = cores_warning(spec, *r.best); !cores.empty()) std::cout << "cores:  " << cores << "\n";
  } else {
    std::cout << "no configuration ran successfully\n";
  }
  std::map<Status, int> counts;
  for (const auto& t : r.trials) ++counts[t.outcome.status];
  std::string tally;
  for (Status s : kAllStatuses)
    if (counts[s]) tally += fmt::format("{}{} {}", tally.empty() ? "" : ", ", counts[s], to_string(s));
  const std::size_t again = r.baseline_again.size() + r.answer_again.size();
  std::cout << fmt::format("trials: {} ({}){}{}{}{} in {:.1f}s, {}\n", r.trials.size(), tally,
                           r.controls.empty() ? "" : fmt::format(" + {} of the control (drift)", r.controls.size()),
                           r.confirmations.empty() ? "" : fmt::format(" + {} confirmations", r.confirmations.size()),
                           r.explanations.empty() ? "" : fmt::format(" + {} to explain the answer", r.explanations.size()),
                           again == 0 ? "" : fmt::format(" + {} side by side", again), r.elapsed_s, how_it_stopped(r.stopped_by));
  const TuningTime time = tuning_time(r);
  if (time.total_s > 0) std::cout << "time:   " << describe(time) << "\n";
  if (const std::string machine = spec.search.busy == "ignore" ? "" : machine_line(r); !machine.empty()) std::cout << "machine: " << machine << "\n";
  std::cout << "wrote:  " << spec.output.tuned.string() << " and " << spec.output.journal.string() << "\n";
}

std::filesystem::path report_path(const std::string& given, const std::filesystem::path& tuned) {
  if (!given.empty()) return given;
  return std::filesystem::path(tuned).replace_extension(".report.html");
}

// The run's answer stands whatever becomes of its report: a failure here is a warning.
void write_report_or_warn(const std::filesystem::path& journal, const std::filesystem::path& out) {
  std::string warning;
  try {
    write_report(journal, out, &warning);
    std::cerr << "report: wrote " << out.string() << "\n";
  } catch (const std::exception& e) {
    warning = e.what();
  }
  if (!warning.empty()) std::cerr << "report: " << warning << "\n";
}

// The exact commands that carry on from the journal, or start afresh keeping it.
std::string resume_command() { return command_line_with("--resume", {"--resume", "--fresh"}); }
std::string fresh_command() { return command_line_with("--fresh", {"--resume", "--fresh"}); }

// A run stopped on a broken set-up: the cause, the fix, and the command
// that runs again once it is fixed (this run's journal, with no successful
// trial, is then set aside by itself: keep_earlier_run).
void say_setup_stop(const Spec& spec, const Study& r) {
  std::cerr << "autotune: stopped: " << describe_setup_stop(*r.setup_failure, spec.search.budget_trials) << "\n";
  for (const TrialRecord& t : r.trials)
    if (setup_failure_of(t.outcome)) {
      std::cerr << fmt::format("autotune: trial {} said: {} (its output: {})\n", t.trial, first_line(t.outcome.reason),
                               (trial_log_folder(spec.output.journal) / fmt::format("trial-{}", t.trial)).string());
      break;
    }
  std::cerr << "autotune: to fix: " << setup_fix(*r.setup_failure) << "\n"
            << fmt::format("autotune: then run again (this run's journal, with no successful trial, is set aside "
                           "by itself):\n  {}\n",
                           command_line_with("", {"--resume", "--fresh"}));
}

// Nothing measured is lost by running again: a journal that holds finished
// trials is resumed (--resume) or set aside whole (--fresh), never replaced.
// Returns false (after saying both ways on) when the run must not start.
bool keep_earlier_run(const Spec& spec, bool fresh) {
  const std::filesystem::path& journal = spec.output.journal;
  std::string held;
  std::error_code ec;
  if (!std::filesystem::exists(journal, ec) || std::filesystem::file_size(journal, ec) == 0) return true;
  try {
    const JournalTally n = tally_trials(journal);
    // A run that measured nothing (stopped in its first trial, or every
    // trial failed: a broken set-up) is moved aside, never truncated: its
    // trial logs may say why it failed.
    if (n.ok == 0) {
      if (n.finished > 0 && !fresh)
        std::cerr << fmt::format("autotune: {} holds no successful trial ({} failed): starting afresh\n",
                                 journal.string(), n.finished);
      fresh = true;
    }
    held = fmt::format("holds {} measured trial{} of an earlier run", n.finished, n.finished == 1 ? "" : "s");
    std::ifstream in(journal);
    std::string first;
    std::getline(in, first);
    const nlohmann::json header = nlohmann::json::parse(first, nullptr, /*allow_exceptions=*/false);
    if (!fresh && header.is_object())
      if (const auto change = workload_change(header, spec)) {
        std::cerr << fmt::format(
            "autotune: {} {}, measured with another workload ({}); nothing was started, nothing was changed.\n"
            "  start afresh, keeping it aside:    {}\n",
            journal.string(), held, *change, fresh_command());
        return false;
      }
  } catch (const JournalError& e) {
    held = fmt::format("exists and cannot be read as a journal ({})", e.what());
  }
  if (!fresh) {
    std::cerr << fmt::format(
        "autotune: {} {}; nothing was started, nothing was changed.\n"
        "  carry on with that run:            {}\n"
        "  start afresh, keeping it aside:    {}\n",
        journal.string(), held, resume_command(), fresh_command());
    return false;
  }
  for (const auto& [from, to] : set_aside({journal, trial_log_folder(journal), spec.output.tuned}))
    std::cerr << fmt::format("autotune: kept the earlier run's {} as {}\n", from.filename().string(), to.string());
  return true;
}

// Every path the run will write, checked before anything runs.
bool outputs_writable(const Spec& spec, const std::optional<std::string>& report) {
  std::vector<NamedPath> outputs = {{"tuned.yaml", spec.output.tuned},
                                    {"the journal", spec.output.journal},
                                    {"the trial logs", trial_log_folder(spec.output.journal), true},
                                    {"the journal's lock", journal_lock_path(spec.output.journal)}};
  if (report) outputs.push_back({"--report", report_path(*report, spec.output.tuned)});
  std::vector<NamedPath> inputs;
  if (!spec.file.empty() && spec.file != "<embedded>") inputs.push_back({"the spec", spec.file});
  const std::vector<std::string> problems = output_problems(outputs, inputs);
  for (const std::string& p : problems) std::cerr << "autotune: " << p << "\n";
  if (!problems.empty()) std::cerr << "autotune: nothing was started, nothing was changed\n";
  return problems.empty();
}

}  // namespace

std::function<int()> add_tune_options(CLI::App& app) {
  auto args = std::make_shared<TuneArgs>();
  app.add_option("config,--config,-c", args->config, "the space.yaml to tune (default: the embedded default)");
  app.add_option("--strategy", args->overrides.strategy,
                 fmt::format("override search.strategy ({})", fmt::join(strategy_names(), ", ")));
  app.add_option("--budget", args->overrides.budget, "override the budget: trials (40) or time (10m)");
  app.add_option("--seed", args->overrides.seed, "override search.seed (a non-negative integer)");
  app.add_option("--out,-o", args->overrides.out, "where to write tuned.yaml (the journal goes beside it)");
  app.add_option("--parallel", args->overrides.parallel, "trials in flight at once (search.parallel)");
  app.add_option("--confirm", args->overrides.confirm,
                 "after the search, measure the N best once more each and choose on all measurements (search.confirm)");
  app.add_option("--remeasure", args->overrides.remeasure,
                 "after the search, measure the baseline and the answer again side by side, N pairs at most; 0: not "
                 "(search.remeasure)");
  auto* resume = app.add_flag("--resume", args->resume, "continue from the journal without re-running finished trials");
  app.add_flag("--fresh", args->fresh,
               "start a new run; an earlier run's journal, trial logs and tuned.yaml are moved aside (NAME-1...), "
               "never deleted")
      ->excludes(resume);
  app.add_flag("--quiet,-q", args->quiet, "no progress output");
  app.add_flag("--verbose,-v", args->verbose, "also print the search's notes (model fits, fallbacks)");
  app.add_option("--report", args->report, "also write the run's HTML report at the end (default: beside tuned.yaml)")
      ->expected(0, 1);
  return [args]() -> int {
    auto spec = load_spec_or_report(args->config);
    if (!spec || !apply_overrides(*spec, args->overrides)) return kExitBadInput;
    auto workload = make_workload_or_report(*spec);
    if (!workload) return kExitBadInput;
    auto executor = make_executor_or_report(*spec, *workload, "autotune");
    if (!executor) return kExitBadInput;
    if (!outputs_writable(*spec, args->report)) return kExitBadInput;
    // Held until this command returns: the run owns its journal and trial logs.
    std::optional<JournalLock> lock;
    try {
      lock.emplace(spec->output.journal);
    } catch (const JournalLockedError& e) {
      std::cerr << "autotune: " << e.what() << "; nothing was started, nothing was changed.\n";
      return kExitBadInput;
    }
    if (!args->resume && !keep_earlier_run(*spec, args->fresh)) return kExitBadInput;

    install_interrupt_handler();
    TuneOptions opt;
    opt.resume = args->resume;
    opt.progress = args->quiet ? nullptr : &std::cerr;
    opt.live = !args->quiet && ::isatty(STDERR_FILENO);
    opt.verbose = args->verbose;
    if (!args->quiet) {
      std::cerr << fmt::format("autotune: {} on the {} workload, {} valid of {:.0f} configurations\n",
                               spec->search.strategy, spec->workload.kind,
                               [&] {
                                 auto all = spec->space.enumerate();
                                 return all ? std::to_string(all->size()) : std::string("many");
                               }(),
                               spec->space.cardinality());
      if (executor->capacity() > 1 || !spec->executor.gpus.empty())
        std::cerr << "autotune: " << executor->summary() << "\n";
    }
    if (!args->quiet && trial_settings(*spec).watch_machine && spec->search.busy != "ignore")
      if (const auto foreign = sample_foreign_cores(0.3); foreign && *foreign >= kBusyCores)
        std::cerr << fmt::format("autotune: the machine is busy: {:.1f} of {} cores used by other processes; "
                                 "measurements will scatter\n",
                                 *foreign, usable_cores());
    Study result;
    try {
      result = run_tuning(*spec, *executor, opt);
    } catch (const TuneError& e) {  // the journal given to --resume: nothing ran
      std::cerr << "autotune: " << e.what() << "\n"
                << "autotune: to start afresh, keeping that journal aside: " << fresh_command() << "\n";
      return kExitBadInput;
    }
    bool wrote = true;
    try {
      write_tuned_yaml(*spec, result, spec->output.tuned);
    } catch (const std::exception& e) {
      std::cerr << "autotune: " << e.what() << "\n";
      wrote = false;
    }
    if (!args->quiet && wrote) print_summary(*spec, result);
    if (args->report) write_report_or_warn(spec->output.journal, report_path(*args->report, spec->output.tuned));
    if (result.stopped_by == RunEnd::failed) {
      std::cerr << "autotune: stopped: " << result.failure << "\n"
                << fmt::format("autotune: the {} trials that finished are in {}; fix the cause and carry on with\n"
                               "  {}\n",
                               result.trials.size(), spec->output.journal.string(), resume_command());
      return kExitToolFailure;
    }
    if (result.stopped_by == RunEnd::setup_failed && result.setup_failure) {
      say_setup_stop(*spec, result);
      return kExitFailure;
    }
    if (result.stopped_by == RunEnd::interrupted)
      std::cerr << fmt::format("autotune: interrupted; the {} finished trials are kept in {}. Carry on with\n  {}\n",
                               result.trials.size() + result.confirmations.size(), spec->output.journal.string(),
                               resume_command());
    if (!wrote) return kExitToolFailure;
    if (result.stopped_by == RunEnd::interrupted) return kExitInterrupted;
    return result.best_outcome ? kExitOk : kExitFailure;
  };
}

}  // namespace autotune
