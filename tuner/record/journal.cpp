#include "tuner/record/journal.hpp"

#include "tuner/spec/spec.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <unordered_map>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace autotune {

nlohmann::json to_json(const Assignment& a) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, v] : a.items()) {
    if (is_int(v)) j[name] = std::get<std::int64_t>(v);
    else if (is_bool(v)) j[name] = std::get<bool>(v);
    else j[name] = std::get<std::string>(v);
  }
  return j;
}

Assignment assignment_from_json(const nlohmann::json& j) {
  // nlohmann's object keeps keys sorted; the caller maps back through the space.
  Assignment a;
  for (const auto& [name, v] : j.items()) {
    if (v.is_boolean()) a.set(name, Value{v.get<bool>()});
    else if (v.is_number_integer()) a.set(name, Value{v.get<std::int64_t>()});
    else if (v.is_string()) a.set(name, Value{v.get<std::string>()});
    else throw JournalError("configuration value of '" + name + "' is not an integer, boolean or string");
  }
  return a;
}

nlohmann::json to_json(const Outcome& o) {
  nlohmann::json j;
  j["status"] = std::string(to_string(o.status));
  if (o.ok()) j["throughput"] = o.throughput;
  nlohmann::json m = nlohmann::json::object();
  for (const auto& [k, v] : o.metrics)
    if (std::isfinite(v)) m[k] = v;
  j["metrics"] = m;
  j["reason"] = o.reason;
  j["seconds"] = o.seconds;
  if (!o.labels.empty()) j["labels"] = o.labels;
  return j;
}

Outcome outcome_from_json(const nlohmann::json& j) {
  Outcome o;
  auto s = parse_status(j.at("status").get<std::string>());
  if (!s) throw JournalError("unknown status '" + j.at("status").get<std::string>() + "'");
  o.status = *s;
  if (o.ok()) o.throughput = j.at("throughput").get<double>();
  if (j.contains("metrics"))
    for (const auto& [k, v] : j["metrics"].items()) o.metrics[k] = v.get<double>();
  o.reason = j.value("reason", "");
  if (j.contains("labels"))
    for (const auto& [k, v] : j["labels"].items()) o.labels[k] = v.get<std::string>();
  o.seconds = j.value("seconds", 0.0);
  return o;
}

JournalTally tally_trials(const std::filesystem::path& path) {
  JournalTally n;
  if (!std::filesystem::exists(path)) return n;
  for (const JournalTrial& t : read_journal(path).trials) {
    n.finished += t.outcome.has_value();
    n.ok += t.outcome && t.outcome->ok();
  }
  return n;
}

std::filesystem::path trial_log_folder(const std::filesystem::path& journal) {
  return std::filesystem::absolute(journal).parent_path() / (journal.stem().string() + ".trials");
}

namespace {

// A record's phase as the journal writes it (mark_phase) and reads it (phase_of).
void mark_phase(nlohmann::json& rec, Phase phase) {
  switch (phase) {
    case Phase::search: break;
    case Phase::confirm: rec["confirm"] = true; break;
    case Phase::explain: rec["explain"] = true; break;
    case Phase::remeasure_baseline: rec["remeasure"] = "baseline"; break;
    case Phase::remeasure_answer: rec["remeasure"] = "answer"; break;
    case Phase::control: rec["control"] = true; break;
  }
}

Phase phase_of(const nlohmann::json& rec) {
  if (rec.value("confirm", false)) return Phase::confirm;
  if (rec.value("explain", false)) return Phase::explain;
  if (rec.value("control", false)) return Phase::control;
  const std::string again = rec.value("remeasure", "");
  if (again == "baseline") return Phase::remeasure_baseline;
  if (again == "answer") return Phase::remeasure_answer;
  return Phase::search;
}

}  // namespace

namespace {
JournalAnswer answer_from_json(const nlohmann::json& rec) {
  JournalAnswer a;
  if (const auto c = rec.find("config"); c != rec.end() && c->is_object()) a.config = assignment_from_json(*c);
  a.rule = rec.value("rule", "");
  const auto get = [&rec](const char* key) -> std::optional<double> {
    const auto v = rec.find(key);
    if (v == rec.end() || !v->is_number()) return std::nullopt;
    return v->get<double>();
  };
  a.throughput = get("throughput");
  a.baseline_throughput = get("baseline_throughput");
  a.speedup = get("speedup");
  if (const auto i = rec.find("interval90"); i != rec.end() && i->is_array() && i->size() == 2) {
    a.low = (*i)[0].get<double>();
    a.high = (*i)[1].get<double>();
  }
  a.others_cores = get("others_cores");
  a.runs = rec.value("runs", 1);
  a.remeasured = rec.value("remeasured", false);
  if (const auto k = rec.find("kept_baseline_over"); k != rec.end() && k->is_object())
    a.kept_baseline_over = assignment_from_json(*k);
  a.time = rec.value("time", 0.0);
  return a;
}
}  // namespace

