#include "workloads/normal_fill.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace {

using autotune::fill_normal;

// 4 M draws: the sample mean's standard error is 0.0005 sigma and the
// standard deviation's 0.00035 sigma, so the bounds below (8 and 10 standard
// errors) fail by chance with probability far under 1e-12; the seed is fixed.
TEST(NormalFill, DrawsTheRequestedNormal) {
  std::vector<float> v(1 << 22);
  fill_normal(v.data(), v.size(), 0.05f, 7);
  double sum = 0, sq = 0, beyond3 = 0;
  for (float x : v) {
    ASSERT_TRUE(std::isfinite(x));
    sum += x;
    sq += double(x) * x;
    beyond3 += std::abs(x) > 3 * 0.05f;
  }
  const double n = static_cast<double>(v.size()), mean = sum / n, sd = std::sqrt(sq / n - mean * mean);
  EXPECT_NEAR(mean, 0.0, 8 * 0.0005 * 0.05);
  EXPECT_NEAR(sd, 0.05, 10 * 0.00035 * 0.05);
  // The tails of a normal, not of a uniform or a sum of a few: P(|z| > 3) = 0.0027.
  EXPECT_NEAR(beyond3 / n, 0.0027, 0.0003);
}

TEST(NormalFill, TheValuesDependOnTheSeedAloneNotOnTheThreads) {
  // An odd count on 3 threads: chunks that start and end mid-pair.
  std::vector<float> one((1 << 20) + 3), many(one.size()), other(one.size());
  fill_normal(one.data(), one.size(), 1.0f, 3, 1);
  fill_normal(many.data(), many.size(), 1.0f, 3, 3);
  fill_normal(other.data(), other.size(), 1.0f, 4, 4);
  EXPECT_EQ(one, many);
  EXPECT_NE(one, other);
}

}  // namespace
