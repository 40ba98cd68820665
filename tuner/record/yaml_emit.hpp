#pragma once
// How tuned.yaml writes a scalar so that every YAML reader takes it back as
// the same value: strings quoted where plain they would read as another type,
// floats always with a point or an exponent's sign, bytes as integers. Shared
// by the emitter (emitter.cpp) and the export formats (export_format.hpp).
#include <string_view>

#include <yaml-cpp/yaml.h>

#include "core/value.hpp"

namespace autotune {

// Whether every YAML reader takes `s`, written plain, for this same string.
bool plain_is_string(std::string_view s);
// A string, quoted when written plain it would read as another type.
void emit_string(YAML::Emitter& e, std::string_view s);
// A number every reader takes for a float: .inf and .nan included.
void emit_double(YAML::Emitter& e, double x);
// A count of bytes as an integer; past int64's range as a float.
void emit_bytes(YAML::Emitter& e, double v);
void emit_value(YAML::Emitter& e, const Value& v);
void emit_assignment(YAML::Emitter& e, const Assignment& a);  // {name: value, ...}, in flow style

double round_sig(double x, int digits);

// A figure rounded to `digits` significant digits, written as a float.
struct Float {
  double x;
};
inline Float sig(double x, int digits) { return {round_sig(x, digits)}; }
YAML::Emitter& operator<<(YAML::Emitter& e, Float f);
// A string through emit_string.
struct Str {
  std::string_view s;
};
YAML::Emitter& operator<<(YAML::Emitter& e, Str s);

}  // namespace autotune
