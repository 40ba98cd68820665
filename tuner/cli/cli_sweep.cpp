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

#include "core/csv_table.hpp"
#include "core/metric_names.hpp"
#include "tuner/cli/cli.hpp"
#include "tuner/cli/cli_commands.hpp"
#include "tuner/cli/cli_common.hpp"
#include "tuner/run/driver.hpp"
#include "tuner/cli/set_aside.hpp"
#include "tuner/run/interrupt.hpp"
#include "tuner/run/scheduler.hpp"

namespace autotune {
namespace {

// The grid in order, each configuration `repeats` times.
class GridSource final : public TrialSource {
 public:
  GridSource(const std::vector<Config>& all, int repeats, int total) : m_all(all), m_repeats(repeats), m_total(total) {}
  std::optional<Proposal> next() override {
    if (m_submitted >= m_total) return std::nullopt;
    return Proposal{m_all[static_cast<std::size_t>(m_submitted++ / m_repeats)]};
  }

 private:
  const std::vector<Config>& m_all;
  int m_repeats, m_total, m_submitted = 0;
};

// A row per measured trial, flushed as it comes; a write that fails stops
// the sweep (the driver stops the trials in flight).
class RowWriter final : public TrialObserver {
 public:
  RowWriter(std::FILE* f, std::string path, const std::vector<std::string>& metric_cols, int total)
      : m_f(f), m_path(std::move(path)), m_metric_cols(metric_cols), m_total(total) {}
  void finished(const Finished& d) override {
    const Outcome& o = d.outcome;
    std::vector<std::string> row;
    for (const auto& [name, v] : d.config.items()) row.push_back(to_string(v));
    row.push_back(std::string(to_string(o.status)));
    row.push_back(o.ok() ? fmt::format("{:.6g}", o.throughput) : "");
    for (const auto& m : m_metric_cols) {
      auto v = m == "seconds" ? std::optional<double>(o.seconds) : o.metric(m);
      row.push_back(v ? fmt::format("{:.6g}", *v) : "");
    }
    write_csv_row(m_f, row);
    if (std::fflush(m_f) != 0 || std::ferror(m_f))
      throw std::runtime_error(fmt::format("cannot write {}: {}", m_path, std::strerror(errno)));
    ++m_finished;
    std::cerr << fmt::format("sweep {}/{}  {}  {}\n", m_finished, m_total, d.config.describe(),
                             o.ok() ? fmt::format("{:.1f} samples/s", o.throughput) : std::string(to_string(o.status)));
  }

 private:
  std::FILE* m_f;
  std::string m_path;
  const std::vector<std::string>& m_metric_cols;
  int m_total, m_finished = 0;
};

struct SweepArgs {
  std::string config, out;
  int repeats = 1;
  std::size_t limit = 0;
  bool fresh = false;
};

// An earlier sweep's rows are measurements: never written over. False when
// they are there and --fresh was not given (said on stderr).
bool set_earlier_sweep_aside(const SweepArgs& args, const std::string& partial) {
  if (!std::filesystem::exists(args.out) && !std::filesystem::exists(partial)) return true;
  if (!args.fresh) {
    std::cerr << fmt::format("sweep: {} already holds an earlier sweep's rows; nothing was started.\n"
                             "  write elsewhere with --out, or keep it aside and start afresh:\n  {}\n",
                             std::filesystem::exists(args.out) ? args.out : partial,
                             command_line_with("--fresh", {"--fresh"}));
    return false;
  }
  for (const auto& [from, to] : set_aside({args.out, partial}))
    std::cerr << fmt::format("sweep: kept the earlier {} as {}\n", from.filename().string(), to.string());
  return true;
}

int run_sweep_command(const SweepArgs& args) {
  auto spec = load_spec_or_report(args.config);
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

  const std::string partial = args.out + ".partial";
  if (!set_earlier_sweep_aside(args, partial)) return kExitBadInput;
  std::FILE* f = std::fopen(partial.c_str(), "w");
  if (!f) {
    std::cerr << "sweep: cannot write " << partial << "\n";
    return kExitFailure;
  }
  const std::size_t n = args.limit > 0 ? std::min(args.limit, all->size()) : all->size();
  // Metrics columns are fixed by the first measurement that reports them;
  // the set is written as the header before any row.
  std::vector<std::string> header;
  for (const auto& p : spec->space.params()) header.push_back(p.name);
  const std::vector<std::string> metric_cols = {
      metric::throughput_rsd.name,     metric::gpu_busy.name,           metric::compute_busy.name,
      metric::vram_bytes.name,         metric::ram_bytes.name,          metric::warmup_seconds.name,
      metric::measure_seconds.name,    metric::data_wait_fraction.name, metric::starved_share.name,
      metric::warmup_ahead.name,       "seconds"};
  header.push_back("status");
  header.push_back("throughput");
  for (const auto& m : metric_cols) header.push_back(m);
  write_csv_row(f, header);
  std::fflush(f);

  // Trial k (1-based) is configuration (k-1) / repeats of the grid.
  const int total = static_cast<int>(n) * args.repeats;
  GridSource grid(*all, args.repeats, total);
  RowWriter rows(f, partial, metric_cols, total);
  Driver driver(scheduler, spec->space, {&rows});
  std::string failure;
  try {
    driver.run(grid);
  } catch (const std::exception& e) {
    failure = e.what();
  }
  const int cut = driver.cut_short();
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
  std::filesystem::rename(partial, args.out);
  std::cerr << "sweep: wrote " << args.out << "\n";
  return kExitOk;
}

}  // namespace

std::function<int()> add_sweep_command(CLI::App& app) {
  auto args = std::make_shared<SweepArgs>();
  app.add_option("config,--config,-c", args->config, "the space.yaml whose space and workload to sweep")->required();
  app.add_option("--out,-o", args->out, "the CSV to write")->required();
  app.add_option("--repeats", args->repeats, "measurements per configuration (rows per configuration)")
      ->check(CLI::Range(1, 100));
  app.add_option("--limit", args->limit, "stop after this many configurations (0: all)");
  app.add_flag("--fresh", args->fresh,
               "when the CSV (or a stopped sweep's CSV.partial) exists, move it aside (NAME-1...) instead of refusing");
  return [args] { return run_sweep_command(*args); };
}

}  // namespace autotune
