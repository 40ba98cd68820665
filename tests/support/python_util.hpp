#pragma once
// Which Python the tests that need PyTorch run: $AUTOTUNE_TEST_PYTHON, else
// Debian's /usr/bin/python3 (python3-torch), else python3 on PATH — the
// first that imports torch. Empty when none does (those tests skip).
#include <cstdlib>
#include <string>

namespace autotune::testing {

inline bool python_imports(const std::string& python, const std::string& module) {
  const std::string cmd = "'" + python + "' -c 'import " + module + "' >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

inline const std::string& torch_python() {
  static const std::string found = [] {
    std::string candidates[] = {std::getenv("AUTOTUNE_TEST_PYTHON") ? std::getenv("AUTOTUNE_TEST_PYTHON") : "",
                                "/usr/bin/python3", "python3"};
    for (const auto& p : candidates)
      if (!p.empty() && python_imports(p, "torch")) return p;
    return std::string();
  }();
  return found;
}

// Skips without torch, except under CI (CI=true), where scripts/deps.sh
// --test has installed python3-torch and its absence is a failure.
#define AUTOTUNE_REQUIRE_TORCH()                                                                \
  do {                                                                                          \
    if (::autotune::testing::torch_python().empty()) {                                          \
      const char* ci = std::getenv("CI");                                                       \
      if (ci && std::string(ci) == "true") FAIL() << "CI=true but no Python imports torch";     \
      GTEST_SKIP() << "no Python with torch (Debian: apt-get install python3-torch; "           \
                      "scripts/deps.sh --test installs it)";                                    \
    }                                                                                           \
  } while (0)

}  // namespace autotune::testing
