#include "tuner/spec/executor_kind.hpp"

namespace autotune {

const ExecutorKind* find_executor_kind(const ExecutorKinds& kinds, std::string_view kind) {
  for (const auto& k : kinds)
    if (k.kind == kind) return &k;
  return nullptr;
}

std::vector<std::string> executor_kind_names(const ExecutorKinds& kinds) {
  std::vector<std::string> out;
  for (const auto& k : kinds) out.push_back(k.kind);
  return out;
}

}  // namespace autotune
