#include "core/text.hpp"

#include <cstdio>

namespace autotune {

std::string format_bytes(double bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, kUnits[u]);
  return buf;
}

std::string_view first_line(std::string_view text) {
  const auto nl = text.find('\n');
  return nl == std::string_view::npos ? text : text.substr(0, nl);
}

}  // namespace autotune
