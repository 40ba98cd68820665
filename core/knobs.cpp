#include "core/knobs.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>

namespace autotune {

const std::vector<KnobInfo>& knob_table() {
  static const std::vector<KnobInfo> table = {
      {"batch_size", MemoryUse::both, "", 0, "activations on the device, batch buffers on the host",
       KnobDomain::count, "samples per micro-batch", 0.0, 2},
      // The surrogate reads workers as log(workers + 2): the loader's rate
      // grows in proportion to its processes, and log-throughput, the GP's
      // target, then grows linearly in that coordinate up to the cores (or
      // the wall) instead of bending. The offset 2 keeps 0 (inline loading)
      // near 1 worker and leaves the top of the range apart (offset 1
      // crowded 9-16 workers together and lost at 30 trials on a host wall
      // at 10 workers; bench/failure_efficiency.cpp).
      {"num_workers", MemoryUse::host, "", 1, "a process each; 0 = loading inline", KnobDomain::zero_or_more,
       "loader processes; 0 loads inline", 2.0, 1},
      {"prefetch_factor", MemoryUse::host, "num_workers", 2, "batches queued per worker", KnobDomain::count,
       "batches queued per worker"},
      {"pin_memory", MemoryUse::host, "", 3, "page-locked staging buffers", KnobDomain::boolean,
       "page-locked staging buffers or not"},
      {"precision", MemoryUse::device, "", 4, "fp32 >= tf32 >= fp16 = bf16; a card may lack one",
       KnobDomain::precision, "the training precision", 0.0, 0, true},
      {"grad_accum", MemoryUse::none, "", 5, "repeats the same micro-batch", KnobDomain::count,
       "micro-batches per optimizer step", 0.0, 0, true},
      // Per rank: each process of a data-parallel job has its own pool, and
      // they all share the node's cores with the loaders' workers.
      {"threads", MemoryUse::none, "", 6, "intra-op threads of each rank (torch.set_num_threads)", KnobDomain::count,
       "intra-op threads per rank", 0.0, 0, false, "OMP_NUM_THREADS"},
  };
  return table;
}

const std::vector<std::vector<std::string_view>>& memory_products() {
  static const std::vector<std::vector<std::string_view>> products = {
      {"num_workers", "prefetch_factor", "batch_size"},
      {"num_workers", "prefetch_factor", "batch_size", "pin_memory"},
      {"batch_size", "pin_memory"},
      {"batch_size", "precision"},
  };
  return products;
}

const KnobInfo* find_knob(std::string_view name) {
  for (const auto& k : knob_table())
    if (k.name == name) return &k;
  return nullptr;
}

std::string knob_env_name(std::string_view name) {
  std::string out = "AUTOTUNE_";
  for (unsigned char c : name) out += std::isalnum(c) ? static_cast<char>(std::toupper(c)) : '_';
  return out;
}

const std::vector<std::string_view>& tool_env_names() {
  // Set in workloads/command.cpp (TRIAL, TRIAL_START, RESULT, STOP_BELOW),
  // proc/subprocess.cpp (WARM_DIR) and tuner/run/builtin_worker.cpp
  // (WORKER_*); read in workloads/cuda_workload_info.cpp (CUDA_MODULE) and
  // skipped by python/autotune_trial/_params.py.
  static const std::vector<std::string_view> names = {
      "AUTOTUNE_TRIAL",           "AUTOTUNE_TRIAL_START",    "AUTOTUNE_RESULT",
      "AUTOTUNE_STOP_BELOW",      "AUTOTUNE_WARM_DIR",       "AUTOTUNE_WORKER_WORKLOAD",
      "AUTOTUNE_WORKER_VALUES",   "AUTOTUNE_WORKER_CONTEXT", "AUTOTUNE_CUDA_MODULE"};
  return names;
}

const std::vector<std::string_view>& known_precisions() {
  static const std::vector<std::string_view> names = {"fp32", "tf32", "fp16", "bf16"};
  return names;
}

std::string knob_domain_violation(const KnobInfo& k, const Value& v) {
  switch (k.domain) {
    case KnobDomain::count:
    case KnobDomain::zero_or_more: {
      const std::int64_t min = k.domain == KnobDomain::count ? 1 : 0;
      const auto* n = std::get_if<std::int64_t>(&v);
      if (n && *n >= min) return {};
      return "an integer >= " + std::to_string(min) + " (" + std::string(k.name) + ": " + std::string(k.meaning) + ")";
    }
    case KnobDomain::boolean:
      if (std::holds_alternative<bool>(v)) return {};
      return "true or false (" + std::string(k.name) + ": " + std::string(k.meaning) + ")";
    case KnobDomain::precision: {
      const auto* name = std::get_if<std::string>(&v);
      const auto& known = known_precisions();
      if (name && std::find(known.begin(), known.end(), *name) != known.end()) return {};
      std::string list;
      for (auto p : known) list += (list.empty() ? "" : ", ") + std::string(p);
      return "one of " + list + " (" + std::string(k.name) + ": " + std::string(k.meaning) + ")";
    }
  }
  return {};
}

std::optional<double> precision_bytes(std::string_view name) {
  if (name == "fp32" || name == "float32" || name == "32" || name == "32-true") return 4.0;
  if (name == "tf32") return 3.96;
  if (name == "fp16" || name == "bf16" || name == "float16" || name == "bfloat16" || name == "16" ||
      name == "16-mixed" || name == "bf16-mixed" || name == "half")
    return 2.0;
  if (name == "fp8" || name == "int8") return 1.0;
  return std::nullopt;
}

std::optional<double> precision_rank(std::string_view name) {
  if (name == "tf32") return 0.5;
  const auto bytes = precision_bytes(name);
  if (!bytes) return std::nullopt;
  return std::log2(4.0 / *bytes);
}

std::vector<KnobMemory> knob_memory(const SearchSpace& space) {
  std::vector<KnobMemory> out(space.dims());
  for (std::size_t d = 0; d < space.dims(); ++d) {
    const Parameter& p = space.param(d);
    const KnobInfo* k = find_knob(p.name);
    KnobMemory& m = out[d];
    m.use = p.memory != MemoryUse::unknown ? p.memory : k ? k->memory : MemoryUse::unknown;
    if (k && !k->needs_positive.empty())
      if (auto other = space.index_of(k->needs_positive); other && space.param(*other).scale != Scale::categorical)
        m.needs_positive = other;
    for (std::size_t v = 0; v < p.values.size(); ++v) {
      const Value& val = p.values[v];
      double s = std::nan("");
      if (!is_string(val)) {
        s = to_number(val);
      } else if (p.memory == MemoryUse::unknown && p.name == "precision") {
        if (auto b = precision_bytes(std::get<std::string>(val))) s = *b;
      } else {
        // A declared categorical knob: its values are listed in order of
        // increasing memory (space.yaml, `memory:`).
        s = static_cast<double>(v);
      }
      m.size.push_back(s);
    }
  }
  return out;
}

bool knob_is_active(const Assignment& a, std::string_view name) {
  const KnobInfo* k = find_knob(name);
  if (!k || k->needs_positive.empty()) return true;
  const Value* v = a.find(k->needs_positive);
  return !v || to_number(*v) > 0;
}

}  // namespace autotune
