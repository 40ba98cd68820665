// Loads and validates a space.yaml into a Spec: parses the YAML and reads
// the sections in order (tuner/spec/spec_sections.hpp) through one reader that
// collects every problem (never thrown, never stopping at the first), located
// by file, line and column; the caller prints them all.
#include <fstream>
#include <optional>
#include <sstream>
#include <system_error>

#include "search/strategy.hpp"
#include "tuner/spec/spec.hpp"
#include "tuner/spec/spec_sections.hpp"
#include "tuner/spec/yaml_reader.hpp"

namespace autotune {
namespace fs = std::filesystem;

namespace {

constexpr int kDefaultBudgetTrials = 30;

const std::vector<std::string> kTopKeys = {"workload", "space",    "constraints", "objective",
                                           "search",   "executor", "output"};

// The whole file once it parsed as YAML.
void read_sections(YamlReader& r, const YAML::Node& root, const fs::path& base_dir, const ExecutorKinds& kinds,
                   Spec& spec) {
  if (!root.IsDefined() || root.IsNull()) {
    r.fail({1, 1}, "", "a map with workload: and space:", "an empty file");
    return;
  }
  if (!root.IsMap()) {
    r.fail(loc_of(root, {1, 1}), "", "a map with workload: and space: at the top level", describe(root));
    return;
  }
  spec.file = r.file();
  Entries top = r.read_map(root, "", &kTopKeys);
  // The space first: rules, the initial configurations and the workload
  // factory all need its parameters.
  const Entry* space_entry = find(top, "space");
  if (!space_entry) r.fail({1, 1}, "space", "a 'space' section (the parameters to tune)", "none");
  const SpaceRead space = read_space(r, space_entry, find(top, "constraints"), spec.space, spec.limits);
  spec.effective_batch = space.effective_batch;
  spec.ranks = space.ranks;
  if (const Entry* e = find(top, "workload")) read_workload(r, *e, space, base_dir, spec.workload);
  else r.fail({1, 1}, "workload", "a 'workload' section (e.g. {kind: synthetic})", "none");
  if (const Entry* e = find(top, "objective")) read_objective(r, *e, spec.objective);
  // Without `search.strategy`: bo when it is built in, else random.
  spec.search.strategy = find_strategy("bo") ? "bo" : "random";
  spec.search.budget_trials = kDefaultBudgetTrials;
  if (const Entry* e = find(top, "search")) read_search(r, *e, space, spec.space, spec.search);
  read_executor(r, find(top, "executor"), kinds, base_dir, spec.executor);
  read_output(r, find(top, "output"), spec.output);
}

// The document, or nothing after a located syntax error.
std::optional<YAML::Node> parse(YamlReader& r, const std::string& text) {
  try {
    return YAML::Load(text);
  } catch (const YAML::ParserException& ex) {
    Loc at{ex.mark.line >= 0 ? ex.mark.line + 1 : 0, ex.mark.column >= 0 ? ex.mark.column + 1 : 0};
    r.fail(at, "", "valid YAML", "a syntax error: " + ex.msg);
  } catch (const YAML::Exception& ex) {
    r.fail({}, "", "valid YAML", ex.what());
  }
  return std::nullopt;
}

SpecLoadResult load(const std::string& text, const std::string& name, const fs::path& base_dir,
                    const ExecutorKinds& kinds) {
  YamlReader r(name);
  Spec spec;
  if (auto root = parse(r, text)) read_sections(r, *root, base_dir, kinds, spec);
  SpecLoadResult result;
  result.errors = r.take_errors();
  if (result.errors.empty()) result.spec = std::move(spec);
  return result;
}

}  // namespace

SpecLoadResult load_spec_text(const std::string& text, const std::string& name, const fs::path& base_dir,
                              const ExecutorKinds& kinds) {
  std::error_code ec;
  fs::path base = base_dir.empty() ? fs::current_path(ec) : fs::absolute(base_dir, ec);
  if (ec) base = base_dir;
  return load(text, name, base, kinds);
}

SpecLoadResult load_spec_file(const fs::path& path, const ExecutorKinds& kinds) {
  std::error_code ec;
  if (!fs::exists(path, ec) || fs::is_directory(path, ec)) {
    SpecLoadResult r;
    SpecError e;
    e.file = path.string();
    e.expected = "a readable spec file";
    e.found = fs::is_directory(path, ec) ? "a directory" : "no such file";
    r.errors.push_back(std::move(e));
    return r;
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) {
    SpecLoadResult r;
    SpecError e;
    e.file = path.string();
    e.expected = "a readable spec file";
    e.found = "a file that cannot be read";
    r.errors.push_back(std::move(e));
    return r;
  }
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  auto r = load_spec_text(text.str(), path.string(), dir, kinds);
  if (r.spec) r.spec->file = path;
  return r;
}

}  // namespace autotune
