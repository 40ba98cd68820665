#include "tuner/cli/set_aside.hpp"

#include <algorithm>
#include <string>

namespace autotune {
namespace {

std::filesystem::path numbered(const std::filesystem::path& p, int n) {
  return p.parent_path() / (p.stem().string() + "-" + std::to_string(n) + p.extension().string());
}

}  // namespace

std::vector<std::pair<std::filesystem::path, std::filesystem::path>> set_aside(
    const std::vector<std::filesystem::path>& paths) {
  std::vector<std::filesystem::path> present;
  for (const auto& p : paths)
    if (std::filesystem::exists(std::filesystem::symlink_status(p))) present.push_back(p);
  int n = 1;
  while (std::any_of(present.begin(), present.end(), [&](const auto& p) {
    return std::filesystem::exists(std::filesystem::symlink_status(numbered(p, n)));
  }))
    ++n;
  std::vector<std::pair<std::filesystem::path, std::filesystem::path>> moved;
  for (const auto& p : present) {
    std::filesystem::rename(p, numbered(p, n));
    moved.emplace_back(p, numbered(p, n));
  }
  return moved;
}

}  // namespace autotune
