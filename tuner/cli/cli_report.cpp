// `autotune report JOURNAL [--out report.html] [--text]`: a tuning run's
// journal as one self-contained HTML page, or as a table on the terminal.
// Works on a finished, interrupted or still-running run's journal.
#include <iostream>

#include "tuner/cli/cli.hpp"
#include "tuner/cli/cli_commands.hpp"
#include "tuner/cli/output_paths.hpp"
#include "tuner/record/journal_study.hpp"
#include "tuner/report/report_html.hpp"

namespace autotune {

std::function<int()> add_report_command(CLI::App& app) {
  struct Args {
    std::string journal, out = "report.html";
    bool text = false;
  };
  auto args = std::make_shared<Args>();
  app.add_option("journal", args->journal, "the run's journal (tuned.journal.jsonl)")->required();
  app.add_option("--out,-o", args->out, "where to write the page")->capture_default_str();
  app.add_flag("--text", args->text, "print the same facts as a table instead of writing the page");
  return [args]() -> int {
    try {
      if (args->text) {
        std::cout << render_report_text(read_journal_study(args->journal));
        return kExitOk;
      }
      // The page never replaces its journal, another journal, or a folder.
      const std::vector<std::string> problems =
          output_problems({{"--out", args->out}}, {{"the journal", args->journal}});
      for (const std::string& p : problems) std::cerr << "report: " << p << "\n";
      if (!problems.empty()) return kExitBadInput;
      std::string warning;
      write_report(args->journal, args->out, &warning);
      if (!warning.empty()) std::cerr << "report: " << warning << "\n";
      std::cerr << "report: wrote " << args->out << "\n";
      return kExitOk;
    } catch (const JournalError& e) {
      std::cerr << "report: " << e.what() << "\n";
      return kExitBadInput;
    } catch (const std::exception& e) {
      std::cerr << "report: " << e.what() << "\n";
      return kExitFailure;
    }
  };
}

}  // namespace autotune
