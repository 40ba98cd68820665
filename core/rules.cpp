#include "core/rules.hpp"

#include <cctype>
#include <map>
#include <stdexcept>

#include <muParser.h>

#include "core/space.hpp"

namespace autotune {
namespace {

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char ch : s)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_')) return false;
  return true;
}

// Constants for categorical values: each value's name stands for its position.
// A name claimed by two parameters at different positions, or shadowing a
// parameter, is left undefined so that it cannot silently mean the wrong one.
std::map<std::string, double> categorical_constants(const std::vector<Parameter>& params,
                                                    const std::map<std::string, double>& facts) {
  std::map<std::string, double> consts = facts;
  std::map<std::string, bool> ambiguous;
  for (const auto& p : params) {
    for (std::size_t i = 0; i < p.values.size(); ++i) {
      if (!is_string(p.values[i])) continue;
      const auto& name = std::get<std::string>(p.values[i]);
      if (!is_identifier(name)) continue;
      if (facts.count(name)) continue;  // a fact's name stays the fact
      auto [it, inserted] = consts.emplace(name, static_cast<double>(i));
      if (!inserted && it->second != static_cast<double>(i)) ambiguous[name] = true;
    }
  }
  for (const auto& [name, _] : ambiguous) consts.erase(name);
  for (const auto& p : params) consts.erase(p.name);
  return consts;
}

void setup(mu::Parser& parser, std::vector<double>& vars, const std::vector<Parameter>& params,
           const std::map<std::string, double>& consts, const std::string& expr) {
  for (std::size_t i = 0; i < params.size(); ++i) parser.DefineVar(params[i].name, &vars[i]);
  for (const auto& [name, value] : consts) parser.DefineConst(name, value);
  parser.SetExpr(expr);
}

}  // namespace

struct RuleSet::Impl {
  std::vector<double> vars;
  std::vector<mu::Parser> parsers;
};

RuleSet::RuleSet() : m_impl(std::make_unique<Impl>()) {}
RuleSet::~RuleSet() = default;
RuleSet::RuleSet(RuleSet&&) noexcept = default;
RuleSet& RuleSet::operator=(RuleSet&&) noexcept = default;
RuleSet::RuleSet(const RuleSet& other) : RuleSet(other.m_rules, other.m_params, other.m_facts) {}
RuleSet& RuleSet::operator=(const RuleSet& other) {
  if (this != &other) *this = RuleSet(other.m_rules, other.m_params, other.m_facts);
  return *this;
}

std::optional<std::string> RuleSet::check(const std::string& expr, const std::vector<Parameter>& params,
                                          const std::map<std::string, double>& facts) {
  std::vector<double> vars(params.size(), 1.0);
  try {
    mu::Parser parser;
    setup(parser, vars, params, categorical_constants(params, facts), expr);
    parser.Eval();
    if (parser.GetNumResults() != 1) return std::string("a rule must be a single expression");
  } catch (const mu::Parser::exception_type& e) {
    return "cannot parse rule \"" + expr + "\": " + e.GetMsg();
  }
  return std::nullopt;
}

RuleSet::RuleSet(std::vector<std::string> rules, const std::vector<Parameter>& params,
                 std::map<std::string, double> facts)
    : m_rules(std::move(rules)), m_params(params), m_facts(std::move(facts)), m_impl(std::make_unique<Impl>()) {
  for (const auto& r : m_rules)
    if (auto err = check(r, m_params, m_facts)) throw std::invalid_argument(*err);
  m_impl->vars.assign(m_params.size(), 0.0);
  m_impl->parsers.resize(m_rules.size());
  const auto consts = categorical_constants(m_params, m_facts);
  for (std::size_t i = 0; i < m_rules.size(); ++i)
    setup(m_impl->parsers[i], m_impl->vars, m_params, consts, m_rules[i]);
}

std::optional<std::size_t> RuleSet::first_violated(const std::vector<double>& values) const {
  if (m_rules.empty()) return std::nullopt;
  std::copy(values.begin(), values.end(), m_impl->vars.begin());
  for (std::size_t i = 0; i < m_impl->parsers.size(); ++i) {
    double v = 0.0;
    try {
      v = m_impl->parsers[i].Eval();
    } catch (const mu::Parser::exception_type&) {
      return i;  // e.g. division by zero at this point: treat as violated
    }
    if (!(v != 0.0)) return i;
  }
  return std::nullopt;
}

std::map<std::string, double> RuleSet::facts_used() const {
  std::map<std::string, double> out;
  for (const auto& [name, value] : m_facts)
    for (const auto& r : m_rules)
      for (auto at = r.find(name); at != std::string::npos; at = r.find(name, at + 1)) {
        const auto word = [&](std::size_t k) {
          return k < r.size() && (std::isalnum(static_cast<unsigned char>(r[k])) || r[k] == '_');
        };
        if ((at == 0 || !word(at - 1)) && !word(at + name.size())) out[name] = value;
      }
  for (const auto& p : m_params) out.erase(p.name);  // a parameter of that name is meant
  return out;
}

}  // namespace autotune
