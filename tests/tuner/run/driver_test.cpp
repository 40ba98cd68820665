// The trial driver on its own, over a fake source, observer and executor:
// it keeps every slot full, hands each finished trial to the observers and
// then to the source, stops every trial in flight when an observer throws,
// and ends as `interrupted` on an interrupt, starting nothing after it.
#include "tuner/run/driver.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <stdexcept>
#include <string>
#include <vector>

#include "tuner/run/interrupt.hpp"

namespace autotune {
namespace {

Value I(std::int64_t v) { return Value{v}; }

SearchSpace space() {
  return SearchSpace({{"x", {I(0), I(1), I(2), I(3), I(4), I(5), I(6), I(7), I(8), I(9)}, Scale::linear}});
}

// Runs nothing: each submitted measurement waits in a queue, and wait_any
// finishes the oldest one (throughput 100 + x, or what `outcome_of` says).
class FakeExecutor final : public Executor {
 public:
  explicit FakeExecutor(int capacity) : m_capacity(capacity) {}
  int capacity() const override { return m_capacity; }
  void submit(int ticket, const Assignment& config, TrialContext) override {
    m_queue.push_back({ticket, config});
    ++submitted;
    most_running = std::max(most_running, static_cast<int>(m_queue.size()));
  }
  std::optional<FinishedRun> wait_any(std::chrono::milliseconds) override {
    running_at_wait.push_back(static_cast<int>(m_queue.size()));
    if (m_queue.empty()) return std::nullopt;
    auto [ticket, config] = m_queue.front();
    m_queue.pop_front();
    Outcome o = outcome_of ? outcome_of(config) : Outcome::success(100.0 + static_cast<double>(config.get_int("x", 0)));
    return FinishedRun{ticket, o};
  }
  void stop_all() override {
    ++stopped;
    m_queue.clear();
  }
  const std::string& summary() const override { return m_summary; }

  std::function<Outcome(const Assignment&)> outcome_of;
  int submitted = 0, most_running = 0, stopped = 0;
  std::vector<int> running_at_wait;  // measurements in flight each time the driver waited

 private:
  int m_capacity;
  std::deque<std::pair<int, Assignment>> m_queue;
  std::string m_summary = "fake";
};

// Proposes x = 0, 1, ... up to `n` configurations.
class CountingSource final : public TrialSource {
 public:
  explicit CountingSource(int n) : m_n(n) {}
  std::optional<Proposal> next() override {
    if (m_next >= m_n) return std::nullopt;
    return Proposal{Config{static_cast<int>(m_next++ % 10)}, "count"};
  }
  void tell(const Finished& f) override { told.push_back(f.trial); }
  std::vector<int> told;

 private:
  int m_n, m_next = 0;
};

class Recorder final : public TrialObserver {
 public:
  void started(int trial, const Proposal&, const Assignment&) override { starts.push_back(trial); }
  void finished(const Finished& f) override {
    finishes.push_back(f.trial);
    if (on_finished) on_finished(f);
  }
  std::function<void(const Finished&)> on_finished;
  std::vector<int> starts, finishes;
};

class DriverTest : public ::testing::Test {
 protected:
  void SetUp() override { clear_interrupt(); }
  void TearDown() override { clear_interrupt(); }
  SearchSpace m_space = space();
};

TEST_F(DriverTest, KeepsEverySlotFullAndTellsObserversBeforeTheSource) {
  FakeExecutor executor(3);
  Scheduler scheduler(executor, TrialSettings{});
  Recorder recorder;
  CountingSource source(7);
  recorder.on_finished = [&](const Finished& f) {
    // The observers see a trial before the source is told of it.
    EXPECT_TRUE(source.told.empty() || source.told.back() < f.trial);
  };
  Driver driver(scheduler, m_space, {&recorder});
  EXPECT_EQ(driver.run(source), RunEnd::exhausted);
  EXPECT_EQ(executor.submitted, 7);
  EXPECT_EQ(executor.most_running, 3);
  // While the source had trials left (the first 5 waits), every slot was busy.
  ASSERT_GE(executor.running_at_wait.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(executor.running_at_wait[i], 3) << "wait " << i;
  EXPECT_EQ(recorder.starts, (std::vector<int>{1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(recorder.finishes, (std::vector<int>{1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(source.told, recorder.finishes);
  EXPECT_EQ(driver.next_trial(), 8);
}

TEST_F(DriverTest, AnObserverThatThrowsStopsEveryTrialInFlightAndReachesTheCaller) {
  FakeExecutor executor(3);
  Scheduler scheduler(executor, TrialSettings{});
  Recorder recorder;
  recorder.on_finished = [](const Finished& f) {
    if (f.trial == 2) throw std::runtime_error("the journal could not be written");
  };
  CountingSource source(10);
  Driver driver(scheduler, m_space, {&recorder});
  EXPECT_THROW(driver.run(source), std::runtime_error);
  EXPECT_EQ(executor.stopped, 1);
  EXPECT_EQ(source.told, std::vector<int>{1});  // trial 2 never reached the source
  EXPECT_EQ(scheduler.in_flight(), 0);
  EXPECT_FALSE(driver.running(Config{std::size_t{2}}));
}

TEST_F(DriverTest, AnInterruptEndsTheRunAndStartsNothingAfterIt) {
  FakeExecutor executor(2);
  Scheduler scheduler(executor, TrialSettings{});
  Recorder recorder;
  recorder.on_finished = [](const Finished& f) {
    if (f.trial == 3) request_interrupt();
  };
  CountingSource source(100);
  Driver driver(scheduler, m_space, {&recorder});
  EXPECT_EQ(driver.run(source), RunEnd::interrupted);
  // Trials 1-4 were started (two slots); none after the interrupt at trial 3's end.
  EXPECT_EQ(executor.submitted, 4);
  EXPECT_EQ(recorder.finishes, (std::vector<int>{1, 2, 3, 4}));
  // measure_one after an interrupt measures nothing.
  EXPECT_FALSE(driver.measure_one(Proposal{Config{std::size_t{0}}, ""}));
  EXPECT_EQ(executor.submitted, 4);
}

TEST_F(DriverTest, ATrialThatAnInterruptCutShortIsNeverShownToObservers) {
  FakeExecutor executor(1);
  executor.outcome_of = [](const Assignment& a) {
    if (a.get_int("x", 0) == 1) {
      request_interrupt();  // Ctrl-C while it ran: its process group was stopped
      return Outcome::failure(Status::crash, "killed by SIGINT");
    }
    return Outcome::success(100);
  };
  Scheduler scheduler(executor, TrialSettings{});
  Recorder recorder;
  CountingSource source(5);
  Driver driver(scheduler, m_space, {&recorder});
  EXPECT_EQ(driver.run(source), RunEnd::interrupted);
  EXPECT_EQ(recorder.finishes, std::vector<int>{1});
  EXPECT_EQ(driver.cut_short(), 1);
  EXPECT_EQ(source.told, std::vector<int>{1});
}

}  // namespace
}  // namespace autotune
