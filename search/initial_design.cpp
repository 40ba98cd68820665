#include "search/initial_design.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>

#include "search/encoding.hpp"
#include "core/knobs.hpp"

namespace autotune {

int initial_design_size(const SearchSpace& space, int budget) {
  // d+1 over the knobs that can move: a knob with one value (the cpu
  // default's precision, a user's pinned setting) is no dimension to explore.
  // At a budget of 15 that is 5 (a third, issue 12's ceiling). Measured on the
  // six failure landscapes (100 fresh seeds, @15 median / p10, 0.869 / 0.646
  // with 5): 4 points 0.839 / 0.546; 6 points 0.885 / 0.653, over the ceiling.
  //
  // Never more than 5 (kMostDesignPoints), whatever the budget: the design's
  // trials are spent before the model speaks, and at 30 trials the six-knob
  // spaces used to get 7. With 5, every issue-15 lever on, 60 seeds, seconds
  // until the answer reaches 98% of the optimum (7 -> 5 points):
  // loader_bound 35.7 -> 27.5, balanced 47.3 -> 19.9, 37.0 -> 29.9 and
  // 31.6 -> 37.3 on three seed sets, memory_tight 61.3 -> 58.2, the cpu
  // default 12.2 -> 11.5, compute_bound 49.5 -> 52.7, final medians equal.
  // The failure landscapes at 30 trials (100 fresh seeds): with busy shares
  // bo 1.000 / 0.904 either way (failed after the design 0.080 -> 0.077);
  // without, 1.000 / 0.903 -> 1.000 / 0.886 (queue-cliff's p10 0.885 ->
  // 0.801, worker-cliff's median 0.915 -> 0.954).
  constexpr int kMostDesignPoints = 5;
  int free = 0;
  for (std::size_t d = 0; d < space.dims(); ++d) free += space.param(d).values.size() > 1 ? 1 : 0;
  const int points = std::min(free + 1, kMostDesignPoints);
  if (budget <= 0) return points;
  return std::max(2, std::min(points, budget / 3));
}

namespace {

// Stratum centres are pulled towards the middle of each ordered range by
// this factor: 0.8 puts 5 points on a range at 0.18-0.82 of it. Tried:
// 0.6 (0.26-0.74). On the failure landscapes, whose walls sit at the high
// ends of the memory knobs, it lifted bo @15 (100 fresh seeds: worker-cliff
// 0.805 -> 0.910 median, all six equal or up) and anneal; but where the best
// setting is a range's end (a loader-bound job at its most workers, as on
// the H100 sweep) the search reached it later: time to 98% of the optimum
// on the synthetic balanced profile 26.5 -> 47.8 s, the H100 replay 72.8 ->
// 90.9 s (bench/time_to_quality.sh). Kept at 0.8.
constexpr double kShrink = 0.8;

// A target in mixed form: a position in [0,1] for an ordered parameter, a
// value index for a categorical one.
using Target = std::vector<double>;

double distance2(const SearchSpace& s, const Config& c, const Target& t) {
  double r = 0;
  for (std::size_t d = 0; d < s.dims(); ++d) {
    if (s.param(d).scale == Scale::categorical) {
      r += c[d] == static_cast<int>(t[d]) ? 0.0 : 1.0;
    } else {
      const double x = s.position(d, c[d]) - t[d];
      r += x * x;
    }
  }
  return r;
}

Config snap(const SearchSpace& s, const Target& t) {
  Config c(s.dims());
  for (std::size_t d = 0; d < s.dims(); ++d) {
    if (s.param(d).scale == Scale::categorical) {
      c[d] = static_cast<int>(t[d]);
      continue;
    }
    // Nearest position; a tie goes to the one nearer the middle.
    int best = 0;
    for (int k = 1; k < static_cast<int>(s.param(d).values.size()); ++k) {
      const double gk = std::abs(s.position(d, k) - t[d]), gb = std::abs(s.position(d, best) - t[d]);
      if (gk < gb - 1e-9 ||
          (gk < gb + 1e-9 && std::abs(s.position(d, k) - 0.5) < std::abs(s.position(d, best) - 0.5)))
        best = k;
    }
    c[d] = best;
  }
  return c;
}

}  // namespace

std::vector<Config> spread_design(const SearchSpace& space, int n, const std::vector<Config>& taken, Rng& rng,
                                  const std::function<bool(const Config&)>& usable,
                                  const std::vector<Config>* listed, int tries) {
  if (n <= 0 || space.dims() == 0) return {};
  const std::size_t dims = space.dims();
  const auto un = static_cast<std::size_t>(n);
  std::vector<Eigen::VectorXd> fixed;
  for (const auto& c : taken) fixed.push_back(encode(space, c));

  std::vector<Target> best_design;
  double best_score = -1.0;
  for (int t = 0; t < std::max(1, tries); ++t) {
    std::vector<Target> design(un, Target(dims));
    for (std::size_t d = 0; d < dims; ++d) {
      std::vector<std::size_t> perm(un);
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), rng);
      const std::size_t values = space.param(d).values.size();
      if (space.param(d).scale == Scale::categorical) {
        // Deal the values out in a random order, each about equally often.
        std::vector<std::size_t> order(values);
        std::iota(order.begin(), order.end(), 0);
        std::shuffle(order.begin(), order.end(), rng);
        for (std::size_t i = 0; i < un; ++i) design[i][d] = static_cast<double>(order[perm[i] % values]);
      } else {
        // Stratum centres pulled a little towards the middle: with 5 points
        // on 6 values (i + 1/2) / n alone would still reach an end.
        for (std::size_t i = 0; i < un; ++i)
          design[i][d] = 0.5 + kShrink * ((static_cast<double>(perm[i]) + 0.5) / static_cast<double>(un) - 0.5);
      }
    }
    // Maximin in the encoding, over the snapped points and what is taken.
    std::vector<Eigen::VectorXd> pts = fixed;
    for (const auto& target : design) pts.push_back(encode(space, snap(space, target)));
    double dmin = std::numeric_limits<double>::infinity();
    for (std::size_t i = fixed.size(); i < pts.size(); ++i)
      for (std::size_t j = 0; j < i; ++j) dmin = std::min(dmin, (pts[i] - pts[j]).squaredNorm());
    if (dmin > best_score) {
      best_score = dmin;
      best_design = std::move(design);
    }
  }

  std::vector<Config> out;
  std::set<Config> chosen;
  auto ok = [&](const Config& c) { return space.is_valid(c) && !chosen.count(c) && usable(c); };
  for (const auto& target : best_design) {
    std::optional<Config> pick;
    Config c = snap(space, target);
    if (ok(c)) {
      pick = c;
    } else if (listed) {
      double best = std::numeric_limits<double>::infinity();
      for (const auto& cand : *listed) {
        const double r = distance2(space, cand, target);
        if (r < best && ok(cand)) best = r, pick = cand;
      }
    } else {
      double best = std::numeric_limits<double>::infinity();
      for (int k = 0; k < 256; ++k) {
        auto cand = space.sample(rng, 200);
        if (!cand) break;
        const double r = distance2(space, *cand, target);
        if (r < best && ok(*cand)) best = r, pick = cand;
      }
    }
    if (!pick) continue;
    chosen.insert(*pick);
    out.push_back(*pick);
  }
  return out;
}

