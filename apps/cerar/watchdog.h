#pragma once
// --timeout: a watchdog thread ends the process with the usual one-line error and exit code 2
// when a command runs past its deadline. The design and analysis computations are not
// interruptible, so this is what bounds them. Results are never cut short: the watchdog stands
// down as soon as a command starts writing its result (Emit, SaveDesign), and atomic writes
// leave no temporary file.
#include <string>

namespace cerar::cli {

class Watchdog {
 public:
  // Starts the deadline `seconds` from now (once per process); `what` names it in the error.
  static void Start(double seconds, std::string what);
  // Cancels the deadline; after this returns the watchdog never ends the process.
  static void StandDown();
};

}  // namespace cerar::cli
