#include "tuner/run/driver.hpp"

#include <algorithm>
#include <chrono>

#include "tuner/run/interrupt.hpp"

namespace autotune {
namespace {
constexpr std::chrono::milliseconds kPoll{100};  // how often the interrupt flag and the clock are looked at
}  // namespace

Driver::Driver(Scheduler& scheduler, const SearchSpace& space, std::vector<TrialObserver*> observers,
               int first_trial)
    : m_scheduler(scheduler), m_space(space), m_observers(std::move(observers)), m_next_trial(first_trial) {}

void Driver::start(int trial, Proposal p) {
  const Assignment a = m_space.to_assignment(p.config);
  for (auto* o : m_observers) o->started(trial, p, a);
  m_scheduler.submit(trial, a, p.seed_key, p.stop_below);
  m_in_flight.emplace(trial, std::move(p));
}

// The finished trial with its proposal, or none when an interrupt cut it short.
std::optional<Finished> Driver::take(Scheduler::Done d) {
  auto it = m_in_flight.find(d.trial);
  Proposal p = std::move(it->second);
  m_in_flight.erase(it);
  if (cut_short_by_interrupt(d.outcome)) {
    ++m_cut_short;
    return std::nullopt;
  }
  Finished f{d.trial, std::move(p), std::move(d.config), std::move(d.outcome)};
  for (auto* o : m_observers) o->finished(f);
  return f;
}

RunEnd Driver::run(TrialSource& source) {
  RunEnd end = RunEnd::exhausted;
  try {
    // The source is only touched on this thread: asked while others are
    // pending, told as each finishes, so a slow trial never holds up the
    // others' slots.
    bool launching = true;
    while (true) {
      while (launching && m_scheduler.has_room()) {
        std::optional<RunEnd> why = interrupted() ? std::optional(RunEnd::interrupted) : source.stop_reason();
        if (why) {
          end = *why;
          launching = false;
          break;
        }
        auto p = source.next();
        if (!p) {
          // Nothing to propose now: the source may be waiting on pending
          // trials (then ask again when one finishes), or it is exhausted.
          if (m_scheduler.in_flight() == 0) launching = false;
          break;
        }
        start(m_next_trial++, std::move(*p));
      }
      if (m_scheduler.in_flight() == 0) break;
      auto d = m_scheduler.wait_any(kPoll);
      if (!d) continue;  // look at the interrupt flag and the clock again
      if (auto f = take(std::move(*d)))
        source.tell(*f);
      else
        end = RunEnd::interrupted;
    }
  } catch (...) {
    abandon();
    throw;
  }
  return end;
}

std::optional<Finished> Driver::measure_one(Proposal p) {
  if (interrupted()) return std::nullopt;
  try {
    const int trial = m_next_trial++;
    start(trial, std::move(p));
    return take(m_scheduler.wait_next());
  } catch (...) {
    abandon();
    throw;
  }
}

bool Driver::running(const Config& c) const {
  return std::any_of(m_in_flight.begin(), m_in_flight.end(), [&](const auto& kv) { return kv.second.config == c; });
}

void Driver::abandon() {
  m_scheduler.stop_all();
  m_in_flight.clear();
}

}  // namespace autotune
