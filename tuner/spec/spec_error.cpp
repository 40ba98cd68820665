#include <fmt/format.h>

#include "tuner/spec/spec.hpp"

namespace autotune {

std::string SpecError::format() const {
  std::string out = file;
  if (line > 0) out += fmt::format(":{}:{}", line, column);
  out += ": ";
  if (!key_path.empty()) out += key_path + ": ";
  if (!expected.empty()) out += "expected " + expected;
  if (!found.empty()) out += (expected.empty() ? "found " : ", found ") + found;
  if (!hint.empty()) out += " (" + hint + ")";
  return out;
}

}  // namespace autotune
