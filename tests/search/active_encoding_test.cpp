// encode_active (search/knobs.hpp): what bo's GP reads. An inactive knob
// (prefetch_factor at 0 workers) sits at one fixed place, so configurations
// that differ only in it are one point to the model; active knobs are the
// space's own encoding. Deterministic: no statistical assertions.
#include <gtest/gtest.h>

#include "bench/failure_landscapes.hpp"
#include "search/knobs.hpp"

namespace autotune {
namespace {

const SearchSpace& pipeline() {
  static const SearchSpace s = bench::failure_landscapes()[0].space();
  return s;
}

Config at(std::int64_t b, std::int64_t w, std::int64_t p, bool pin, const std::string& prec, std::int64_t acc) {
  return *pipeline().from_assignment(Assignment({{"batch_size", Value{b}},
                                                 {"num_workers", Value{w}},
                                                 {"prefetch_factor", Value{p}},
                                                 {"pin_memory", Value{pin}},
                                                 {"precision", Value{prec}},
                                                 {"grad_accum", Value{acc}}}));
}

TEST(ActiveEncoding, PrefetchAtZeroWorkersIsOnePoint) {
  const SearchSpace& s = pipeline();
  const auto knobs = knob_memory(s);
  const Eigen::VectorXd a = encode_active(s, knobs, at(64, 0, 1, false, "fp16", 2));
  for (std::int64_t p : {2, 4, 8}) {
    const Eigen::VectorXd b = encode_active(s, knobs, at(64, 0, p, false, "fp16", 2));
    EXPECT_EQ(a, b) << "prefetch " << p << " at 0 workers";
  }
  // The fixed place is the knob's smallest, as in the feasibility model.
  EXPECT_EQ(a, s.encode(at(64, 0, 1, false, "fp16", 2)));
}

TEST(ActiveEncoding, ActiveKnobsKeepTheSpacesEncoding) {
  const SearchSpace& s = pipeline();
  const auto knobs = knob_memory(s);
  for (std::int64_t w : {1, 7, 16})
    for (std::int64_t p : {1, 8}) {
      const Config c = at(128, w, p, true, "bf16", 4);
      EXPECT_EQ(encode_active(s, knobs, c), s.encode(c)) << w << " workers, prefetch " << p;
    }
  // Only the inactive knob's columns move: batch, pinning, precision and
  // accumulation still tell configurations at 0 workers apart.
  const Eigen::VectorXd base = encode_active(s, knobs, at(64, 0, 8, false, "fp16", 2));
  EXPECT_NE(base, encode_active(s, knobs, at(128, 0, 8, false, "fp16", 2)));
  EXPECT_NE(base, encode_active(s, knobs, at(64, 0, 8, true, "fp16", 2)));
  EXPECT_NE(base, encode_active(s, knobs, at(64, 0, 8, false, "bf16", 2)));
  EXPECT_NE(base, encode_active(s, knobs, at(64, 0, 8, false, "fp16", 4)));
}

TEST(ActiveEncoding, AKnobNobodyDescribedIsAlwaysActive) {
  // Without num_workers in the space, prefetch has nothing to depend on.
  const SearchSpace s({{"prefetch_factor", {Value{std::int64_t{1}}, Value{std::int64_t{4}}}, Scale::log},
                       {"batch_size", {Value{std::int64_t{16}}, Value{std::int64_t{32}}}, Scale::log}});
  const auto knobs = knob_memory(s);
  EXPECT_NE(encode_active(s, knobs, {0, 0}), encode_active(s, knobs, {1, 0}));
}

}  // namespace
}  // namespace autotune
