#include "tuner/record/same_training.hpp"

#include <fmt/format.h>

namespace autotune {

std::optional<std::int64_t> effective_batch(const Assignment& a, std::int64_t ranks) {
  const Value* batch = a.find("batch_size");
  if (!batch || !is_int(*batch)) return std::nullopt;
  std::int64_t n = std::get<std::int64_t>(*batch);
  if (const Value* accum = a.find("grad_accum"); accum && is_int(*accum)) n *= std::get<std::int64_t>(*accum);
  return n * ranks;
}

TrainingChange training_change(const Assignment& baseline, const Assignment& answer, bool pinned,
                               std::int64_t ranks) {
  TrainingChange c;
  c.batch_before = effective_batch(baseline, ranks);
  c.batch_after = effective_batch(answer, ranks);
  c.ranks = ranks;
  if (const Value* p = baseline.find("precision")) c.precision_before = to_string(*p);
  if (const Value* p = answer.find("precision")) c.precision_after = to_string(*p);
  c.pinned = pinned;
  return c;
}

std::optional<TrainingChange> training_change(const Spec& spec, const Study& r) {
  if (!r.baseline || !r.best) return std::nullopt;
  return training_change(spec.space.to_assignment(r.baseline->config), spec.space.to_assignment(*r.best),
                         spec.effective_batch.has_value(), spec.ranks);
}

std::vector<std::string> describe(const TrainingChange& c) {
  std::vector<std::string> out;
  if (c.batch_changed()) {
    const double ratio = static_cast<double>(*c.batch_after) / static_cast<double>(*c.batch_before);
    out.push_back(fmt::format(
        "effective batch {} -> {} ({:.3g}x the samples per optimizer step): a learning rate tuned for {} may need "
        "scaling; `constraints: {{effective_batch: {}}}` keeps it",
        *c.batch_before, *c.batch_after, ratio, *c.batch_before, *c.batch_before));
  } else if (c.batch_after) {
    out.push_back(fmt::format("effective batch {}, as the baseline's{}", *c.batch_after,
                              c.pinned ? " (constraints.effective_batch)" : ""));
  if (c.batch_after && c.ranks > 1) out.back() += fmt::format(" ({} ranks x batch_size x grad_accum)", c.ranks);
  }
  if (c.precision_changed())
    out.push_back(fmt::format("precision {} -> {}: a change of numerics, not only of speed", *c.precision_before,
                              *c.precision_after));
  return out;
}

}  // namespace autotune
