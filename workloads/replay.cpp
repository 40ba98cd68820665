#include "workloads/replay.hpp"

#include "core/csv_table.hpp"
#include "core/metric_names.hpp"
#include "workloads/pipeline_knobs.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "workloads/workloads.hpp"

namespace autotune {
namespace {

std::optional<double> parse_number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  try {
    std::size_t used = 0;
    double x = std::stod(s, &used);
    if (used != s.size()) return std::nullopt;
    return x;
  } catch (...) {
    return std::nullopt;
  }
}

// Values as the space writes them; booleans accepted in a few spellings.
std::string canonical(std::string s) {
  std::string lower = s;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower == "true" || lower == "false") return lower;
  return s;
}

}  // namespace

ReplayTable::ReplayTable(const std::filesystem::path& file, const std::vector<std::string>& parameters,
                         const std::string& metric)
    : m_parameters(parameters) {
  CsvTable t;
  try {
    t = read_csv(file);
  } catch (const std::exception& e) {
    throw WorkloadConfigError(e.what());
  }
  auto column = [&](const std::string& name) -> std::optional<std::size_t> {
    for (std::size_t i = 0; i < t.header.size(); ++i)
      if (t.header[i] == name) return i;
    return std::nullopt;
  };
  std::vector<std::size_t> param_cols;
  for (const auto& p : parameters) {
    auto c = column(p);
    if (!c) throw WorkloadConfigError(file.string() + ":1: no column '" + p + "' for parameter " + p);
    param_cols.push_back(*c);
  }
  const auto metric_col = column(metric);
  if (!metric_col) throw WorkloadConfigError(file.string() + ":1: no column '" + metric + "'");
  const auto status_col = column("status");

  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const auto& row = t.rows[r];
    const std::string where = file.string() + ":" + std::to_string(t.row_lines[r]) + ": ";
    Outcome o;
    o.status = Status::ok;
    if (status_col && !row[*status_col].empty()) {
      auto s = parse_status(row[*status_col]);
      if (!s) throw WorkloadConfigError(where + "unknown status '" + row[*status_col] + "'");
      o.status = *s;
    }
    if (o.ok()) {
      auto x = parse_number(row[*metric_col]);
      if (!x || !std::isfinite(*x) || *x <= 0)
        throw WorkloadConfigError(where + "expected a positive number in column '" + metric + "', found '" +
                                  row[*metric_col] + "'");
      o.throughput = *x;
    } else {
      o.reason = "recorded as " + std::string(to_string(o.status));
    }
    for (std::size_t c = 0; c < row.size(); ++c) {
      if (c == *metric_col || (status_col && c == *status_col)) continue;
      if (std::find(param_cols.begin(), param_cols.end(), c) != param_cols.end()) continue;
      if (auto x = parse_number(row[c])) {
        // `seconds` is what the recorded trial took (sweep writes it), not a metric.
        if (t.header[c] == "seconds") o.seconds = *x;
        else o.metrics[t.header[c]] = *x;
      }
    }
    std::string k;
    for (std::size_t c : param_cols) k += canonical(row[c]) + '\x1f';
    m_rows[k].push_back(std::move(o));
  }
  if (m_rows.empty()) throw WorkloadConfigError(file.string() + ": the table has no rows");
}

std::string ReplayTable::key(const Assignment& config) const {
  std::string k;
  for (const auto& p : m_parameters) {
    const Value* v = config.find(p);
    k += (v ? canonical(to_string(*v)) : std::string()) + '\x1f';
  }
  return k;
}

const std::vector<Outcome>* ReplayTable::find(const Assignment& config) const {
  auto it = m_rows.find(key(config));
  return it == m_rows.end() ? nullptr : &it->second;
}

std::optional<Outcome> ReplayTable::mean(const Assignment& config) const {
  const auto* rows = find(config);
  if (!rows) return std::nullopt;
  std::vector<const Outcome*> ok;
  for (const auto& o : *rows)
    if (o.ok()) ok.push_back(&o);
  // A configuration that failed more often than it ran is reported failed.
  if (ok.size() * 2 < rows->size() || ok.empty()) {
    for (const auto& o : *rows)
      if (!o.ok()) return o;
  }
  Outcome m = *ok.front();
  double log_sum = 0;
  for (const auto* o : ok) log_sum += std::log(o->throughput);
  m.throughput = std::exp(log_sum / static_cast<double>(ok.size()));
  return m;
}

namespace {

class ReplayWorkload final : public Workload {
 public:
  ReplayWorkload(ReplayTable table, double noise, VirtualClock clock)
      : m_table(std::move(table)), m_noise(noise), m_clock(clock) {}
  std::string_view kind() const override { return "replay"; }
  std::optional<Outcome> expected(const Assignment& config) const override { return m_table.mean(config); }

  Outcome measure(const Assignment& config, const TrialContext& ctx) override {
    const auto* rows = m_table.find(config);
    if (!rows) return Outcome::failure(Status::error, "configuration not in the replay table: " + config.describe());
    std::mt19937_64 rng(ctx.seed * 0x9E3779B97F4A7C15ULL + 17);
    Outcome o = (*rows)[std::uniform_int_distribution<std::size_t>(0, rows->size() - 1)(rng)];
    if (o.ok() && m_noise > 0) o.throughput *= std::exp(std::normal_distribution<double>(0, m_noise)(rng));
    if (m_clock.on && o.ok()) {
      // The recorded level, measured again by the harness's rule on a virtual
      // clock (racing included), its windows scattering as recorded; start-up
      // as recorded when the table has it.
      VirtualClock clock = m_clock;
      if (o.seconds > 0 && o.get(metric::measure_seconds))
        clock.startup_s = std::max(0.0, o.seconds - *o.get(metric::measure_seconds));
      measure_on_virtual_clock(o, config, ctx, rng(), clock, o.get(metric::throughput_rsd).value_or(0));
    }
    return o;
  }

 private:
  ReplayTable m_table;
  double m_noise;
  VirtualClock m_clock;
};

}  // namespace

WorkloadInfo replay_workload_info() {
  WorkloadInfo info;
  info.kind = "replay";
  info.simulated = true;
  info.summary = "replays a CSV of recorded measurements (from `autotune sweep`), optionally with noise";
  info.options = {
      {"file", OptionType::path, std::nullopt, "the CSV table"},
      {"noise", OptionType::number, OptionValue{0.0}, "extra relative noise (log-normal sigma)", {}, 0.0, 1.0},
      {"metric", OptionType::string, OptionValue{std::string("throughput")}, "the column to maximise"},
  };
  for (auto& spec : virtual_clock_option_specs(
           "measure each recorded level again with the harness's rule (warm-up, windows, cap, racing) on a "
           "virtual clock, and report the seconds that would take",
           "with simulated_time: start-up seconds when the table does not record them"))
    info.options.push_back(std::move(spec));
  info.make = [](const Options& o, const WorkloadEnv& env) -> std::unique_ptr<Workload> {
    return std::make_unique<ReplayWorkload>(
        ReplayTable(o.get_string("file"), env.parameter_names, o.get_string("metric")), o.get_number("noise"),
        read_virtual_clock(o));
  };
  return info;
}

}  // namespace autotune
