// cerar — the design toolkit's command line: design, validate, report, sweep, simulate, pareto.
// Every failure is one line on stderr and exit code 2; --help exits 0.
#include <cstdio>
#include <exception>
#include <iostream>

#include "cerar/design/optimizer.h"
#include "commands.h"
#include "cerar/format/errors.h"

int main(int argc, char** argv) {
  // The optimiser's evaluations churn through temporaries (cerar/design/optimizer.h).
  cerar::design::KeepAllocatorMemory();
  CLI::App app{"cerar: coded approximate ring all-reduce — make, judge and run designs"};
  app.require_subcommand(1);
  cerar::cli::AddDesignCommand(app);
  cerar::cli::AddValidateCommand(app);
  cerar::cli::AddReportCommand(app);
  cerar::cli::AddSweepCommand(app);
  cerar::cli::AddSimulateCommand(app);
  cerar::cli::AddParetoCommand(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "cerar: " << e.what() << " (see cerar --help)\n";
    return 2;
  } catch (const std::exception& e) {
    // cerar::Error subclasses, CliError, and anything unexpected: one line, exit 2.
    std::cerr << "cerar: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