JournalContents read_journal(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw JournalError(path.string() + ": cannot open the journal");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());

  JournalContents out;
  std::unordered_map<int, std::size_t> index_of_trial;  // a finish record finds its start in O(1)
  std::size_t pos = 0;
  int line_no = 0;
  while (pos < text.size()) {
    const std::size_t end = text.find('\n', pos);
    const bool terminated = end != std::string::npos;
    const std::size_t next = terminated ? end + 1 : text.size();
    const bool last = next >= text.size();
    const std::string_view line(text.data() + pos, (terminated ? end : text.size()) - pos);
    const std::size_t line_start = pos;
    pos = next;
    ++line_no;
    if (line.empty()) {
      if (terminated) out.good_bytes = pos;
      continue;
    }
    nlohmann::json rec;
    try {
      rec = nlohmann::json::parse(line);
      if (!rec.is_object() || !rec.contains("type")) throw JournalError("not a journal record");
      if (!terminated) throw JournalError("the line does not end");  // the tuner died writing it
    } catch (const std::exception& e) {
      // Only the final line can be one the tuner died writing (or a crash's debris).
      if (last) {
        out.dropped_torn_line = true;
        out.good_bytes = line_start;
        break;
      }
      throw JournalError(path.string() + ":" + std::to_string(line_no) + ": corrupt record: " + e.what());
    }
    try {
      const std::string type = rec.at("type").get<std::string>();
      if (type == "header") {
        out.header = rec;
      } else if (type == "note") {
        out.notes.push_back(rec.value("text", ""));
      } else if (type == "recommended") {
        const auto& c = rec.at("config");
        out.recommendation = c.is_null() ? std::optional<Assignment>{} : std::optional<Assignment>{assignment_from_json(c)};
      } else if (type == "end") {
        JournalEnd e;
        e.reason = rec.value("reason", "");
        if (const auto b = rec.find("budget"); b != rec.end() && b->is_object()) {
          e.budget_trials = b->value("trials", 0);
          e.budget_seconds = b->value("seconds", 0.0);
        }
        e.time = rec.value("time", 0.0);
        e.failure = rec.value("failure", "");
        out.ends.push_back(std::move(e));
        // What was still running when the run ended was cut short with it.
        for (JournalTrial& t : out.trials)
          if (!t.outcome) t.cut_short = true;
      } else if (type == "answer") {
        out.answers.push_back(answer_from_json(rec));
      } else if (type == "start") {
        const int trial = rec.at("trial").get<int>();
        out.trials.push_back({trial, assignment_from_json(rec.at("config")), std::nullopt, phase_of(rec)});
        out.trials.back().start_time = rec.value("time", 0.0);
        out.trials.back().proposed_as = rec.value("proposed_as", "");
        const JournalTrial& now = out.trials.back();
        if (runs_again(now.phase, now.proposed_as)) {
          // A resumed run's re-run of a trial an earlier run left unfinished
          // (cut short, or the tuner was killed): the first such one with
          // this configuration and phase.
          for (JournalTrial& t : out.trials)
            if (&t != &now && !t.outcome && !t.superseded_by && t.config == now.config && t.phase == now.phase) {
              t.superseded_by = trial;
              t.cut_short = true;
              break;
            }
        }
        index_of_trial[trial] = out.trials.size() - 1;
      } else if (type == "finish") {
        const int trial = rec.at("trial").get<int>();
        auto it = index_of_trial.find(trial);
        if (it == index_of_trial.end()) {
          out.trials.push_back({trial, assignment_from_json(rec.at("config")), std::nullopt});
          it = index_of_trial.emplace(trial, out.trials.size() - 1).first;
        }
        JournalTrial& t = out.trials[it->second];
        t.phase = phase_of(rec);
        t.outcome = outcome_from_json(rec);
        t.finish_time = rec.value("time", 0.0);
      }
    } catch (const JournalError& e) {
      throw JournalError(path.string() + ":" + std::to_string(line_no) + ": " + e.what());
    } catch (const std::exception& e) {
      throw JournalError(path.string() + ":" + std::to_string(line_no) + ": bad record: " + e.what());
    }
    out.good_bytes = pos;
  }
  if (out.header.is_null()) throw JournalError(path.string() + ": no header record; not an autotune journal");
  return out;
}

