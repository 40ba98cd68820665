#pragma once
// Headless Chromium for the tests that render an HTML page: which binary
// ($AUTOTUNE_TEST_CHROMIUM, else Debian's `chromium`, else
// `chromium-browser` on PATH), and one page loaded into it: its DOM after the
// scripts ran, the console messages it logged, and a screenshot.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/support/shell.hpp"

namespace autotune::testing {

inline const std::string& chromium_binary() {
  static const std::string found = [] {
    const char* given = std::getenv("AUTOTUNE_TEST_CHROMIUM");
    for (std::string c : {std::string(given ? given : ""), std::string("chromium"), std::string("chromium-browser")}) {
      if (c.empty()) continue;
      if (std::system(("command -v '" + c + "' >/dev/null 2>&1").c_str()) == 0) return c;
    }
    return std::string();
  }();
  return found;
}

// Skips without Chromium, except under CI (CI=true), where scripts/deps.sh
// --test has installed it and its absence is a failure.
#define AUTOTUNE_REQUIRE_CHROMIUM()                                                                  \
  do {                                                                                               \
    if (::autotune::testing::chromium_binary().empty()) {                                            \
      const char* ci = std::getenv("CI");                                                            \
      if (ci && std::string(ci) == "true") FAIL() << "CI=true but no chromium on PATH";              \
      GTEST_SKIP() << "no chromium (Debian: apt-get install chromium; scripts/deps.sh --test installs it)"; \
    }                                                                                                \
  } while (0)

struct BrowserRun {
  int status = -1;
  std::string out;  // stdout (the DOM with --dump-dom)
};

inline BrowserRun run_chromium(const std::filesystem::path& profile, const std::string& args) {
  // No sandbox: tests often run as root in a container, where Chromium's refuses to start.
  const std::string cmd = "timeout 90 '" + chromium_binary() +
                          "' --headless --disable-gpu --no-sandbox --disable-dev-shm-usage --hide-scrollbars "
                          "--user-data-dir='" + profile.string() + "' " + args;
  const ShellRun run = run_shell(cmd);
  return BrowserRun{run.status, run.out};
}

struct RenderedPage {
  std::string dom;       // after the page's scripts ran
  std::string console;   // the lines Chromium logged from the page's console (errors among them)
  bool screenshot = false;
};

// Loads `html` twice: once to dump the DOM with console logging on, once for
// a screenshot of `width` x `height` into `png`.
inline RenderedPage render_page(const std::filesystem::path& html, const std::filesystem::path& png,
                                const std::filesystem::path& scratch, int width = 1280, int height = 3000) {
  RenderedPage page;
  const std::string url = "'file://" + std::filesystem::absolute(html).string() + "'";
  const auto log = scratch / "chromium.log";
  page.dom = run_chromium(scratch / "profile-dom",
                          "--enable-logging=stderr --v=0 --dump-dom " + url + " 2>'" + log.string() + "'").out;
  if (FILE* f = std::fopen(log.c_str(), "r")) {
    std::array<char, 4096> line{};
    while (std::fgets(line.data(), static_cast<int>(line.size()), f))
      if (std::string(line.data()).find(":CONSOLE") != std::string::npos) page.console += line.data();
    std::fclose(f);
  }
  run_chromium(scratch / "profile-shot", "--screenshot='" + png.string() + "' --window-size=" + std::to_string(width) +
                                             "," + std::to_string(height) + " " + url + " 2>/dev/null");
  page.screenshot = std::filesystem::exists(png) && std::filesystem::file_size(png) > 20'000;
  return page;
}

}  // namespace autotune::testing
