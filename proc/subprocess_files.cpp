// The files a trial controls, as the tuner reads them: its result file
// (and the warm protocol's markers) may be anything the job made of the
// path, so nothing here follows a link, blocks or reads without bound.
#include "proc/subprocess_detail.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace autotune {
namespace {

std::string_view file_kind(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISDIR(mode)) return "a folder";
  return "not a regular file";
}

}  // namespace

JobFile read_job_file(const std::filesystem::path& path, std::size_t cap) {
  JobFile f;
  const auto refuse = [&](std::string why) {
    f.state = JobFile::refused;
    f.why = std::move(why);
    return f;
  };
  struct stat before {};
  if (::lstat(path.c_str(), &before) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return f;  // absent
    return refuse(fmt::format("could not be read ({})", std::strerror(errno)));
  }
  // Looked at before it is opened: opening a device or a FIFO may block or
  // act (a tape rewinds), and a link may point anywhere (/etc/passwd).
  if (!S_ISREG(before.st_mode))
    return refuse(fmt::format("is {}, not a regular file: not read", file_kind(before.st_mode)));
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return f;
    return refuse(fmt::format("could not be opened ({})", std::strerror(errno)));
  }
  subproc::Fd guard(fd);
  struct stat opened {};
  // Swapped between the look and the open: the same checks on what was opened.
  if (::fstat(fd, &opened) != 0 || !S_ISREG(opened.st_mode) || opened.st_ino != before.st_ino ||
      opened.st_dev != before.st_dev)
    return refuse("changed while it was opened: not read");
  const auto too_big = [&](long long size) {
    return refuse(fmt::format("is over {} (at least {} bytes): not read", format_cap(cap), size));
  };
  if (opened.st_size > 0 && static_cast<unsigned long long>(opened.st_size) > cap) return too_big(opened.st_size);
  std::string text;
  char buf[16384];
  while (text.size() <= cap) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return refuse(fmt::format("could not be read ({})", std::strerror(errno)));
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  if (text.size() > cap) return too_big(static_cast<long long>(text.size()));
  f.state = JobFile::read;
  f.text = std::move(text);
  return f;
}

std::string format_cap(std::size_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  if (bytes >= (1u << 10) && bytes % (1u << 10) == 0) return fmt::format("{} KiB", bytes >> 10);
  return fmt::format("{} bytes", bytes);
}

std::string mark_nonfinite(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) out += text[++i];
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
      out += c;
      continue;
    }
    bool marked = false;
    for (std::string_view token : {"NaN", "Infinity", "-Infinity"})
      if (text.substr(i, token.size()) == token) {
        out += fmt::format("\"{}{}\"", kNonFiniteMark, token);
        i += token.size() - 1;
        marked = true;
        break;
      }
    if (!marked) out += c;
  }
  return out;
}

}  // namespace autotune
