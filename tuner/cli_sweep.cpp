// `autotune sweep --config space.yaml --out table.csv`: measures every valid
// configuration (grid order; with search.parallel > 1 several at once, rows
// as they finish) and records a replay table. Trials go through the same
// scheduler as tuning. Rows are appended and flushed as they are measured to
// <out>.partial, renamed at the end, so a stopped sweep loses nothing.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <set>

#include <fmt/format.h>

#include "tuner/cli.hpp"
#include "tuner/cli_commands.hpp"
#include "tuner/cli_common.hpp"
#include "tuner/set_aside.hpp"
#include "tuner/interrupt.hpp"
#include "tuner/scheduler.hpp"
#include "workloads/csv_table.hpp"

namespace autotune {

std::function<int()> add_sweep_command(CLI::App& app) {
  struct Args {
    std::string config, out;
    int repeats = 1;
    std::size_t limit = 0;
    bool fresh = false;
  };
  auto args = std::make_shared<Args>();
  app.add_option("config,--config,-c", args->config, "the space.yaml whose space and workload to sweep")->required();
  app.add_option("--out,-o", args->out, "the CSV to write")->required();
  app.add_option("--repeats", args->repeats, "measurements per configuration (rows per configuration)")
      ->check(CLI::Range(1, 100));
  app.add_option("--limit", args->limit, "stop after this many configurations (0: all)");
  app.add_flag("--fresh", args->fresh,
               "when the CSV (or a stopped sweep's CSV.partial) exists, move it aside (NAME-1...) instead of refusing");
  return [args]() -> int {
    auto spec = load_spec_or_report(args->config);
    if (!spec) return kExitBadInput;
    auto all = spec->space.enumerate();
    if (!all) {
      std::cerr << "sweep: the space is too large to enumerate; narrow it\n";
      return kExitBadInput;
    }
    auto workload = make_workload_or_report(*spec);
    if (!workload) return kExitBadInput;
    auto executor = make_executor_or_report(*spec, *workload, "sweep");
    if (!executor) return kExitBadInput;
    TrialSettings settings = trial_settings(*spec);
    settings.log_root.clear();
    Scheduler scheduler(*executor, settings);
    install_interrupt_handler();

    const std::string partial = args->out + ".partial";
    // An earlier sweep's rows are measurements: never written over.
    if (std::filesystem::exists(args->out) || std::filesystem::exists(partial)) {
      if (!args->fresh) {
        std::cerr << fmt::format("sweep: {} already holds an earlier sweep's rows; nothing was started.\n"
                                 "  write elsewhere with --out, or keep it aside and start afresh:\n  {}\n",
                                 std::filesystem::exists(args->out) ? args->out : partial,
                                 command_line_with("--fresh", {"--fresh"}));
        return kExitBadInput;
      }
      for (const auto& [from, to] : set_aside({args->out, partial}))
        std::cerr << fmt::format("sweep: kept the earlier {} as {}\n", from.filename().string(), to.string());
    }
    std::FILE* f = std::fopen(partial.c_str(), "w");
    if (!f) {
      std::cerr << "sweep: cannot write " << partial << "\n";
      return kExitFailure;
    }
    const std::size_t n = args->limit > 0 ? std::min(args->limit, all->size()) : all->size();
    // Metrics columns are fixed by the first measurement that reports them;
    // the set is written as the header before any row.
    std::vector<std::string> header;
    for (const auto& p : spec->space.params()) header.push_back(p.name);
    const std::vector<std::string> metric_cols = {"throughput_rsd", "gpu_busy",        "compute_busy",
                                                  "vram_bytes",     "ram_bytes",       "warmup_seconds",
                                                  "measure_seconds", "data_wait_fraction", "starved_share",
                                                  "warmup_ahead",   "seconds"};
    header.push_back("status");
    header.push_back("throughput");
    for (const auto& m : metric_cols) header.push_back(m);
    write_csv_row(f, header);
    std::fflush(f);

    // Trial k (1-based) is configuration (k-1) / repeats of the grid.
    const int total = static_cast<int>(n) * args->repeats;
    int submitted = 0, finished = 0, cut = 0;
    std::string failure;
    while (failure.empty()) {
      while (!interrupted() && scheduler.has_room() && submitted < total) {
        ++submitted;
        scheduler.submit(submitted, spec->space.to_assignment((*all)[static_cast<std::size_t>((submitted - 1) / args->repeats)]));
      }
      if (scheduler.in_flight() == 0) break;
      auto d = scheduler.wait_any(std::chrono::milliseconds(100));
      if (!d) continue;
      const Outcome& o = d->outcome;
      if (cut_short_by_interrupt(o)) {
        ++cut;
        continue;  // killed by our own stop: not a measurement of this configuration
      }
      std::vector<std::string> row;
      for (const auto& [name, v] : d->config.items()) row.push_back(to_string(v));
      row.push_back(std::string(to_string(o.status)));
      row.push_back(o.ok() ? fmt::format("{:.6g}", o.throughput) : "");
      for (const auto& m : metric_cols) {
        auto v = m == "seconds" ? std::optional<double>(o.seconds) : o.metric(m);
        row.push_back(v ? fmt::format("{:.6g}", *v) : "");
      }
      write_csv_row(f, row);
      if (std::fflush(f) != 0 || std::ferror(f)) {
        failure = fmt::format("cannot write {}: {}", partial, std::strerror(errno));
        scheduler.stop_all();
        break;
      }
      ++finished;
      std::cerr << fmt::format("sweep {}/{}  {}  {}\n", finished, total, d->config.describe(),
                               o.ok() ? fmt::format("{:.1f} samples/s", o.throughput) : std::string(to_string(o.status)));
    }
    std::fclose(f);
    if (!failure.empty()) {
      std::cerr << "sweep: stopped: " << failure << "; the rows written before are kept\n";
      return kExitToolFailure;
    }
    if (interrupted()) {
      std::cerr << "sweep: interrupted; the rows measured so far are in " << partial
                << (cut > 0 ? fmt::format(" ({} trial{} cut short left out)", cut, cut == 1 ? "" : "s") : "") << "\n";
      return kExitInterrupted;
    }
    std::filesystem::rename(partial, args->out);
    std::cerr << "sweep: wrote " << args->out << "\n";
    return kExitOk;
  };
}

}  // namespace autotune
