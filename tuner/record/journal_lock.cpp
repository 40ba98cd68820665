#include "tuner/record/journal_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace autotune {

std::filesystem::path journal_lock_path(const std::filesystem::path& journal) {
  return std::filesystem::path(journal.string() + ".lock");
}

namespace {

// The pid the holder wrote, or empty (it has not written it yet).
std::string holder_of(int fd) {
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string s(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

JournalLock::JournalLock(const std::filesystem::path& journal) : m_path(journal_lock_path(journal)) {
  std::error_code ec;
  if (m_path.has_parent_path()) std::filesystem::create_directories(m_path.parent_path(), ec);
  // The file may be removed by its previous holder between our open and our
  // lock: the lock then guards nothing, so check it is still the file at
  // the path and try again if not.
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = ::open(m_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
      throw JournalLockedError(m_path.string() + ": cannot create the run's lock: " + std::strerror(errno));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      const std::string holder = holder_of(fd);
      ::close(fd);
      if (err == EWOULDBLOCK)
        throw JournalLockedError(journal.string() + " belongs to a run still going on (" +
                                 (holder.empty() ? std::string("another autotune") : "pid " + holder) +
                                 "); wait for it to end, or stop it first");
      throw JournalLockedError(m_path.string() + ": cannot lock: " + std::strerror(err));
    }
    struct stat held {}, now {};
    if (::fstat(fd, &held) == 0 && ::stat(m_path.c_str(), &now) == 0 && held.st_ino == now.st_ino &&
        held.st_dev == now.st_dev) {
      const std::string pid = std::to_string(::getpid()) + "\n";
      if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
        // The lock holds without the pid; a refused run then names no pid.
      }
      m_fd = fd;
      return;
    }
    ::close(fd);
  }
  throw JournalLockedError(m_path.string() + ": the lock file keeps changing; is another run starting and ending?");
}

JournalLock::~JournalLock() {
  if (m_fd < 0) return;
  // Removed while still held: a run waiting on this file sees it replaced
  // and takes the new one.
  ::unlink(m_path.c_str());
  ::close(m_fd);
}

}  // namespace autotune