// The order changes no point of the design, only when each is measured: a
// pipeline the baseline (PyTorch's 0 workers) starves gains most from its
// loader's parallelism, so the design point with the most workers usually
// shows the gain first, and the answer is good trials sooner. Every issue-15
// lever on, 60 seeds x 3 seed sets pooled, seconds until the answer reaches
// 98% of the optimum (design in its drawn order -> most workers first):
// balanced 21.4 -> 13.8 s (final median 0.991 -> 0.989); set 1 alone
// loader_bound 27.5 -> 27.4, compute_bound 52.7 -> 52.4, memory_tight
// 58.2 -> 56.4, the cpu default 11.5 -> 11.3, the H100 replay 48.3 -> 48.5.
// Failure landscapes (bench_failure_efficiency --busy, bo, @15 / @30
// median / p10): 100 fresh seeds 0.911 / 0.728, 1.000 / 0.904 -> 0.911 /
// 0.724, 1.000 / 0.919; 24 held-out ones 0.896 / 0.724, 1.000 / 0.955 ->
// 0.900 / 0.719, 1.000 / 0.953.
void lead_with_parallel_loading(const SearchSpace& space, std::vector<Config>& design) {
  std::vector<std::pair<int, std::size_t>> leads;  // {rank, parameter}
  for (std::size_t d = 0; d < space.dims(); ++d)
    if (const KnobInfo* k = find_knob(space.param(d).name); k && k->design_lead > 0 &&
                                                            space.param(d).scale != Scale::categorical)
      leads.emplace_back(k->design_lead, d);
  std::sort(leads.begin(), leads.end());
  auto key = [&](const Config& c) {
    std::vector<double> k;
    for (const auto& [rank, d] : leads) k.push_back(space.position(d, c[d]));
    return k;
  };
  std::stable_sort(design.begin(), design.end(), [&](const Config& a, const Config& b) { return key(a) > key(b); });
}

}  // namespace autotune
