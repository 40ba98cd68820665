#pragma once
// Normally distributed values, fast and the same whatever the thread count:
// value i is a pure function of (seed, i) (a counter-based generator:
// splitmix64, then Box-Muller), so the fill splits across threads freely.
// The harness's model initialisation (He init of the cuda workload's MLP,
// tens of millions of weights per trial) uses it.
#include <cstddef>
#include <cstdint>

namespace autotune {

// SplitMix64: a stateless mix of 64 bits (the finaliser of Steele, Lea and
// Flood's generator); x, x + 1, ... give independent-looking outputs.
constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// out[i] = stddev * N(0, 1) drawn from (seed, i), for i in [0, count), on up
// to `threads` threads (0: the machine's cores, at most 16).
void fill_normal(float* out, std::size_t count, float stddev, std::uint64_t seed, unsigned threads = 0);

}  // namespace autotune
