// cerar — the design toolkit's command line: design, validate, report, sweep, simulate, pareto.
// Every failure is one line on stderr and exit code 2; --help exits 0.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <limits>
#include <new>
#include <system_error>

#include <gmp.h>

#include "cerar/design/optimizer.h"
#include "cerar/errors.h"
#include "cerar/format/printable.h"
#include "cli_util.h"
#include "commands.h"
#include "watchdog.h"

namespace {

// The error line: escaped (file names, member names and arguments come from outside) and one
// line whatever the message holds.
int Fail(const std::string& message) {
  std::cerr << "cerar: " << cerar::Printable(message, 4096) << "\n";
  return 2;
}

int Run(int argc, char** argv) {
  // The optimiser's evaluations churn through temporaries (cerar/design/optimizer.h).
  cerar::design::KeepAllocatorMemory();
  CLI::App app{"cerar: coded approximate ring all-reduce — make, judge and run designs"};
  app.require_subcommand(1);
  app.fallthrough();  // the global options below may follow the subcommand
  double timeout = 0;
  double max_file_mib = double(cerar::kDefaultMaxDesignFileBytes >> 20);
  auto* timeout_opt = app.add_option(
      "--timeout", timeout,
      "stop with an error (exit 2) after this many seconds; no partial output is left");
  auto* max_file_opt = app.add_option("--max-file-mib", max_file_mib,
                                      "largest design file read, in MiB (docs/design-format.md)")
                           ->capture_default_str();
  cerar::cli::AddDesignCommand(app);
  cerar::cli::AddValidateCommand(app);
  cerar::cli::AddReportCommand(app);
  cerar::cli::AddSweepCommand(app);
  cerar::cli::AddSimulateCommand(app);
  cerar::cli::AddParetoCommand(app);
  cerar::cli::CheckEveryValue(app);
  // After parsing, before the command runs: check and apply the global options.
  app.parse_complete_callback([&] {
    if (max_file_opt->count() > 0 && !(max_file_mib >= 1 && max_file_mib <= 1 << 20)) {
      throw cerar::InvalidArgument("--max-file-mib " + cerar::cli::Number(max_file_mib) +
                                   ": expected 1 to 1048576 (MiB)");
    }
    cerar::cli::DesignLoadOptions().max_file_bytes =
        static_cast<std::uint64_t>(max_file_mib * (1 << 20));
    if (timeout_opt->count() > 0) {
      if (!(std::isfinite(timeout) && timeout > 0)) {
        throw cerar::InvalidArgument("--timeout " + cerar::cli::Number(timeout) +
                                     ": expected a finite number of seconds > 0");
      }
      cerar::cli::Watchdog::Start(
          timeout, "stopped by --timeout " + cerar::cli::Number(timeout) +
                       " s before the command finished (nothing was written)");
    }
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // "A subcommand is required" for `cerar desing ...`: name the word that is not a command.
    if (app.get_subcommands().empty() && !app.remaining().empty()) {
      std::string names;
      for (const CLI::App* sub : app.get_subcommands({}))
        names += (names.empty() ? "" : ", ") + sub->get_name();
      return Fail("unknown command '" + app.remaining().front() + "'; expected one of " + names +
                  " (see cerar --help)");
    }
    return Fail(std::string(e.what()) + " (see cerar --help)");
  }
  return 0;
}

// GMP, and MPFR through it, print "GNU MP: Cannot allocate memory" and abort when an allocation
// fails. The CLI's allocation functions throw std::bad_alloc instead: it unwinds through their
// frames (x86-64 code carries unwind tables) to main's one line. Their temporaries leak, which
// does not matter to a process that is about to exit. Set here, not in the libraries: GMP's
// functions are global to the process.
void* GmpAllocate(std::size_t bytes) {
  if (void* p = std::malloc(bytes)) return p;
  throw std::bad_alloc();
}
void* GmpReallocate(void* old, std::size_t, std::size_t bytes) {
  if (void* p = std::realloc(old, bytes)) return p;
  throw std::bad_alloc();
}
void GmpFree(void* p, std::size_t) { std::free(p); }

}  // namespace

int main(int argc, char** argv) {
  mp_set_memory_functions(GmpAllocate, GmpReallocate, GmpFree);
  int status;
  try {
    status = Run(argc, argv);
  } catch (const std::bad_alloc&) {
    status = Fail("out of memory: the request needs more memory than this process can allocate");
  } catch (const std::length_error& e) {
    status = Fail(std::string("request too large to allocate (") + e.what() + ")");
  } catch (const std::system_error& e) {
    // Thread creation and other system calls the standard library makes.
    status = Fail(std::string("system error: ") + e.what());
  } catch (const std::exception& e) {
    // cerar::Error subclasses, CliError, and anything unexpected: one line, exit 2.
    status = Fail(e.what());
  }
  cerar::cli::Watchdog::StandDown();
  // Output that could not be written is a failure too (`cerar report F > /dev/full`); after a
  // failure already reported, one line is enough.
  try {
    cerar::cli::FlushStandardOutput();
  } catch (const std::exception& e) {
    return status != 0 ? status : Fail(e.what());
  }
  return status;
}
