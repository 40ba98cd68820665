#include "tuner/record/time_split.hpp"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "core/metric_names.hpp"

namespace autotune {

namespace {
constexpr double kLoaderBound = 0.5;  // waits more than it computes
constexpr double kPartly = 0.1;       // a tenth of the time lost to the loader is worth a look
constexpr double kStarvedGap = 0.05;  // one rank waited this share of its time more than another
constexpr double kPaceGap = 0.05;     // the fastest rank ran this much ahead of the slowest
}  // namespace

std::string TimeSplit::bound() const {
  if (!data_wait) return {};
  if (*data_wait > kLoaderBound) return "loader-bound";
  if (*data_wait >= kPartly) return "partly loader-bound";
  return "compute-bound";
}

TimeSplit time_split(const Outcome& o) {
  TimeSplit s;
  // The busy share as bo reads it (Outcome::busy), where it is a data wait.
  if (auto b = o.busy(); b && b->data_wait) s.data_wait = std::clamp(1.0 - b->share, 0.0, 1.0);
  if (s.data_wait) s.compute = 1.0 - *s.data_wait;
  if (auto g = o.get(metric::gpu_busy)) s.device_busy = std::clamp(*g, 0.0, 1.0);
  return s;
}

std::string describe(const TimeSplit& s) {
  if (!s.known()) return {};
  std::string out = fmt::format("waiting for data {:.0f}%, computing {:.0f}%", 100 * *s.data_wait, 100 * *s.compute);
  if (s.device_busy) out += fmt::format(", device busy {:.0f}%", 100 * *s.device_busy);
  return out + " (" + s.bound() + ")";
}

std::string explain_speedup(const TimeSplit& baseline, const TimeSplit& best) {
  if (!baseline.known() || !best.known()) return {};
  const double before = *baseline.data_wait, after = *best.data_wait;
  if (before > kPartly && after < before / 2)
    return fmt::format("the loader no longer starves the trainer: data wait fell from {:.0f}% to {:.0f}% of the time",
                       100 * before, 100 * after);
  if (after > kPartly && after > before * 1.5 + 0.05)
    return fmt::format("the answer computes so much faster that it now waits for data {:.0f}% of the time (was "
                       "{:.0f}%): more loader workers may pay off",
                       100 * after, 100 * before);
  if (after >= kPartly)
    return fmt::format("the loader is still the bottleneck (data wait {:.0f}% before, {:.0f}% after); the answer "
                       "moves more samples per second through it",
                       100 * before, 100 * after);
  return fmt::format("both are compute-bound (data wait {:.0f}% before, {:.0f}% after): the gain is in the step "
                     "itself (batch size, precision, accumulation)",
                     100 * before, 100 * after);
}

std::string rank_starved(const Outcome& o) {
  const auto world = o.get(metric::world_size);
  if (!world || *world < 2) return {};
  const long ranks = static_cast<long>(*world);
  std::string out;
  const auto most = o.get(metric::rank_data_wait_max);
  const auto who = o.get(metric::rank_waiting_most);
  if (most && who && *most >= kPartly) {
    std::optional<double> least;
    long least_rank = 0;
    for (long k = 0; k < ranks; ++k)
      if (auto w = o.metric(metric::rank_metric(k, "data_wait")); w && (!least || *w < *least)) {
        least = *w;
        least_rank = k;
      }
    if (least && *most - *least >= kStarvedGap)
      out = fmt::format("rank {} starved: it waited for data {:.0f}% of its time, rank {} {:.0f}%",
                        static_cast<long>(*who), 100 * *most, least_rank, 100 * *least);
  }
  const auto slow = o.get(metric::rank_pace_min), fast = o.get(metric::rank_pace_max);
  const auto slowest = o.get(metric::rank_slowest);
  if (slow && fast && slowest && *slow > 0 && *fast > *slow * (1 + kPaceGap))
    out += fmt::format("{}the job moves at its slowest rank's pace: rank {}, {:.1f} samples/s against up to {:.1f}",
                       out.empty() ? "" : "; ", static_cast<long>(*slowest), *slow, *fast);
  return out;
}

}  // namespace autotune
