// `autotune report` end to end: real runs (the cpu workload; the synthetic
// one, whose large batches run out of device or host memory) rendered in
// headless Chromium, a journal cut short, bad input, the --text table.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "../../support/chromium_util.hpp"
#include "../../support/proc_util.hpp"
#include "tuner/record/emitter.hpp"
#include "tuner/report/report_html.hpp"

namespace autotune {
namespace {

namespace fs = std::filesystem;
using testing::ScratchDir;
using testing::ShellRun;
using testing::run_shell;

struct CliRun {
  int status = -1;
  std::string out, err;
};

CliRun run_cli(const ScratchDir& dir, const std::string& args) {
  const auto err = dir.path() / "stderr.txt";
  const std::string cmd = "cd '" + dir.path().string() + "' && '" + AUTOTUNE_BINARY + "' " + args + " 2>'" +
                          err.string() + "'";
  const ShellRun run = run_shell(cmd);
  CliRun r;
  r.status = run.status;
  r.out = run.out;
  r.err = dir.read("stderr.txt");
  return r;
}

// The synthetic workload over configs/synthetic.yaml's space: its 512-sample
// batches run out of device memory, its many-worker ones out of host memory
// or over the RAM limit (invalid).
std::string synthetic_spec(int trials) {
  return "workload: {kind: synthetic, profile: balanced, noise: 0.02, seed: 3}\n"
         "space:\n"
         "  batch_size:      {values: [16, 32, 64, 128, 256, 512]}\n"
         "  num_workers:     {range: [0, 16]}\n"
         "  prefetch_factor: {values: [1, 2, 4, 8]}\n"
         "  pin_memory:      {values: [false, true]}\n"
         "  precision:       {values: [fp32, tf32, fp16, bf16]}\n"
         "  grad_accum:      {pow2: [1, 8]}\n"
         "constraints: {vram: 70GiB, ram: 32GiB, rules: [\"batch_size * grad_accum <= 1024\"]}\n"
         "search:\n"
         "  strategy: random\n"
         "  budget: {trials: " + std::to_string(trials) + "}\n"
         "  seed: 7\n"
         "  confirm: 2\n"
         "  initial: [{batch_size: 64, num_workers: 0, prefetch_factor: 2, pin_memory: false, precision: fp32, "
         "grad_accum: 1}]\n"
         "output: {tuned: tuned.yaml, journal: tuned.journal.jsonl}\n";
}

// A few short trials of the cpu workload (real threads, real measurements): seconds.
std::string cpu_spec() {
  return "workload: {kind: cpu, width: 64, depth: 1, warmup_seconds: 0.3, window_seconds: 0.1, max_seconds: 0.8, "
         "timeout: 60s}\n"
         "space:\n"
         "  batch_size:      {values: [32, 128]}\n"
         "  num_workers:     {range: [0, 2]}\n"
         "  prefetch_factor: {values: [2]}\n"
         "  precision:       {values: [fp32]}\n"
         "search:\n"
         "  strategy: random\n"
         "  budget: {trials: 4}\n"
         "  seed: 1\n"
         "  initial: [{batch_size: 32, num_workers: 0, prefetch_factor: 2, precision: fp32}]\n"
         "output: {tuned: tuned.yaml, journal: tuned.journal.jsonl}\n";
}

// Where the screenshots go: $AUTOTUNE_REPORT_SCREENSHOTS (to look at them),
// else the scratch folder.
fs::path screenshot_path(const ScratchDir& dir, const std::string& name) {
  const char* keep = std::getenv("AUTOTUNE_REPORT_SCREENSHOTS");
  if (!keep) return dir.path() / name;
  fs::create_directories(keep);
  return fs::path(keep) / name;
}

// Loads the page in Chromium: it must run its script (the marker), log
// nothing to the console, show every panel, and screenshot to a real image.
void expect_renders(const ScratchDir& dir, const fs::path& html, const std::string& shot,
                    const std::vector<std::string>& knobs) {
  const testing::RenderedPage page = testing::render_page(html, screenshot_path(dir, shot), dir.path());
  EXPECT_NE(page.dom.find("data-rendered=\"yes\""), std::string::npos) << "the page's script did not run to its end";
  EXPECT_EQ(page.console, "") << "the page logged to the console";
  EXPECT_TRUE(page.screenshot) << "no screenshot";
  for (const char* id : kReportPanels)
    EXPECT_NE(page.dom.find(std::string("<section id=\"") + id + "\""), std::string::npos) << "panel " << id;
  for (const auto& k : knobs)
    EXPECT_NE(page.dom.find("<section id=\"knob-" + k + "\""), std::string::npos) << "knob panel " << k;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Nothing in the page may be fetched: no external script, style or image.
void expect_self_contained(const std::string& html) {
  for (const char* fetch : {"src=", "<link", "@import", "url(http"})
    EXPECT_EQ(html.find(fetch), std::string::npos) << "the page fetches something: " << fetch;
}

TEST(Report, CpuWorkloadRunRendersInChromiumWithEveryPanel) {
  AUTOTUNE_REQUIRE_CHROMIUM();
  ScratchDir dir;
  dir.write("space.yaml", cpu_spec(), false);
  const CliRun tune = run_cli(dir, "--config space.yaml --quiet --report");
  ASSERT_EQ(tune.status, 0) << tune.err;
  ASSERT_TRUE(fs::exists(dir.path() / "tuned.report.html")) << "--report writes the page beside tuned.yaml";
  const std::string html = read_text(dir.path() / "tuned.report.html");
  expect_self_contained(html);
  EXPECT_NE(html.find("<svg"), std::string::npos) << "gnuplot drew the plots";
  EXPECT_NE(html.find("waiting for data"), std::string::npos) << "the cpu workload reports where the time went";
  EXPECT_NE(html.find("Finished: "), std::string::npos);
  expect_renders(dir, dir.path() / "tuned.report.html", "report_cpu.png",
                 {"batch_size", "num_workers", "prefetch_factor", "precision"});
}

TEST(Report, RunWithFailuresRendersInChromiumWithTheFailureMap) {
  AUTOTUNE_REQUIRE_CHROMIUM();
  ScratchDir dir;
  dir.write("space.yaml", synthetic_spec(60), false);
  ASSERT_EQ(run_cli(dir, "--config space.yaml --quiet").status, 0);
  const CliRun report = run_cli(dir, "report tuned.journal.jsonl --out report.html");
  ASSERT_EQ(report.status, 0) << report.err;
  const std::string html = read_text(dir.path() / "report.html");
  expect_self_contained(html);
  for (const char* status : {"status-oom", "status-invalid"})
    EXPECT_NE(html.find(status), std::string::npos) << status << " in the failure map's table";
  EXPECT_NE(html.find("over the limit"), std::string::npos) << "the trials' own reasons";
  EXPECT_NE(html.find("torch_dataloader"), std::string::npos) << "the exports";
  EXPECT_NE(html.find("the baseline"), std::string::npos) << "the speedup";
  expect_renders(dir, dir.path() / "report.html", "report_failures.png",
                 {"batch_size", "num_workers", "prefetch_factor", "pin_memory", "precision", "grad_accum"});
}

TEST(Report, AnswerAndBaselineAreTunedYamls) {
  ScratchDir dir;
  dir.write("space.yaml", synthetic_spec(30), false);
  ASSERT_EQ(run_cli(dir, "--config space.yaml --quiet --strategy bo").status, 0);
  const JournalStudy s = read_journal_study(dir.path() / "tuned.journal.jsonl");
  EXPECT_TRUE(s.state.complete);
  EXPECT_EQ(s.state.stopped_by, RunEnd::budget);
  EXPECT_FALSE(s.result.confirmations.empty()) << "confirm: 2 re-measured";
  // The emitter's own text for the rebuilt study, against what the run wrote.
  const std::string ours = render_tuned_yaml(s.spec, s.result);
  const std::string theirs = dir.read("tuned.yaml");
  for (const char* key : {"\nbest:", "\nbaseline:", "\nconfirm:", "\nexports:"}) {
    const auto a = ours.find(key), b = theirs.find(key);
    ASSERT_NE(b, std::string::npos) << key;
    ASSERT_NE(a, std::string::npos) << key;
    EXPECT_EQ(ours.substr(a, ours.find("\n", a + 1) - a), theirs.substr(b, theirs.find("\n", b + 1) - b)) << key;
  }
}

// The run journals its strategy's recommendation; the report takes the
// answer from it, without replaying the strategy (which a later build may
// not even have).
TEST(Report, TheAnswerComesFromTheJournaledRecommendationNotAReplay) {
  ScratchDir dir;
  dir.write("space.yaml", synthetic_spec(30), false);
  ASSERT_EQ(run_cli(dir, "--config space.yaml --quiet --strategy bo").status, 0);
  const auto journal = dir.path() / "tuned.journal.jsonl";
  const JournalStudy run = read_journal_study(journal);
  ASSERT_TRUE(run.result.best.has_value());
  std::vector<std::string> lines;
  int recommended = 0;
  {
    std::ifstream in(journal);
    for (std::string line; std::getline(in, line);) {
      auto rec = nlohmann::json::parse(line);
      if (rec["type"] == "recommended") {
        ++recommended;
        EXPECT_EQ(rec["strategy"], "bo");
        EXPECT_TRUE(rec["config"].is_object());
      }
      if (rec["type"] == "header") rec["strategy"] = "retired";  // a strategy this build does not know
      if (rec["type"] == "answer") continue;  // a journal from before the answer record: the rule decides
      lines.push_back(rec.dump());
    }
  }
  ASSERT_EQ(recommended, 1);
  auto write = [&](const std::filesystem::path& to, bool keep_recommendation) {
    std::ofstream out(to);
    for (const auto& l : lines)
      if (keep_recommendation || l.find("\"recommended\"") == std::string::npos) out << l << "\n";
  };
  write(dir.path() / "kept.jsonl", true);
  const JournalStudy kept = read_journal_study(dir.path() / "kept.jsonl");
  EXPECT_EQ(kept.result.best, run.result.best);
  EXPECT_NE(kept.answer_rule.find("the retired strategy's recommendation"), std::string::npos) << kept.answer_rule;
  write(dir.path() / "older.jsonl", false);  // an older journal: no record, and no strategy to replay
  const JournalStudy older = read_journal_study(dir.path() / "older.jsonl");
  EXPECT_NE(older.answer_rule.find("the fastest measured"), std::string::npos) << older.answer_rule;
}

// A real journal cut as a run that is still going leaves it: a trial started
// and never finished, and a last line half written.
TEST(Report, JournalCutShortRendersAndSaysSo) {
  ScratchDir dir;
  dir.write("space.yaml", synthetic_spec(12), false);
  ASSERT_EQ(run_cli(dir, "--config space.yaml --quiet").status, 0);
  std::istringstream full(dir.read("tuned.journal.jsonl"));
  std::string cut, line;
  for (int i = 0; i < 9 && std::getline(full, line); ++i) cut += line + "\n";  // header + 4 trials
  cut += R"({"type":"start","trial":99,"config":{"batch_size":128,"num_workers":4,"prefetch_factor":2,)"
         R"("pin_memory":true,"precision":"bf16","grad_accum":1},"time":0.2})" "\n";
  cut += R"({"type":"finish","trial":98,"config":{"batch_si)";
  dir.write("cut.jsonl", cut, false);

  const CliRun report = run_cli(dir, "report cut.jsonl --out cut.html");
  ASSERT_EQ(report.status, 0) << report.err;
  const std::string html = dir.read("cut.html");
  EXPECT_NE(html.find("Not finished: "), std::string::npos);
  EXPECT_NE(html.find("torn"), std::string::npos);
  EXPECT_NE(html.find("never finished (trial 99)"), std::string::npos);
  EXPECT_NE(html.find("status-running"), std::string::npos) << "the unfinished trial is in the table";

  const CliRun text = run_cli(dir, "report cut.jsonl --text");
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("NOT FINISHED: cut short"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("torn"), std::string::npos);

  if (!testing::chromium_binary().empty())
    expect_renders(dir, dir.path() / "cut.html", "report_cut.png",
                   {"batch_size", "num_workers", "prefetch_factor", "pin_memory", "precision", "grad_accum"});
}

TEST(Report, BadInputIsOneLineExitTwoAndNothingWritten) {
  ScratchDir dir;
  CliRun r = run_cli(dir, "report missing.jsonl --out out.html");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("missing.jsonl: cannot open the journal"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;

  dir.write("space.yaml", synthetic_spec(6), false);
  ASSERT_EQ(run_cli(dir, "--config space.yaml --quiet").status, 0);
  std::string journal = dir.read("tuned.journal.jsonl");
  journal.insert(journal.find('\n') + 1, "{not json\n");  // a corrupt middle line
  dir.write("corrupt.jsonl", journal, false);
  for (const char* args : {"report corrupt.jsonl --out out.html", "report corrupt.jsonl --text"}) {
    r = run_cli(dir, args);
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_NE(r.err.find("corrupt.jsonl:2: corrupt record"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.out, "") << args;
  }
  EXPECT_FALSE(fs::exists(dir.path() / "out.html"));
  for (const auto& e : fs::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().filename().string().find(".out.html.tmp"), std::string::npos) << "a temp file left behind";
}

TEST(Report, TextStatesTheSameFacts) {
  ScratchDir dir;
  dir.write("space.yaml", synthetic_spec(40), false);
  ASSERT_EQ(run_cli(dir, "--config space.yaml --quiet").status, 0);
  const CliRun r = run_cli(dir, "report tuned.journal.jsonl --text");
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* fact : {"state:    finished: the trial budget (40) was spent", "answer:   batch_size=",
                           "x the baseline", "progress: best", "knobs:", "failures:", "oom", "trials:",
                           "exports:\n  torch_dataloader:"})
    EXPECT_NE(r.out.find(fact), std::string::npos) << fact << "\n" << r.out;
}

}  // namespace
}  // namespace autotune
