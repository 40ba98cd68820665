// The executor contract (tuner/run/executor.hpp), run over every registered
// kind that can run here and over a toy kind defined in this file: each
// trial's outcome comes back under its ticket, a failing trial is an outcome,
// capacity() trials run at once and a freed slot takes the next, stop_all()
// ends every running trial and drops what it reports, and an interrupt ends
// the Driver's run with nothing left running. The toy kind is added to the
// kinds as its line in tuner/run/executor_registry.cpp would add it: a new
// kind is its own code and one line. Trials are command trials (a shell
// script whose behaviour is a parameter); the slurm kind runs in a one-node
// cluster of the test's own (tests/slurm/cluster.sh), and skips with the
// reason where that cannot start.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <thread>
#include <vector>

#include "tests/support/proc_util.hpp"
#include "tests/support/shell.hpp"
#include "tests/support/test_dir.hpp"
#include "tuner/cli/cli_common.hpp"
#include "tuner/run/driver.hpp"
#include "tuner/run/executor_registry.hpp"
#include "tuner/run/interrupt.hpp"
#include "tuner/run/runner.hpp"

namespace autotune {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using autotune::testing::run_shell;

// ---- The toy kind: what its two files would hold. ----

// `lanes` trials at once, each on a thread of its own through a process
// runner; nothing placed. Written against the interface alone.
class ToyExecutor final : public Executor {
 public:
  ToyExecutor(Workload& w, int lanes) : m_runner(make_process_runner(w)), m_lanes(lanes) {}
  ~ToyExecutor() override { stop_all(); }

  int capacity() const override { return m_lanes; }

  void submit(int ticket, const Assignment& config, TrialContext ctx) override {
    ctx.stop = m_stop;
    ctx.started = Clock::now();
    std::lock_guard<std::mutex> lock(m_mu);
    m_threads.emplace_back([this, ticket, config, ctx = std::move(ctx)] {
      Outcome o = m_runner->once(config, ctx);  // never throws for a failed trial
      std::lock_guard<std::mutex> done_lock(m_mu);
      m_done.push_back({ticket, std::move(o)});
      m_cv.notify_all();
    });
  }

  std::optional<FinishedRun> wait_any(std::chrono::milliseconds wait) override {
    std::unique_lock<std::mutex> lock(m_mu);
    m_cv.wait_for(lock, wait, [&] { return !m_done.empty(); });
    if (m_done.empty()) return std::nullopt;
    FinishedRun r = std::move(m_done.front());
    m_done.pop_front();
    return r;
  }

  void stop_all() override {
    m_stop->store(true);
    std::vector<std::thread> threads;
    {
      std::lock_guard<std::mutex> lock(m_mu);
      threads.swap(m_threads);
    }
    for (auto& t : threads) t.join();
    std::lock_guard<std::mutex> lock(m_mu);
    m_done.clear();
    m_stop->store(false);
  }

  const std::string& summary() const override { return m_summary; }

