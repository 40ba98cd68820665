#pragma once
// The measurements after the search, as trial sources the Driver runs like
// the search itself (tuner/run/driver.hpp): the confirmations
// (search.confirm), the explanation (search.explain) and the side-by-side
// pairs (search.remeasure). Each proposes one trial at a time, waits for it,
// and files it in the study; the driver's observers journal it. An
// interrupt ends a source where it is (Driver::run says `interrupted`), and
// what was measured stays in the study.
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "core/space.hpp"
#include "tuner/record/study.hpp"
#include "tuner/run/driver.hpp"

namespace autotune {

// search.confirm: each of `candidates` measured once more, in order; a
// candidate the study already holds a confirmation of (a resumed run) is not
// measured again. `told(record, i, n)` is called for each, measured or held,
// in the candidates' order. `seed_of` gives a confirmation's noise seed
// (none: the trial number).
class ConfirmSource final : public TrialSource {
 public:
  using Told = std::function<void(const TrialRecord&, int i, int n)>;
  using SeedOf = std::function<std::optional<std::uint64_t>(const Config&)>;
  ConfirmSource(Study& study, std::vector<Config> candidates, Told told, SeedOf seed_of = {});
  std::optional<Proposal> next() override;
  void tell(const Finished& f) override;

 private:
  Study& m_study;
  std::vector<Config> m_candidates;
  Told m_told;
  SeedOf m_seed_of;
  std::size_t m_next = 0;
  bool m_in_flight = false;
};

// search.explain: the answer with each knob it moved put back
// (tuner/record/explain.hpp), then the answer with all of those worth less
// than the noise put back, each measured where no earlier measurement
// serves. The rule itself is explain_answer's: it is tried on a copy of the
// study, and the first measurement it lacks is proposed; once it lacks none,
// it is applied to the study. After an interrupt, finish() applies it with
// what was measured.
class ExplainSource final : public TrialSource {
 public:
  using Told = std::function<void(const TrialRecord&)>;
  ExplainSource(Study& study, const SearchSpace& space, Told told);
  std::optional<Proposal> next() override;
  void tell(const Finished& f) override;
  // Applies the explanation with the measurements at hand (those missing
  // read "not measured").
  void finish();

 private:
  Study& m_study;
  const SearchSpace& m_space;
  Told m_told;
  bool m_in_flight = false;
};

// search.remeasure: the baseline and the answer measured again side by side
// in pairs, in ABBA order (baseline then answer, then answer then baseline,
// ...) so that a steady drift weighs on both alike, until the 90% interval
// of their ratio is within +-5% (three pairs at least) or `max_pairs` are
// measured; pairs already in the study count (--resume). Before each pair,
// `before_pair()` may hold it for a quiet machine; it returns false once
// the load is taken as lasting (then it is not asked again). `told(record,
// which, done, of)`: which is "baseline" or "answer".
class PairsSource final : public TrialSource {
 public:
  using Told = std::function<void(const TrialRecord&, const char* which, int done, int of)>;
  PairsSource(Study& study, int max_pairs, std::function<bool()> before_pair, Told told);
  std::optional<Proposal> next() override;
  void tell(const Finished& f) override;
  // Whether no more pairs are wanted: the interval is narrow enough, the
  // cap is reached, or a pair failed.
  bool settled() const;

 private:
  std::size_t pairs_done() const;
  Study& m_study;
  int m_max_pairs;
  std::function<bool()> m_before_pair;
  Told m_told;
  bool m_load_lasts = false;
  bool m_in_flight = false;
};

}  // namespace autotune