JournalWriter::JournalWriter(const std::filesystem::path& path, bool fresh) : m_path(path) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  m_fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (m_fd < 0) throw JournalError(path.string() + ": cannot open for writing: " + std::strerror(errno));
  struct stat st {};
  if (fresh && ::fstat(m_fd, &st) == 0 && st.st_size > 0) {
    ::close(std::exchange(m_fd, -1));
    throw JournalError(path.string() + ": a new run's journal already holds records; nothing was written to it");
  }
}

std::optional<std::filesystem::path> cut_bad_tail(const std::filesystem::path& path, std::size_t good_bytes) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec || size <= good_bytes) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(good_bytes));
  std::string tail((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!tail.empty() && tail.back() != '\n') tail += '\n';
  const std::filesystem::path aside = path.string() + ".cut";
  const int out = ::open(aside.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (out < 0) throw JournalError(aside.string() + ": cannot keep the journal's bad tail: " + std::strerror(errno));
  const bool written = ::write(out, tail.data(), tail.size()) == static_cast<ssize_t>(tail.size()) && ::fsync(out) == 0;
  ::close(out);
  if (!written) throw JournalError(aside.string() + ": cannot keep the journal's bad tail: " + std::strerror(errno));
  if (::truncate(path.c_str(), static_cast<off_t>(good_bytes)) != 0)
    throw JournalError(path.string() + ": cannot cut the bad tail: " + std::strerror(errno));
  return aside;
}

JournalWriter::~JournalWriter() {
  if (m_fd >= 0) ::close(m_fd);
}

void JournalWriter::append(const nlohmann::json& record) {
  // A job's bytes that are not UTF-8 (a reason quoting its output) are
  // replaced, never a failure of the run.
  const std::string line = record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  const off_t before = ::lseek(m_fd, 0, SEEK_END);
  std::size_t done = 0;
  auto fail = [&](int err) {
    if (before >= 0 && ::ftruncate(m_fd, before) != 0) {
      // The reader drops a torn last line and a resume cuts it off.
    }
    throw JournalError(m_path.string() + ": cannot write the journal: " + std::strerror(err));
  };
  while (done < line.size()) {
    ssize_t n = ::write(m_fd, line.data() + done, line.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(errno);
    }
    if (n == 0) fail(ENOSPC);
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(m_fd) != 0 && errno != EINVAL) fail(errno);
}

void JournalWriter::header(const nlohmann::json& header) {
  nlohmann::json rec = header;
  rec["type"] = "header";
  append(rec);
}

void JournalWriter::note(const std::string& text, double time_s) {
  append({{"type", "note"}, {"text", text}, {"time", time_s}});
}

void JournalWriter::recommended(const std::optional<Assignment>& config, std::string_view strategy, double time_s) {
  append({{"type", "recommended"},
          {"strategy", std::string(strategy)},
          {"config", config ? to_json(*config) : nlohmann::json(nullptr)},
          {"time", time_s}});
}

std::string unfinished_status(const JournalTrial& t) {
  if (t.superseded_by) return fmt::format("run again as trial {}", *t.superseded_by);
  return t.cut_short ? "cut short" : "running";
}

void JournalWriter::answered(const JournalAnswer& a) {
  nlohmann::json rec = {{"type", "answer"},
                        {"config", a.config ? to_json(*a.config) : nlohmann::json(nullptr)},
                        {"rule", a.rule},
                        {"runs", a.runs},
                        {"remeasured", a.remeasured},
                        {"time", a.time}};
  const auto put = [&rec](const char* key, const std::optional<double>& v) {
    if (v) rec[key] = *v;
  };
  put("throughput", a.throughput);
  put("baseline_throughput", a.baseline_throughput);
  put("speedup", a.speedup);
  if (a.low && a.high) rec["interval90"] = {*a.low, *a.high};
  put("others_cores", a.others_cores);
  if (a.kept_baseline_over) rec["kept_baseline_over"] = to_json(*a.kept_baseline_over);
  append(rec);
}

void JournalWriter::ended(const JournalEnd& end) {
  nlohmann::json rec = {{"type", "end"},
                        {"reason", end.reason},
                        {"budget", {{"trials", end.budget_trials}, {"seconds", end.budget_seconds}}},
                        {"time", end.time}};
  if (!end.failure.empty()) rec["failure"] = end.failure;
  append(rec);
}

void JournalWriter::started(int trial, const Assignment& config, double time_s, Phase phase,
                            std::string_view proposed_as) {
  nlohmann::json rec = {{"type", "start"}, {"trial", trial}, {"config", to_json(config)}, {"time", time_s}};
  mark_phase(rec, phase);
  if (!proposed_as.empty()) rec["proposed_as"] = std::string(proposed_as);
  append(rec);
}

void JournalWriter::finished(int trial, const Assignment& config, const Outcome& outcome, double time_s,
                             Phase phase) {
  nlohmann::json rec = to_json(outcome);
  rec["type"] = "finish";
  rec["trial"] = trial;
  rec["config"] = to_json(config);
  rec["time"] = time_s;
  mark_phase(rec, phase);
  append(rec);
}

namespace {
nlohmann::json initial_json(const Spec& spec) {
  nlohmann::json out = nlohmann::json::array();
  for (const Config& c : spec.search.initial) out.push_back(to_json(spec.space.to_assignment(c)));
  return out;
}
}  // namespace

namespace {
// Option values as a JSON object, less the key `leave_out`.
nlohmann::json options_json(const Options& given, std::string_view leave_out = {}) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, value] : given.values())
    if (key != leave_out) std::visit([&, k = key](const auto& v) { out[k] = v; }, value);
  return out;
}
}  // namespace

