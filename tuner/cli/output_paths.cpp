#include "tuner/cli/output_paths.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace autotune {
namespace {

namespace fs = std::filesystem;

// One file, however it is named: two paths that resolve (through links,
// `..`, a relative spelling) to the same place, or to the same file.
bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) {
    const bool eq = fs::equivalent(a, b, ec);
    if (!ec) return eq;
  }
  return fs::weakly_canonical(fs::absolute(a), ec) == fs::weakly_canonical(fs::absolute(b), ec);
}

// Why `p` cannot be written, or empty. Only the nearest existing folder above
// a path that does not exist yet is checked: nothing is created here.
std::string cannot_write(const NamedPath& out) {
  std::error_code ec;
  const fs::path p = fs::absolute(out.path, ec);
  const auto st = fs::status(p, ec);
  if (fs::exists(st)) {
    if (!out.folder && fs::is_directory(st)) return "is a folder; expected a file path";
    if (out.folder && !fs::is_directory(st)) return "exists and is not a folder";
    if (!out.folder && !fs::is_regular_file(st)) return "exists and is not a regular file";
    if (::access(p.c_str(), W_OK) != 0) return fmt::format("cannot be written: {}", std::strerror(errno));
  }
  fs::path dir = p.parent_path();
  while (!dir.empty() && !fs::exists(dir, ec)) dir = dir.parent_path();
  if (dir.empty()) return "has no existing folder above it";
  if (!fs::is_directory(dir, ec)) return fmt::format("cannot be created: {} is not a folder", dir.string());
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return fmt::format("cannot be created in {}: {}", dir.string(), std::strerror(errno));
  return {};
}

}  // namespace

bool looks_like_journal(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  std::ifstream in(path, std::ios::binary);
  std::string first(4096, '\0');
  in.read(first.data(), static_cast<std::streamsize>(first.size()));
  first.resize(static_cast<std::size_t>(in.gcount()));
  const auto nl = first.find('\n');
  if (nl == std::string::npos) return false;
  const auto rec = nlohmann::json::parse(first.substr(0, nl), nullptr, /*allow_exceptions=*/false);
  return rec.is_object() && rec.value("type", "") == "header" && rec.contains("space_hash");
}

std::vector<std::string> output_problems(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs) {
  std::vector<std::string> problems;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const NamedPath& o = outputs[i];
    if (const std::string why = cannot_write(o); !why.empty())
      problems.push_back(fmt::format("{} {}: {}", o.role, o.path.string(), why));
    for (std::size_t k = 0; k < i; ++k)
      if (same_file(o.path, outputs[k].path))
        problems.push_back(fmt::format("{} {}: the same file as {} ({}); each output needs a path of its own", o.role,
                                       o.path.string(), outputs[k].role, outputs[k].path.string()));
    for (const NamedPath& in : inputs)
      if (same_file(o.path, in.path))
        problems.push_back(fmt::format("{} {}: the same file as {} ({}), which it would replace", o.role,
                                       o.path.string(), in.role, in.path.string()));
    if (!o.folder && looks_like_journal(o.path) && o.role.find("journal") == std::string::npos)
      problems.push_back(fmt::format("{} {}: that file is an autotune journal, which it would replace", o.role,
                                     o.path.string()));
  }
  return problems;
}

}  // namespace autotune
