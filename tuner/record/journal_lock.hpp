#pragma once
// A run owns its journal: an exclusive lock, taken before the journal is read
// and held until the run ends, so that two runs (or a `--resume` of a live
// run) never write one journal or one folder of trial logs.
//
// The lock is flock(2) on `<journal>.lock`, which holds the owner's pid. The
// kernel drops it when the owner dies, even by SIGKILL, so a stale file never
// blocks a later run; the owner removes the file when it lets go.
#include <filesystem>
#include <stdexcept>

namespace autotune {

struct JournalLockedError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class JournalLock {
 public:
  // Throws JournalLockedError naming the holder's pid when another process
  // holds it, and for a lock file that cannot be created (the message says why).
  explicit JournalLock(const std::filesystem::path& journal);
  ~JournalLock();
  JournalLock(const JournalLock&) = delete;
  JournalLock& operator=(const JournalLock&) = delete;

  const std::filesystem::path& path() const { return m_path; }

 private:
  std::filesystem::path m_path;
  int m_fd = -1;
};

// `<journal>.lock`.
std::filesystem::path journal_lock_path(const std::filesystem::path& journal);

}  // namespace autotune
