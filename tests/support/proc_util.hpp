#pragma once
// Helpers for the fault-injection tests: a scratch folder, scripts written
// into it, and whether a pid is still a live process.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

namespace autotune::testing {

class ScratchDir {
 public:
  ScratchDir() {
    std::random_device rd;
    m_path = std::filesystem::temp_directory_path() /
             ("autotune-test-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
    std::filesystem::create_directories(m_path);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(m_path, ec);
  }
  const std::filesystem::path& path() const { return m_path; }
  std::filesystem::path write(const std::string& name, const std::string& text, bool executable = true) const {
    auto p = m_path / name;
    std::ofstream(p) << text;
    if (executable)
      std::filesystem::permissions(p, std::filesystem::perms::owner_all, std::filesystem::perm_options::add);
    return p;
  }
  std::string read(const std::string& name) const {
    std::ifstream in(m_path / name);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

 private:
  std::filesystem::path m_path;
};

// Alive = exists and is not a zombie (a reparented zombie may linger when
// PID 1 of a container does not reap).
inline bool process_alive(long pid) {
  if (pid <= 0) return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  if (!in) return false;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto p = text.rfind(')');
  if (p == std::string::npos || p + 2 >= text.size()) return false;
  const char state = text[p + 2];
  return state != 'Z' && state != 'X';
}

// Waits up to `seconds` for the pid to be gone (killing is asynchronous).
inline bool gone_within(long pid, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (!process_alive(pid)) return true;
    ::usleep(10000);
  }
  return !process_alive(pid);
}

inline long read_pid(const std::filesystem::path& file) {
  std::ifstream in(file);
  long pid = -1;
  in >> pid;
  return pid;
}

}  // namespace autotune::testing