 private:
  std::unique_ptr<TrialRunner> m_runner;
  int m_lanes;
  std::string m_summary = "toy lanes";
  std::mutex m_mu;
  std::condition_variable m_cv;
  std::vector<std::thread> m_threads;
  std::deque<FinishedRun> m_done;
  std::shared_ptr<std::atomic<bool>> m_stop = std::make_shared<std::atomic<bool>>(false);
};

ExecutorKind toy_executor_kind() {
  return {"toy",
          "threads on this machine, a child process per trial",
          {{"lanes", OptionType::integer, OptionValue{std::int64_t{2}}, "trials at once", {}, 1.0, 16.0}},
          [](const Options& o, const ExecutorEnv& env) -> std::unique_ptr<Executor> {
            return std::make_unique<ToyExecutor>(env.workload, static_cast<int>(o.get_int("lanes")));
          }};
}

// The registry as executor_registry.cpp reads with the toy's line added.
const ExecutorKinds& kinds_with_toy() {
  static const ExecutorKinds kinds = [] {
    ExecutorKinds k = executor_kinds();
    k.push_back(toy_executor_kind());
    return k;
  }();
  return kinds;
}

// ---- The contract. ----

constexpr int kSlots = 2;  // every kind is run with two trials at once

// The trial: `mode` says what it does; `meet` waits (for at most a minute)
// until kSlots trials have started, so it passes only when they run at once.
std::string trial_script(const fs::path& dir) {
  return "mode=$1; x=$2; dir=" + dir.string() +
         "\n"
         "case \"$mode\" in\n"
         "  ok) ;;\n"
         "  meet)\n"
         "    : > \"$dir/met.$x\"; n=0\n"
         "    while [ \"$(ls \"$dir\" | grep -c '^met\\.')\" -lt " +
         std::to_string(kSlots) +
         " ]; do\n"
         "      n=$((n + 1)); [ \"$n\" -gt 1200 ] && exit 7\n"
         "      sleep 0.05\n"
         "    done ;;\n"
         "  hang) echo $$ >> \"$dir/hung.pids\"; exec sleep 1000 ;;\n"
         "  crash) kill -SEGV $$ ;;\n"
         "  fail) echo 'loss is nan' >&2; exit 3 ;;\n"
         "esac\n"
         "echo \"{\\\"throughput\\\": $((100 * x))}\"\n";
}

// The spec's executor section for each kind; a kind not named here gets
// `{kind: <kind>}` with its defaults.
std::string executor_section(const std::string& kind) {
  if (kind == "slurm") return "{kind: slurm, cpus_per_trial: 1}";
  if (kind == "toy") return "{kind: toy, lanes: " + std::to_string(kSlots) + "}";
  return "{kind: " + kind + "}";
}

Assignment trial(const std::string& mode, std::int64_t x) {
  return Assignment({{"mode", Value{mode}}, {"x", Value{x}}});
}

std::vector<long> pids_in(const fs::path& file) {
  std::ifstream in(file);
  std::vector<long> out;
  for (long p; in >> p;) out.push_back(p);
  return out;
}

// Waits for the event, with a generous deadline.
template <class Pred>
bool within(double seconds, Pred pred) {
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  while (!pred()) {
    if (Clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

class ExecutorContract : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    clear_interrupt();
    // Short: the cluster's munge socket lives under it (108 bytes at most).
    static int made = 0;
    m_dir = fs::temp_directory_path() / ("autotune_exec_" + std::to_string(::getpid()) + "_" + std::to_string(++made));
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
    if (GetParam() == "slurm" && !enter_slurm_allocation()) return;
    std::ofstream(m_dir / "trial.sh") << trial_script(m_dir);
    std::ofstream(m_dir / "space.yaml")
        << "workload: {kind: command, command: \"sh " << (m_dir / "trial.sh").string()
        << " {mode} {x}\", timeout: 60s}\n"
        << "space:\n  mode: {values: [ok, meet, hang, crash, fail]}\n  x: {values: [1, 2, 3, 4, 5, 6]}\n"
        << "search: {strategy: grid, parallel: " << kSlots << "}\n"
        << "executor: " << executor_section(GetParam()) << "\n"
        << "output: {tuned: " << (m_dir / "tuned.yaml").string() << "}\n";
    SpecLoadResult r = load_spec_file(m_dir / "space.yaml", kinds_with_toy());
    ASSERT_TRUE(r.spec) << (r.errors.empty() ? "" : r.errors[0].format());
    m_spec = std::move(r.spec);
    m_workload = make_workload_or_report(*m_spec);
    ASSERT_TRUE(m_workload);
    try {
      m_executor = make_executor(*m_spec, *m_workload, kinds_with_toy());
    } catch (const std::runtime_error& e) {
      m_skip = "the " + GetParam() + " executor cannot run here: " + e.what();
    }
  }

  void TearDown() override {
    m_executor.reset();  // stops whatever still runs
    clear_interrupt();
    if (!m_job.empty()) run_shell(slurm("scancel " + m_job + " 2>&1"));
    if (!m_conf.empty()) {
      run_shell(std::string(AUTOTUNE_SOURCE_DIR) + "/tests/slurm/cluster.sh stop " + (m_dir / "cluster").string());
      ::unsetenv("SLURM_JOB_ID");
      ::unsetenv("SLURM_CONF");
    }
    std::error_code ec;
    fs::remove_all(m_dir, ec);
  }

  // The cluster started and an allocation of kSlots tasks made, entered as
  // a job's own processes are (SLURM_CONF, SLURM_JOB_ID); false with m_skip
  // set when it cannot be.
  bool enter_slurm_allocation() {
    const auto started = run_shell(std::string(AUTOTUNE_SOURCE_DIR) + "/tests/slurm/cluster.sh start " +
                                   (m_dir / "cluster").string() + " 2>&1");
    if (started.status != 0) {
      m_skip = "Slurm could not be started here: " + started.out;
      return false;
    }
    m_conf = (m_dir / "cluster" / "slurm.conf").string();
    const auto alloc = run_shell(slurm("salloc --no-shell -n " + std::to_string(kSlots) + " 2>&1"));
    std::smatch m;
    if (alloc.status != 0 || !std::regex_search(alloc.out, m, std::regex("allocation ([0-9]+)"))) {
      m_skip = "no Slurm allocation: " + alloc.out;
      return false;
    }
    m_job = m[1].str();
    ::setenv("SLURM_CONF", m_conf.c_str(), 1);
    ::setenv("SLURM_JOB_ID", m_job.c_str(), 1);
    return true;
  }
  std::string slurm(const std::string& cmd) const { return "SLURM_CONF=" + m_conf + " " + cmd; }

  TrialContext context(int trial) const { return make_trial_context(trial_settings(*m_spec), trial, trial); }

  // Every outcome of `n` submitted trials, by ticket, within a minute.
  std::map<int, Outcome> collect(int n) {
    std::map<int, Outcome> out;
    const auto end = Clock::now() + std::chrono::seconds(60);
    while (static_cast<int>(out.size()) < n && Clock::now() < end)
      if (auto f = m_executor->wait_any(std::chrono::milliseconds(200))) {
        EXPECT_EQ(out.count(f->ticket), 0u) << "ticket " << f->ticket << " came back twice";
        out[f->ticket] = std::move(f->outcome);
      }
    return out;
  }

  fs::path m_dir;
  std::string m_conf, m_job, m_skip;
  std::optional<Spec> m_spec;
  std::unique_ptr<Workload> m_workload;
  std::unique_ptr<Executor> m_executor;
};

TEST_P(ExecutorContract, EachOutcomeComesBackUnderItsTicketAndAFailingTrialIsAnOutcome) {
  if (!m_skip.empty()) GTEST_SKIP() << m_skip;
  ASSERT_EQ(m_executor->capacity(), kSlots);
  EXPECT_FALSE(m_executor->summary().empty());
  // Tickets are the caller's: any numbers, not in order.
  const std::vector<std::pair<int, Assignment>> trials = {
      {41, trial("ok", 1)}, {7, trial("crash", 2)}, {19, trial("ok", 3)}, {3, trial("fail", 4)}, {60, trial("ok", 5)}};
  std::map<int, Outcome> done;
  std::size_t next = 0;
  int running = 0;
  const auto end = Clock::now() + std::chrono::seconds(90);
  while (done.size() < trials.size() && Clock::now() < end) {
    // The caller keeps no more than capacity() running.
    for (; next < trials.size() && running < m_executor->capacity(); ++next, ++running)
      m_executor->submit(trials[next].first, trials[next].second, context(static_cast<int>(next) + 1));
    if (auto f = m_executor->wait_any(std::chrono::milliseconds(200))) {
      EXPECT_EQ(done.count(f->ticket), 0u) << "ticket " << f->ticket << " came back twice";
      done[f->ticket] = std::move(f->outcome);
      --running;
    }
  }
  ASSERT_EQ(done.size(), trials.size());
  for (int t : {41, 19, 60}) {
    EXPECT_EQ(done[t].status, Status::ok) << t << ": " << done[t].reason;
    EXPECT_GT(done[t].seconds, 0);
  }
  EXPECT_DOUBLE_EQ(done[41].throughput, 100);
  EXPECT_DOUBLE_EQ(done[19].throughput, 300);
  EXPECT_DOUBLE_EQ(done[60].throughput, 500);
  EXPECT_EQ(done[7].status, Status::crash) << done[7].reason;
  EXPECT_EQ(done[3].status, Status::error) << done[3].reason;
  EXPECT_FALSE(m_executor->wait_any(std::chrono::milliseconds(50))) << "nothing more than was submitted";
}

TEST_P(ExecutorContract, CapacityTrialsRunAtOnceAndAFreedSlotTakesTheNext) {
  if (!m_skip.empty()) GTEST_SKIP() << m_skip;
  // Each `meet` trial finishes ok only once all kSlots have started.
  for (int i = 1; i <= kSlots; ++i) m_executor->submit(i, trial("meet", i), context(i));
  auto met = collect(kSlots);
  ASSERT_EQ(met.size(), static_cast<std::size_t>(kSlots));
  for (auto& [ticket, o] : met) EXPECT_EQ(o.status, Status::ok) << ticket << ": " << o.reason;
  // The slots are free again: the next trials run in them.
  for (int i = 1; i <= kSlots; ++i) m_executor->submit(10 + i, trial("ok", i), context(kSlots + i));
  auto next = collect(kSlots);
  ASSERT_EQ(next.size(), static_cast<std::size_t>(kSlots));
  for (int i = 1; i <= kSlots; ++i) EXPECT_DOUBLE_EQ(next[10 + i].throughput, 100.0 * i) << next[10 + i].reason;
}

TEST_P(ExecutorContract, StopAllEndsEveryRunningTrialAndDropsWhatTheyReport) {
  if (!m_skip.empty()) GTEST_SKIP() << m_skip;
  for (int i = 1; i <= kSlots; ++i) m_executor->submit(i, trial("hang", i), context(i));
  ASSERT_TRUE(within(60, [&] { return pids_in(m_dir / "hung.pids").size() == static_cast<std::size_t>(kSlots); }))
      << "the hanging trials did not start";
  const auto t0 = Clock::now();
  m_executor->stop_all();
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 30.0) << "stop_all waits for each, promptly";
  for (long pid : pids_in(m_dir / "hung.pids"))
    EXPECT_TRUE(autotune::testing::gone_within(pid, 30)) << "trial process " << pid << " still runs";
  EXPECT_FALSE(m_executor->wait_any(std::chrono::milliseconds(300))) << "what a stopped trial reports is dropped";
  m_executor->stop_all();  // safe twice
}

// Trials from a list, in order.
class ListSource final : public TrialSource {
 public:
  ListSource(const SearchSpace& space, const std::vector<Assignment>& trials) {
    for (const auto& a : trials) m_left.push_back(*space.from_assignment(a));
  }
  std::optional<Proposal> next() override {
    if (m_left.empty()) return std::nullopt;
    Proposal p{m_left.front(), "list"};
    m_left.pop_front();
    return p;
  }

