// WriteFileAtomically: temporary file in the target's folder, write, fsync, rename. A reader
// sees either the old file or the complete new one; failures leave no temporary behind.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>

#include "cerar/format/design_file.h"
#include "cerar/format/errors.h"

namespace cerar {
namespace {

[[noreturn]] void Fail(const std::string& path, const std::string& what, int error) {
  throw IoError("cannot write " + path + ": " + what + " (" + std::strerror(error) + ")");
}

std::string FolderOf(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Opens a new, unique temporary next to `path` (O_EXCL, so never someone else's file).
int OpenTemporary(const std::string& path, std::string& temp) {
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    const auto tick = std::chrono::steady_clock::now().time_since_epoch().count();
    temp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++) + "." +
           std::to_string(static_cast<unsigned long long>(tick) % 1000000);
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) return fd;
    if (errno != EEXIST) Fail(path, "cannot create a temporary file in " + FolderOf(path), errno);
  }
  Fail(path, "cannot find a free temporary name", EEXIST);
}

}  // namespace

void WriteFileAtomically(const std::string& path, const std::string& contents) {
  if (path.empty()) throw IoError("cannot write a file with an empty path");
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
  if (::rename(temp.c_str(), path.c_str()) != 0) {
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
