#pragma once
// Runs code in a child process under a tight address-space limit (RLIMIT_AS), for tests of what
// happens when threads cannot be started. Neither that nor resident-memory figures mean anything
// under AddressSanitizer, which reserves terabytes of address space up front and keeps shadow
// memory: kSanitized says when to skip.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>

namespace cerar::test_common {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

// Runs `body` in a child whose address space may grow by only `headroom` bytes beyond what it
// maps at the start; returns body's value as the child's exit status (or 100 + signal when it
// died of one, e.g. 106 for std::terminate's SIGABRT).
inline int ExitStatusUnderAddressLimit(std::size_t headroom, const std::function<int()>& body) {
  const pid_t child = ::fork();
  if (child == 0) {
    std::ifstream statm("/proc/self/statm");
    std::size_t pages = 0;
    statm >> pages;
    const rlimit limit{pages * std::size_t(::sysconf(_SC_PAGESIZE)) + headroom, RLIM_INFINITY};
    if (::setrlimit(RLIMIT_AS, &limit) != 0) ::_exit(99);
    ::_exit(body());
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  if (WIFSIGNALED(status)) return 100 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

}  // namespace cerar::test_common