 private:
  std::deque<Config> m_left;
};

class Seen final : public TrialObserver {
 public:
  void started(int trial, const Proposal&, const Assignment&) override { starts.push_back(trial); }
  void finished(const Finished& f) override { finishes.push_back(f); }
  std::vector<int> starts;
  std::vector<Finished> finishes;
};

TEST_P(ExecutorContract, AnInterruptEndsTheDriversRunWithNothingLeftRunning) {
  if (!m_skip.empty()) GTEST_SKIP() << m_skip;
  Scheduler scheduler(*m_executor, trial_settings(*m_spec));
  Seen seen;
  Driver driver(scheduler, m_spec->space, {&seen});
  std::vector<Assignment> hangs;
  for (int i = 1; i <= 6; ++i) hangs.push_back(trial("hang", i));
  ListSource source(m_spec->space, hangs);
  // Ctrl-C once every slot's trial is running.
  std::jthread ctrl_c([&] {
    if (within(60, [&] { return pids_in(m_dir / "hung.pids").size() >= static_cast<std::size_t>(kSlots); }))
      request_interrupt();
  });
  const auto t0 = Clock::now();
  const RunEnd end = driver.run(source);
  ctrl_c.join();
  EXPECT_EQ(end, RunEnd::interrupted);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 90.0);
  EXPECT_EQ(seen.starts, (std::vector<int>{1, 2})) << "nothing starts after the interrupt";
  EXPECT_TRUE(seen.finishes.empty()) << "a trial the interrupt cut short is not an outcome of its configuration";
  EXPECT_EQ(driver.cut_short(), kSlots);
  EXPECT_EQ(scheduler.in_flight(), 0);
  for (long pid : pids_in(m_dir / "hung.pids"))
    EXPECT_TRUE(autotune::testing::gone_within(pid, 30)) << "trial process " << pid << " still runs";
}

