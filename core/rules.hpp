#pragma once
// Known constraints: boolean expressions over parameter values, such as
// "batch_size * grad_accum <= 1024", checked before a configuration costs a
// trial. Integers and booleans are their values; a categorical parameter is the
// position of its value, and each of its values is a constant with that
// position, so "precision != fp32" works. Expressions use muParser's syntax
// (+ - * / ^, comparisons, && ||, min, max, ...). Facts of the run and the
// machine may be named too (`ranks`, `cores`: "ranks * (num_workers + 1) <=
// cores"), given as constants; a parameter of the same name wins.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/value.hpp"

namespace autotune {

struct Parameter;

class RuleSet {
 public:
  RuleSet();
  ~RuleSet();
  RuleSet(const RuleSet&);
  RuleSet& operator=(const RuleSet&);
  RuleSet(RuleSet&&) noexcept;
  RuleSet& operator=(RuleSet&&) noexcept;

  // Compiles one rule against the parameters; returns an error message
  // (unknown name, syntax error...) instead of adding it when it is bad.
  static std::optional<std::string> check(const std::string& expr, const std::vector<Parameter>& params,
                                          const std::map<std::string, double>& facts = {});

  // Throws std::invalid_argument with check()'s message when a rule is bad.
  RuleSet(std::vector<std::string> rules, const std::vector<Parameter>& params,
          std::map<std::string, double> facts = {});

  const std::vector<std::string>& rules() const { return m_rules; }
  // The facts some rule names.
  std::map<std::string, double> facts_used() const;
  bool empty() const { return m_rules.empty(); }

  // values[i] is the numeric view of parameter i (to_number, or the position
  // for a categorical). Returns the index of the first rule violated, if any.
  std::optional<std::size_t> first_violated(const std::vector<double>& values) const;

 private:
  struct Impl;
  std::vector<std::string> m_rules;
  std::vector<Parameter> m_params;
  std::map<std::string, double> m_facts;
  std::unique_ptr<Impl> m_impl;
};

}  // namespace autotune
