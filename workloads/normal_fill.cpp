#include "workloads/normal_fill.hpp"

#include <algorithm>
#include <cmath>
#include <thread>
#include <vector>

namespace autotune {
namespace {

// Draw k: the radius and angle of Box-Muller, which make values 2k and 2k + 1.
void draw(std::uint64_t key, std::size_t k, float& r, float& angle) {
  const std::uint64_t h = splitmix64(key ^ (static_cast<std::uint64_t>(k) * 0xD1B54A32D192ED03ULL));
  // Two 24-bit uniforms; u1 in (0, 1] so that the logarithm is finite.
  const float u1 = (static_cast<float>(h >> 40) + 1.0f) * 0x1p-24f;
  const float u2 = static_cast<float>(h & 0xFFFFFFULL) * 0x1p-24f;
  r = std::sqrt(-2.0f * std::log(u1));
  angle = 6.2831853f * u2;
}

void fill_range(float* out, std::size_t begin, std::size_t end, float stddev, std::uint64_t seed) {
  const std::uint64_t key = splitmix64(seed);
  for (std::size_t k = begin / 2; 2 * k < end; ++k) {
    float r = 0, angle = 0;
    draw(key, k, r, angle);
    if (2 * k >= begin) out[2 * k] = stddev * r * std::cos(angle);
    if (2 * k + 1 < end) out[2 * k + 1] = stddev * r * std::sin(angle);
  }
}

}  // namespace

void fill_normal(float* out, std::size_t count, float stddev, std::uint64_t seed, unsigned threads) {
  if (threads == 0) threads = std::clamp(std::thread::hardware_concurrency(), 1U, 16U);
  // Threads only where each has a few hundred thousand values to make.
  threads = static_cast<unsigned>(std::clamp<std::size_t>(count / (1U << 18), 1, threads));
  if (threads == 1) {
    fill_range(out, 0, count, stddev, seed);
    return;
  }
  std::vector<std::thread> pool;
  const std::size_t chunk = (count + threads - 1) / threads;
  for (unsigned t = 0; t < threads; ++t) {
    const std::size_t begin = t * chunk, end = std::min(count, begin + chunk);
    if (begin < end) pool.emplace_back(fill_range, out, begin, end, stddev, seed);
  }
  for (auto& th : pool) th.join();
}

}  // namespace autotune
