#pragma once
// What the well-known knobs do, as data (DESIGN "What the knobs mean"): the
// one place in the code that knows knob names and their memory semantics.
// A spec may declare the same of a user's own knob (`memory: device | host |
// both | none` on the parameter), and that declaration wins over the table.
// The feasibility model, the heuristic strategy and the exports read it.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/space.hpp"

namespace autotune {

// The values a well-known knob can take (checked when a spec is read).
enum class KnobDomain {
  count,         // an integer >= 1 (batch_size, grad_accum, prefetch_factor)
  zero_or_more,  // an integer >= 0 (num_workers: 0 loads inline)
  boolean,       // true or false (pin_memory)
  precision,     // one of known_precisions()
};

struct KnobInfo {
  std::string_view name;
  MemoryUse memory;
  // Meaningful only when this other knob is > 0 (prefetch_factor without
  // workers: PyTorch refuses it, and it queues nothing); empty = always.
  std::string_view needs_positive;
  // The tuning guides' order of raising knobs (the heuristic's recipe).
  int recipe_rank;
  std::string_view note;
  KnobDomain domain;
  std::string_view meaning;  // what the value is, for error messages
  // How the surrogate reads an ordered value: 0 by the domain's own scale;
  // > 0 by log(value + offset) (num_workers: a loader's throughput grows in
  // proportion to its workers, so log-throughput with log(workers); see
  // SearchSpace::encode).
  double surrogate_log_offset = 0.0;
  // The initial design measures its points with this knob highest first
  // (1 is read first, 2 breaks its ties; 0 is not read): the loader's
  // parallelism, then the batch, are where a starved pipeline's throughput
  // comes from (search/initial_design.hpp).
  int design_lead = 0;
  // Moves only the compute's rate, never the loader's: a loader delivers
  // the same samples per second whatever precision the step computes in
  // and however many micro-batches it accumulates. The surrogate's GP of
  // the loader's rate does not read such a knob (search/surrogate.cpp); a
  // user's own knob is read by it.
  bool compute_only = false;
  // A variable the job's runtime reads this knob from as it starts (threads:
  // OMP_NUM_THREADS, which PyTorch, NumPy and MKL size their pools by): a
  // command trial's environment carries it beside AUTOTUNE_<NAME>, so a
  // cold trial runs with it before the script's first line; empty: none.
  std::string_view process_env;
};

// The table, in recipe order.
const std::vector<KnobInfo>& knob_table();

// The products of well-known knobs that memory grows by, beyond each knob
// alone (a user's declared knob grows its memory alone): a DataLoader's
// queue holds workers x prefetch batches of batch_size samples, pinned or
// not; pinned staging buffers hold a batch; activations grow with the batch
// times the bytes per element. The feasibility model's bytes fit prefers
// these terms to other products of the same knobs (search/feasibility.hpp).
const std::vector<std::vector<std::string_view>>& memory_products();
const KnobInfo* find_knob(std::string_view name);

// A knob's name in a trial's environment: AUTOTUNE_ and the name in upper
// case, other characters as _ (the command contract, DESIGN.md).
std::string knob_env_name(std::string_view name);
// The AUTOTUNE_ variables the tool itself sets for a trial (its number and
// start, the result file, the racing bar, the warm protocol's folder and
// messages) or reads from the job's environment (the CUDA module): a knob
// whose environment name is one of these would be overwritten, or would
// overwrite it, so a spec may not declare one.
const std::vector<std::string_view>& tool_env_names();

// Memory semantics of one parameter of a space, resolved: the spec's
// declaration, else the table, else unknown.
struct KnobMemory {
  MemoryUse use = MemoryUse::unknown;
  bool device() const { return use == MemoryUse::device || use == MemoryUse::both; }
  bool host() const { return use == MemoryUse::host || use == MemoryUse::both; }
  // Per value, how much memory it takes relative to the others (only the
  // order and the log ratios matter); NaN where the value cannot be placed
  // (an unknown precision name), which then compares equal only to itself.
  std::vector<double> size;
  // The parameter this one needs > 0 to mean anything (see KnobInfo).
  std::optional<std::size_t> needs_positive;
};
std::vector<KnobMemory> knob_memory(const SearchSpace& space);

// Whether a parameter of a configuration means anything (prefetch_factor at
// num_workers 0 does not). Names not in the configuration count as active.
bool knob_is_active(const Assignment& a, std::string_view name);

// The precision names the tool knows: fp32, tf32, fp16, bf16.
const std::vector<std::string_view>& known_precisions();

// Empty when `v` is a value knob `k` can take; else what was expected, in
// words ("an integer >= 1 (batch_size: ...)").
std::string knob_domain_violation(const KnobInfo& k, const Value& v);

// Bytes per element of a numeric format name (fp32 4, tf32 a hair under 4: it
// keeps FP32 tensors and changes only the matmul unit, so never more; fp16
// and bf16 2, fp8 and int8 1); nullopt for a name we do not know.
std::optional<double> precision_bytes(std::string_view name);

// Where a precision sits between full and reduced arithmetic, for the
// surrogate: fp32 0, tf32 0.5 (FP32 storage, a faster matmul unit), the 16-bit
// formats 1, the 8-bit ones 2; nullopt for a name we do not know. bo reads
// a categorical precision by this rank beside its one-hot (formats of one
// width then sit nearer each other: what fp16 showed carries to bf16).
std::optional<double> precision_rank(std::string_view name);

}  // namespace autotune