nlohmann::json workload_identity(const Spec& spec) {
  // `warm`: how trials start, not what they measure.
  return {{"kind", spec.workload.kind}, {"options", options_json(spec.workload.options, "warm")}};
}

std::optional<std::string> workload_change(const nlohmann::json& header, const Spec& spec) {
  const auto was = header.find("workload_identity");
  if (was == header.end()) return std::nullopt;  // a journal from before it was recorded
  const nlohmann::json now = workload_identity(spec);
  if (*was == now) return std::nullopt;
  const auto shown = [](const nlohmann::json* v) {
    if (!v) return std::string("(not set)");
    return v->is_string() ? "'" + v->get<std::string>() + "'" : v->dump();
  };
  if (was->value("kind", "") != now.value("kind", ""))
    return fmt::format("the workload's kind was {}, now {}", shown(&(*was)["kind"]), shown(&now["kind"]));
  std::vector<std::string> changes;
  const nlohmann::json& a = (*was)["options"];
  const nlohmann::json& b = now["options"];
  std::set<std::string> keys;
  for (auto it = a.begin(); a.is_object() && it != a.end(); ++it) keys.insert(it.key());
  for (auto it = b.begin(); it != b.end(); ++it) keys.insert(it.key());
  for (const std::string& k : keys) {
    const nlohmann::json* x = a.is_object() && a.contains(k) ? &a[k] : nullptr;
    const nlohmann::json* y = b.contains(k) ? &b[k] : nullptr;
    if (!x || !y || *x != *y) changes.push_back(fmt::format("`{}` was {}, now {}", k, shown(x), shown(y)));
  }
  std::string out;
  for (const std::string& c : changes) out += (out.empty() ? "" : "; ") + c;
  return out;
}

nlohmann::json journal_header(const Spec& spec) {
  nlohmann::json params = nlohmann::json::array();
  for (const auto& p : spec.space.params()) {
    nlohmann::json values = nlohmann::json::array();
    for (const auto& v : p.values) values.push_back(to_string(v));
    params.push_back({{"name", p.name}, {"scale", std::string(to_string(p.scale))}, {"values", values}});
  }
  nlohmann::json header = {{"version", 1},
          {"space_hash", spec.space.hash()},
          {"spec_file", spec.file.string()},
          {"workload", spec.workload.kind},
          {"workload_identity", workload_identity(spec)},
          {"parameters", params},
          {"rules", spec.space.rules().rules()},
          {"rule_facts", spec.space.facts_in_rules()},  // what `ranks`, `cores` in them were
          {"strategy", spec.search.strategy},
          {"seed", spec.search.seed},
          {"budget", {{"trials", spec.search.budget_trials}, {"seconds", spec.search.budget_seconds}}},
          {"initial", initial_json(spec)},  // the baseline, for the report
          {"confirm", spec.search.confirm},
          {"explain", spec.search.explain},
          {"remeasure", remeasure_rounds(spec)},
          {"effective_batch", spec.effective_batch ? nlohmann::json(*spec.effective_batch) : nlohmann::json()},
          {"ranks", spec.ranks},
          {"limits", {{"vram_bytes", spec.limits.vram_bytes}, {"ram_bytes", spec.limits.ram_bytes}}}};
  // The strategy's options, where the spec gives any (`search.options`).
  if (const Options given = spec.search.options_of(spec.search.strategy); !given.values().empty())
    header["strategy_options"] = options_json(given);
  return header;
}

}  // namespace autotune
