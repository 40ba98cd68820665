#include "tuner/run/after_search.hpp"

#include <algorithm>
#include <cmath>

#include "tuner/record/explain.hpp"

namespace autotune {

ConfirmSource::ConfirmSource(Study& study, std::vector<Config> candidates, Told told, SeedOf seed_of)
    : m_study(study), m_candidates(std::move(candidates)), m_told(std::move(told)), m_seed_of(std::move(seed_of)) {}

std::optional<Proposal> ConfirmSource::next() {
  if (m_in_flight) return std::nullopt;
  const int n = static_cast<int>(m_candidates.size());
  for (; m_next < m_candidates.size(); ++m_next) {
    const Config& c = m_candidates[m_next];
    const auto have = std::find_if(m_study.confirmations.begin(), m_study.confirmations.end(),
                                   [&](const TrialRecord& t) { return t.config == c; });
    if (have == m_study.confirmations.end()) {
      m_in_flight = true;
      return Proposal{c, "", Phase::confirm, m_seed_of ? m_seed_of(c) : std::nullopt};
    }
    if (m_told) m_told(*have, static_cast<int>(m_next) + 1, n);
  }
  return std::nullopt;
}

void ConfirmSource::tell(const Finished& f) {
  m_in_flight = false;
  m_study.add(f.trial, f.proposal.config, Phase::confirm, f.outcome);
  if (m_told) m_told(m_study.confirmations.back(), static_cast<int>(m_next) + 1, static_cast<int>(m_candidates.size()));
  ++m_next;
}

ExplainSource::ExplainSource(Study& study, const SearchSpace& space, Told told)
    : m_study(study), m_space(space), m_told(std::move(told)) {}

std::optional<Proposal> ExplainSource::next() {
  if (m_in_flight) return std::nullopt;
  // The rule tried on a copy: the first configuration it asks for that has
  // no measurement yet is the next trial.
  Study attempt = m_study;
  std::optional<Config> lacking;
  explain_answer(attempt, m_space, [&](const Config& c) -> std::optional<Outcome> {
    if (auto o = earlier_measurement(m_study, c)) return o;
    if (!lacking) lacking = c;
    return std::nullopt;
  });
  if (!lacking) {
    m_study = std::move(attempt);  // nothing lacking: the explanation as it stands
    return std::nullopt;
  }
  m_in_flight = true;
  return Proposal{*lacking, "explain", Phase::explain};
}

void ExplainSource::tell(const Finished& f) {
  m_in_flight = false;
  m_study.add(f.trial, f.proposal.config, Phase::explain, f.outcome);
  if (m_told) m_told(m_study.explanations.back());
}

void ExplainSource::finish() {
  explain_answer(m_study, m_space, [&](const Config& c) { return earlier_measurement(m_study, c); });
}

PairsSource::PairsSource(Study& study, int max_pairs, std::function<bool()> before_pair, Told told)
    : m_study(study), m_max_pairs(max_pairs), m_before_pair(std::move(before_pair)), m_told(std::move(told)) {}

std::size_t PairsSource::pairs_done() const {
  return std::min(m_study.baseline_again.size(), m_study.answer_again.size());
}

bool PairsSource::settled() const {
  constexpr int kMinPairs = 3;
  const double target = std::log(1.05);
  const std::size_t n = pairs_done();
  if (static_cast<int>(n) >= m_max_pairs) return true;
  const auto logs = paired_log_ratios(m_study);
  if (!logs) return true;  // a pair that failed ends them
  if (static_cast<int>(n) < std::min(kMinPairs, m_max_pairs)) return false;
  const auto h = paired_half_width(*logs);
  return h && *h <= target;
}

std::optional<Proposal> PairsSource::next() {
  if (m_in_flight || !m_study.baseline || !m_study.best || settled()) return std::nullopt;
  // Half a pair measured: its other half; else pair 0, 2, ... starts with
  // the baseline, pair 1, 3, ... with the answer.
  const std::size_t nb = m_study.baseline_again.size(), na = m_study.answer_again.size();
  if (nb == na && !m_load_lasts && m_before_pair) m_load_lasts = !m_before_pair();
  const bool of_baseline = nb != na ? nb < na : pairs_done() % 2 == 0;
  m_in_flight = true;
  return Proposal{of_baseline ? m_study.baseline->config : *m_study.best, "",
                  of_baseline ? Phase::remeasure_baseline : Phase::remeasure_answer};
}

void PairsSource::tell(const Finished& f) {
  m_in_flight = false;
  const bool of_baseline = f.proposal.phase == Phase::remeasure_baseline;
  m_study.add(f.trial, f.proposal.config, f.proposal.phase, f.outcome);
  const int done = static_cast<int>(m_study.baseline_again.size() + m_study.answer_again.size());
  if (m_told)
    m_told(of_baseline ? m_study.baseline_again.back() : m_study.answer_again.back(),
           of_baseline ? "baseline" : "answer", done, 2 * m_max_pairs);
}

}  // namespace autotune
