// An ExternalCommand's trial: run_external (a process per trial) and the
// warm worker (one process for many trials, both sides of its protocol),
// with the result file that both read.
#include "proc/subprocess.hpp"

#include "core/atomic_file.hpp"
#include "proc/subprocess_detail.hpp"

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

extern char** environ;

namespace autotune {
namespace {

void remove_stale_result(const ExternalCommand& cmd) {
  if (cmd.result_file.empty()) return;
  std::error_code ec;
  std::filesystem::remove(cmd.result_file, ec);  // fresh: a stale result must not count
}

ChildOptions watched_options(const ExternalCommand& cmd, const ChildOptions& opt) {
  ChildOptions watched = opt;
  watched.result_file = cmd.result_file;
  watched.exit_grace_s = cmd.exit_grace_s;
  return watched;
}

void take_result(const ExternalCommand& cmd, ExternalRun& run) {
  run.via_shell = cmd.via_shell;
  if (cmd.result_file.empty()) return;
  JobFile f = read_job_file(cmd.result_file, kResultFileCap);
  if (f.state == JobFile::read) run.result = std::move(f.text);
  if (f.state == JobFile::refused) run.result_refused = "$AUTOTUNE_RESULT " + f.why;
  // What is not a result (a link, a FIFO) is not kept in the trial's folder either.
  if (!cmd.keep_result_file || f.state == JobFile::refused) {
    std::error_code ec;
    std::filesystem::remove(cmd.result_file, ec);
  }
}

// The warm protocol's files in the worker's folder (AUTOTUNE_WARM_DIR).
constexpr const char* kWarmNext = "next.json";  // the next trial's environment, from the tuner
constexpr const char* kWarmStop = "stop";       // no more trials
constexpr const char* kWarmEntered = "entered"; // the script entered trials(): its start-up is done
// A worker whose resident memory grew by more than this between trials is replaced.
constexpr double kReplaceGrowthShare = 0.25;
constexpr double kReplaceGrowthFloor = 64.0 * (1 << 20);
std::filesystem::path warm_ready_file(const std::filesystem::path& dir, const std::string& trial) {
  return dir / ("ready-" + trial);  // the worker is done with `trial`
}

}  // namespace

void warm_trial_over(const std::filesystem::path& dir, const std::string& trial) {
  write_atomically(warm_ready_file(dir, trial), "");
}

bool warm_next_trial(const std::filesystem::path& dir) {
  const auto next = dir / kWarmNext;
  std::error_code ec;
  while (true) {
    if (std::filesystem::exists(next, ec)) {
      std::ifstream in(next);
      std::stringstream ss;
      ss << in.rdbuf();
      std::filesystem::remove(next, ec);
      const auto message = nlohmann::json::parse(ss.str());
      std::vector<std::string> old;
      for (char** e = environ; *e; ++e) {
        const std::string kv(*e);
        if (kv.rfind("AUTOTUNE_", 0) == 0) old.push_back(kv.substr(0, kv.find('=')));
      }
      for (const auto& k : old)
        if (k != "AUTOTUNE_WARM_DIR") ::unsetenv(k.c_str());
      for (const auto& [k, v] : message.at("env").items()) ::setenv(k.c_str(), v.get<std::string>().c_str(), 1);
      return true;
    }
    if (std::filesystem::exists(dir / kWarmStop, ec) || ::getppid() == 1) return false;
    ::usleep(5000);
  }
}

ExternalRun run_external(const ExternalCommand& cmd, const std::map<std::string, std::string>& extra_env,
                         const ChildOptions& opt) {
  const auto t0 = subproc::Clock::now();
  remove_stale_result(cmd);
  subproc::Fd out_r, err_r;
  ExternalRun run;
  const pid_t pid = subproc::spawn_external(cmd, extra_env, opt, out_r, err_r, run.spawn_error);
  if (pid < 0) return run;
  run = subproc::supervise(pid, out_r, err_r, nullptr, watched_options(cmd, opt), t0);
  take_result(cmd, run);
  return run;
}

ExternalRun WarmWorker::run(const ExternalCommand& cmd, const std::map<std::string, std::string>& extra_env,
                            const ChildOptions& opt) {
  const auto t0 = subproc::Clock::now();
  remove_stale_result(cmd);
  const std::string trial = cmd.env.count("AUTOTUNE_TRIAL") ? cmd.env.at("AUTOTUNE_TRIAL") : std::string();
  subproc::Fd out_r, err_r;
  if (m_pid > 0) {
    // A worker that ended while idle (its script returned, a crash between
    // trials) did not run this trial: a fresh one does.
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(m_pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == m_pid)
      stop();
  }
  bool replaced = false;
  if (m_pid > 0 && m_first_idle_rss > 0 &&
      subproc::group_rss_bytes(m_pid) - m_first_idle_rss >
          std::max(kReplaceGrowthFloor, kReplaceGrowthShare * m_first_idle_rss)) {
    stop();
    replaced = true;
  }
  const bool fresh = m_pid <= 0;
  double start_rss = 0;
  if (m_pid > 0) {
    out_r.fd = m_out;
    err_r.fd = m_err;
    subproc::reset_group_peaks(m_pid);
    start_rss = subproc::group_rss_bytes(m_pid);
    nlohmann::json env = nlohmann::json::object();
    for (const auto& [k, v] : cmd.env)
      if (k.rfind("AUTOTUNE_", 0) == 0) env[k] = v;
    write_atomically(m_dir / kWarmNext, nlohmann::json{{"env", env}}.dump());
  } else {
    m_base_rss = m_first_idle_rss = -1;
    std::error_code ec;
    const auto base = std::filesystem::temp_directory_path(ec);
    static std::atomic<unsigned> counter{0};
    m_dir = (ec ? std::filesystem::path("/tmp") : base) /
            fmt::format("autotune-warm-{}-{}", ::getpid(), counter++);
    std::filesystem::remove_all(m_dir, ec);
    std::filesystem::create_directories(m_dir, ec);
    ExternalCommand first = cmd;
    first.env["AUTOTUNE_WARM_DIR"] = m_dir.string();
    ExternalRun failed;
    // Forked from a thread of its own that lives as long as the worker: the
    // kernel kills a child whose parent *thread* ends (PR_SET_PDEATHSIG),
    // and the slot's thread that asks for this trial ends with it.
    std::promise<pid_t> started;
    auto pid = started.get_future();
    m_release = false;
    m_keeper = std::thread([&, this] {
      started.set_value(subproc::spawn_external(first, extra_env, opt, out_r, err_r, failed.spawn_error));
      std::unique_lock<std::mutex> lock(m_mu);
      m_cv.wait(lock, [this] { return m_release; });
    });
    m_pid = pid.get();
    if (m_pid < 0) {
      stop();
      return failed;
    }
  }
  ChildOptions watched = watched_options(cmd, opt);
  const std::filesystem::path ready = warm_ready_file(m_dir, trial);
  const std::filesystem::path entered = m_dir / kWarmEntered;
  watched.trial_done = [&, this] {
    std::error_code ec;
    // The script waits for this to go before its first trial's body: the
    // group's memory now is its start-up's. Read once; taken away every
    // time (the ranks of a job that cannot yet tell which is rank 0 each say so).
    if (fresh && std::filesystem::exists(entered, ec)) {
      if (m_base_rss < 0) m_base_rss = subproc::group_rss_bytes(m_pid);
      std::filesystem::remove(entered, ec);
    }
    return std::filesystem::exists(ready, ec);
  };
  ExternalRun run = subproc::supervise(m_pid, out_r, err_r, nullptr, watched, t0);
  take_result(cmd, run);
  run.worker_replaced = replaced;
  {
    std::error_code ec;  // said before (a worker kept from an earlier trial), in this trial, or not yet taken
    run.worker_entered = !fresh || m_base_rss >= 0 || std::filesystem::exists(entered, ec);
  }
  if (!fresh && run.peak_ram_bytes > 0) {
    const double base = m_base_rss >= 0 ? m_base_rss : m_first_idle_rss;
    run.peak_ram_bytes = base + std::max(0.0, run.peak_ram_bytes - start_rss);
  }
  if (run.worker_kept && fresh) m_first_idle_rss = subproc::group_rss_bytes(m_pid);
  if (run.worker_kept) {
    std::error_code ec;
    std::filesystem::remove(ready, ec);
    m_out = std::exchange(out_r.fd, -1);
    m_err = std::exchange(err_r.fd, -1);
  } else {
    m_out = m_err = -1;  // closed with out_r and err_r
    m_pid = -1;          // reaped, its group killed
    stop();
  }
  return run;
}

void WarmWorker::stop() {
  if (m_pid > 0) {
    // Asked first (trials() returns and the script ends as it would),
    // then its group killed; reaped either way.
    write_atomically(m_dir / kWarmStop, "");
    const auto t0 = subproc::Clock::now();
    int status = 0;
    while (::waitpid(m_pid, &status, WNOHANG) == 0 && subproc::since(t0) < 2.0) ::usleep(10000);
    ::killpg(m_pid, SIGKILL);
    subproc::forget_group(m_pid);
    while (::waitpid(m_pid, &status, 0) < 0 && errno == EINTR) {
    }
    m_pid = -1;
  }
  if (m_keeper.joinable()) {
    {
      std::lock_guard<std::mutex> lock(m_mu);
      m_release = true;
    }
    m_cv.notify_all();
    m_keeper.join();
  }
  for (int* fd : {&m_out, &m_err})
    if (*fd >= 0) ::close(std::exchange(*fd, -1));
  if (!m_dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(m_dir, ec);
    m_dir.clear();
  }
}

}  // namespace autotune
