#pragma once
// Runs a command line with /bin/sh and collects its standard output (add
// `2>&1` to the command for standard error too) and its exit status.
#include <stdio.h>
#include <sys/wait.h>

#include <array>
#include <string>

namespace autotune::testing {

struct ShellRun {
  int status = -1;  // the exit status; 128 + N when signal N ended it
  std::string out;
};

inline ShellRun run_shell(const std::string& cmd) {
  ShellRun r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), p)) > 0;) r.out.append(buf.data(), n);
  const int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

#ifdef AUTOTUNE_BINARY
// The built autotune with `args` (a shell command line's words), its
// standard output and standard error together.
inline ShellRun run_autotune(const std::string& args) {
  return run_shell(std::string(AUTOTUNE_BINARY) + " " + args + " 2>&1");
}
#endif

}  // namespace autotune::testing
