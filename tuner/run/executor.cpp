#include "tuner/run/executor.hpp"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include <fmt/format.h>

namespace autotune {
namespace {

using Clock = std::chrono::steady_clock;

class PoolExecutor final : public Executor {
 public:
  PoolExecutor(MeasureFn measure, std::vector<Slot> slots, std::string summary)
      : m_measure(std::move(measure)),
        m_slots(std::move(slots)),
        m_summary(std::move(summary)),
        m_busy(m_slots.size(), false),
        m_threads(m_slots.size()),
        m_stop(std::make_shared<std::atomic<bool>>(false)) {}
  ~PoolExecutor() override { stop_all(); }

  int capacity() const override { return static_cast<int>(m_slots.size()); }

  void submit(int ticket, const Assignment& config, TrialContext ctx) override {
    std::size_t slot = 0;
    {
      std::lock_guard<std::mutex> lock(m_mu);
      while (slot < m_busy.size() && m_busy[slot]) ++slot;
      if (slot == m_busy.size()) throw std::logic_error("submit() with every slot busy");
      m_busy[slot] = true;
    }
    const Slot& s = m_slots[slot];
    ctx.slot = static_cast<int>(slot);
    ctx.started = Clock::now();  // the slot takes it now: startup_seconds counts from here
    ctx.env.insert(s.env.begin(), s.env.end());
    if (!s.cpus.empty()) ctx.cpus = s.cpus;
    ctx.stop = m_stop;
    auto& thread = m_threads[slot];
    if (thread.joinable()) thread.join();  // the slot's previous measurement has reported already
    thread = std::thread([this, ticket, config, ctx = std::move(ctx), slot] {
      Outcome o = measure_safely(config, ctx);
      std::lock_guard<std::mutex> lock(m_mu);
      m_busy[slot] = false;
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
    for (auto& t : m_threads)
      if (t.joinable()) t.join();
    std::lock_guard<std::mutex> lock(m_mu);
    m_done.clear();
    m_stop->store(false);  // the next submit starts afresh
  }

  const std::string& summary() const override { return m_summary; }

 private:
  // Never throws; labels what the measurement had, for judging measurements
  // taken side by side.
  Outcome measure_safely(const Assignment& config, const TrialContext& ctx) {
    const auto t0 = Clock::now();
    Outcome o;
    try {
      o = m_measure(config, ctx);
    } catch (const std::exception& e) {
      o = Outcome::failure(Status::error, std::string("measurement threw: ") + e.what());
    } catch (...) {
      o = Outcome::failure(Status::error, "measurement threw a non-standard exception");
    }
    if (o.seconds <= 0) o.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (m_slots.size() > 1) o.labels["slot"] = std::to_string(ctx.slot);
    if (!ctx.cpus.empty()) o.labels["cpus"] = format_cpu_list(ctx.cpus);
    if (auto g = ctx.env.find("CUDA_VISIBLE_DEVICES"); g != ctx.env.end()) o.labels["gpus"] = g->second;
    return o;
  }

  MeasureFn m_measure;
  std::vector<Slot> m_slots;
  std::string m_summary;
  std::mutex m_mu;
  std::condition_variable m_cv;
  std::vector<bool> m_busy;
  std::vector<std::thread> m_threads;
  std::deque<FinishedRun> m_done;
  std::shared_ptr<std::atomic<bool>> m_stop;
};

}  // namespace

std::unique_ptr<Executor> make_pool_executor(MeasureFn measure, std::vector<Slot> slots, std::string summary) {
  if (slots.empty()) slots.resize(1);
  return std::make_unique<PoolExecutor>(std::move(measure), std::move(slots), std::move(summary));
}

std::unique_ptr<Executor> make_local_executor(MeasureFn measure, const SlotPlan& plan) {
  return make_pool_executor(std::move(measure), plan.slots, plan.summary);
}

std::unique_ptr<Executor> make_local_executor(MeasureFn measure, int n) {
  return make_pool_executor(std::move(measure), std::vector<Slot>(static_cast<std::size_t>(std::max(1, n))),
                            fmt::format("{} slot{}", std::max(1, n), n > 1 ? "s" : ""));
}

}  // namespace autotune
