// WriteFileAtomically: temporary file in the target's folder, write, fsync, rename. A reader
// sees either the old file or the complete new one; failures leave no temporary behind. Only a
// regular file is ever replaced: a symbolic link, FIFO, device or folder at the path is refused
// (as root, `-o /dev/null` would otherwise replace the system's /dev/null).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "cerar/format/design_file.h"
#include "cerar/errors.h"
#include "cerar/format/printable.h"

namespace cerar {
namespace {

[[noreturn]] void Fail(const std::string& path, const std::string& what, int error) {
  throw IoError("cannot write " + Printable(path, 1024) + ": " + what + " (" +
                std::strerror(error) + ")");
}

[[noreturn]] void Refuse(const std::string& path, const std::string& what) {
  throw IoError("cannot write " + Printable(path, 1024) + ": " + what);
}

std::string FolderOf(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

const char* KindOf(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// What is at `path` now may be replaced (or, with Replace::kNever, nothing may be there).
void CheckTarget(const std::string& path, Replace replace) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) {
    if (errno == ENOENT) return;
    Fail(path, "cannot inspect the target", errno);
  }
  if (!S_ISREG(info.st_mode)) {
    Refuse(path, std::string("it is ") + KindOf(info.st_mode) + "; only a regular file is replaced");
  }
  if (replace == Replace::kNever) Refuse(path, "the file exists");
  if ((info.st_mode & 0222) == 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", unsigned(info.st_mode & 07777));
    Refuse(path, std::string("the file is read-only (mode ") + mode + ")");
  }
}

// Opens a new, unique temporary next to `path` (O_EXCL, so never someone else's file). Its name
// is the target's, shortened where needed so that it fits the folder's NAME_MAX with the suffix.
int OpenTemporary(const std::string& path, std::string& temp) {
  static std::atomic<unsigned> counter{0};
  const auto slash = path.find_last_of('/');
  const std::string folder = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  long name_max = ::pathconf(folder.empty() ? "." : folder.c_str(), _PC_NAME_MAX);
  if (name_max <= 0) name_max = 255;
  for (int attempt = 0; attempt < 100; ++attempt) {
    const auto tick = std::chrono::steady_clock::now().time_since_epoch().count();
    const std::string suffix = ".tmp." + std::to_string(::getpid()) + "." +
                               std::to_string(counter++) + "." +
                               std::to_string(static_cast<unsigned long long>(tick) % 1000000);
    const std::size_t keep = std::min(name.size(), std::size_t(name_max) - suffix.size());
    temp = folder + name.substr(0, keep) + suffix;
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) return fd;
    if (errno != EEXIST) Fail(path, "cannot create a temporary file in " + FolderOf(path), errno);
  }
  Fail(path, "cannot find a free temporary name", EEXIST);
}

}  // namespace

void WriteFileAtomically(const std::string& path, const std::string& contents, Replace replace) {
  if (path.empty()) throw IoError("cannot write a file with an empty path");
  // The system calls would stop at the NUL and write another file than the one named.
  if (path.find('\0') != std::string::npos)
    throw IoError("cannot write " + Printable(path, 1024) + ": a path with a NUL byte names no file");
  CheckTarget(path, replace);
  std::string temp;
  const int fd = OpenTemporary(path, temp);
  auto abandon = [&](const std::string& what) {
    const int error = errno;
    ::close(fd);
    ::unlink(temp.c_str());
    Fail(path, what, error);
  };
  const char* p = contents.data();
  std::size_t left = contents.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      abandon("write failed");
    }
    p += n;
    left -= std::size_t(n);
  }
  if (::fsync(fd) != 0) abandon("fsync failed");
  if (::close(fd) != 0) {
    const int error = errno;
    ::unlink(temp.c_str());
    Fail(path, "close failed", error);
  }
  // Replace::kNever: RENAME_NOREPLACE, so a file that appeared meanwhile is not replaced either
  // (where the file system lacks it, link + unlink, which fails the same way).
  int renamed;
  if (replace == Replace::kNever) {
    renamed = ::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE);
    if (renamed != 0 && errno == EINVAL) {
      renamed = ::link(temp.c_str(), path.c_str());
      if (renamed == 0) ::unlink(temp.c_str());
    }
  } else {
    renamed = ::rename(temp.c_str(), path.c_str());
  }
  if (renamed != 0) {
    const int error = errno;
    ::unlink(temp.c_str());
    Fail(path, "rename into place failed", error);
  }
  // Make the rename itself durable; failure here does not undo a complete write.
  const int dir = ::open(FolderOf(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    (void)::fsync(dir);
    ::close(dir);
  }
}

}  // namespace cerar