std::vector<std::string> contract_kinds() { return executor_kind_names(kinds_with_toy()); }

INSTANTIATE_TEST_SUITE_P(EveryKind, ExecutorContract, ::testing::ValuesIn(contract_kinds()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// ---- The registry and the toy kind. ----

TEST(ExecutorKinds, EachDeclaresItsOptionsAndLoadsWithTheirDefaults) {
  ASSERT_FALSE(executor_kinds().empty());
  EXPECT_EQ(executor_kinds().front().kind, "local") << "the kind without an executor section comes first";
  for (const auto& k : executor_kinds()) {
    EXPECT_FALSE(k.summary.empty()) << k.kind;
    EXPECT_TRUE(k.make != nullptr) << k.kind;
    std::set<std::string> keys;
    for (const auto& o : k.options) {
      EXPECT_TRUE(keys.insert(o.key).second) << k.kind << ": " << o.key << " twice";
      EXPECT_NE(o.key, "kind") << k.kind;
      EXPECT_NE(o.key, "gpus") << k.kind << ": every kind reads gpus";
      EXPECT_FALSE(o.help.empty()) << k.kind << "." << o.key;
    }
    auto r = load_spec_text("workload: {kind: synthetic}\nspace:\n  batch_size: [16]\nexecutor: {kind: " + k.kind +
                                "}\n",
                            "t.yaml", "/base");
    ASSERT_TRUE(r.spec) << k.kind << ": " << (r.errors.empty() ? "" : r.errors[0].format());
    for (const auto& o : k.options)
      EXPECT_TRUE(r.spec->executor.options.has(o.key)) << k.kind << "." << o.key << " has no default";
  }
}

TEST(ToyExecutorKind, IsItsOwnCodeAndOneLineAndRunsTrialsThroughTheDriver) {
  const fs::path dir = autotune::testing::fresh_test_dir("executor_toy");
  std::ofstream(dir / "trial.sh") << trial_script(dir);
  const std::string head = "workload: {kind: command, command: \"sh " + (dir / "trial.sh").string() +
                           " {mode} {x}\", timeout: 60s}\n"
                           "space:\n  mode: {values: [ok, fail]}\n  x: {values: [1, 2, 3, 4, 5, 6]}\n"
                           "search: {strategy: grid}\n";
  // Without its line the kind is unknown, and the error lists the kinds there are.
  auto without = load_spec_text(head + "executor: {kind: toy, lanes: 3}\n", "t.yaml", dir);
  ASSERT_FALSE(without.spec);
  EXPECT_EQ(without.errors[0].format(),
            fmt::format("t.yaml:6:18: executor.kind: expected one of {}, found unknown kind 'toy'",
                        fmt::join(executor_kind_names(executor_kinds()), ", ")));
  // With it, its options are checked as the built-in kinds' are.
  auto typo = load_spec_text(head + "executor: {kind: toy, lane: 3}\n", "t.yaml", dir, kinds_with_toy());
  ASSERT_FALSE(typo.spec);
  EXPECT_EQ(typo.errors[0].format(),
            "t.yaml:6:23: executor.lane: expected an option of the toy executor (kind, gpus, lanes), found unknown "
            "key 'lane' (did you mean 'lanes'?)");
  auto r = load_spec_text(head + "executor: {kind: toy, lanes: 3}\n", "t.yaml", dir, kinds_with_toy());
  ASSERT_TRUE(r.spec) << r.errors[0].format();
  EXPECT_EQ(r.spec->executor.options.get_int("lanes"), 3);

  auto workload = make_workload_or_report(*r.spec);
  ASSERT_TRUE(workload);
  auto executor = make_executor(*r.spec, *workload, kinds_with_toy());
  EXPECT_EQ(executor->capacity(), 3);
  Scheduler scheduler(*executor, trial_settings(*r.spec));
  Seen seen;
  Driver driver(scheduler, r.spec->space, {&seen});
  std::vector<Assignment> trials;
  for (int i = 1; i <= 6; ++i) trials.push_back(trial(i == 4 ? "fail" : "ok", i));
  ListSource source(r.spec->space, trials);
  EXPECT_EQ(driver.run(source), RunEnd::exhausted);
  ASSERT_EQ(seen.finishes.size(), 6u);
  for (const auto& f : seen.finishes) {
    const auto x = f.config.get_int("x", 0);
    if (x == 4) {
      EXPECT_EQ(f.outcome.status, Status::error) << f.outcome.reason;
    } else {
      EXPECT_EQ(f.outcome.status, Status::ok) << f.outcome.reason;
      EXPECT_DOUBLE_EQ(f.outcome.throughput, 100.0 * static_cast<double>(x));
    }
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
}

// A wrong executor option is a located error, exit 2, nothing run, as a
// workload's is.
TEST(ExecutorKinds, AWrongOptionThroughTheBinaryIsLocatedAndExitsTwo) {
  const fs::path dir = autotune::testing::fresh_test_dir("executor_option");
  std::ofstream(dir / "space.yaml") << "workload: {kind: synthetic}\n"
                                       "space:\n  batch_size: [16, 32]\n"
                                       "executor: {kind: slurm, pin_cpus: false, mem_per_trial: lots}\n"
                                       "output: {tuned: "
                                    << (dir / "tuned.yaml").string() << "}\n";
  const auto r = autotune::testing::run_autotune("--config " + (dir / "space.yaml").string());
  EXPECT_EQ(r.status, 2) << r.out;
  const std::string file = (dir / "space.yaml").string();
  EXPECT_NE(r.out.find(file + ":4:25: executor.pin_cpus: expected an option of the slurm executor (kind, gpus, "
                              "gpus_per_trial, cpus_per_trial, mem_per_trial, srun_args), found unknown key "
                              "'pin_cpus' ('pin_cpus' is an option of the local executor)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(file + ":4:57: executor.mem_per_trial: expected a size"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir / "tuned.yaml"));
  EXPECT_FALSE(fs::exists(dir / "tuned.journal.jsonl"));
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace
}  // namespace autotune
