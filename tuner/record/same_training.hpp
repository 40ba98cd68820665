#pragma once
// What an answer changes of the training itself, against the baseline: the
// effective batch (batch_size x grad_accum: the samples per optimizer step)
// and the precision (the numerics). A user adopts a faster configuration
// when it trains the same model; these are the changes that may not.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/value.hpp"
#include "tuner/spec/spec.hpp"
#include "tuner/record/study.hpp"

namespace autotune {

// batch_size x grad_accum (grad_accum 1 when it is no knob) x the
// data-parallel ranks (constraints.ranks); none without batch_size.
std::optional<std::int64_t> effective_batch(const Assignment& a, std::int64_t ranks = 1);

struct TrainingChange {
  std::optional<std::int64_t> batch_before, batch_after;
  std::optional<std::string> precision_before, precision_after;
  bool pinned = false;  // constraints.effective_batch held every trial to it
  std::int64_t ranks = 1;  // data-parallel processes, each taking batch_size (constraints.ranks)
  bool batch_changed() const { return batch_before && batch_after && *batch_before != *batch_after; }
  bool precision_changed() const {
    return precision_before && precision_after && *precision_before != *precision_after;
  }
};

TrainingChange training_change(const Assignment& baseline, const Assignment& answer, bool pinned,
                               std::int64_t ranks = 1);

// The study's answer against its baseline, under the spec's pin and ranks;
// none without both.
std::optional<TrainingChange> training_change(const Spec& spec, const Study& r);

// One line each for the effective batch and, when it changed, the precision:
//   "effective batch 32 -> 256 (8x the samples per optimizer step): ..."
std::vector<std::string> describe(const TrainingChange& c);

}  // namespace autotune
