// Per-layer precision overrides of a training recipe: rules that keep some layers in another
// precision than the recipe's (embeddings or norms in fp32, the first and last layers in bf16
// while the rest run fp8: Megatron-LM's --first-last-layers-bf16, the DeepSeek-V3 recipe).
//
//   recipe text   override=first:bf16,last:bf16        (flags: --override first:bf16,last:bf16;
//                 override=fc1:fp32,1-2:fp16            JSON: "override": "fc1:fp32" or an array
//                 override=none                         of "SELECTOR:PRECISION" strings)
//
// A rule is SELECTOR:PRECISION.  Layers come from the names of the parameters a session has
// registered: a parameter's layer is its name up to the last '.' ("fc1.weight" and "fc1.bias"
// make the layer "fc1"; a name without '.' is a layer of its own, as is an unnamed parameter),
// numbered 0, 1, ... in the order their first parameter was registered.  A selector is
//   first, last      layer 0, the last layer
//   N, N-M           layer N, layers N to M (0-based, inclusive)
//   a name pattern   a layer name or a whole parameter name; '*' matches any characters, '?' one
//   @NAME            every call of the operation NAME of mixprec::ops (@softmax, @linear, ...)
// and PRECISION is fp32, fp16 or bf16 (a layer's operations compute as in an autocast scope of
// that dtype: parameter.hpp's precision override; an operation computes in and returns that
// dtype: autocast_state::op_precisions), or, for a layer, fp8 in an fp8 recipe (the layer stays
// in fp8: for taking layers back from a wider rule).  The first layer rule that matches a
// parameter decides, and a parameter's override comes before an operation's rule; every layer
// rule must match some parameter and every operation rule name an operation
// (resolve_overrides, check_operation_rules: recipe_error otherwise).
//
// Functions written `template <int = 0>` are compiled only in a file that calls them
// (docs/design.md, "Compiled where called").
#pragma once

#include <cctype>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../autocast/op_precisions.hpp"
#include "../detail/text.hpp"
#include "errors.hpp"
#include "precision_mode.hpp"

namespace mixprec {

struct layer_override {
  std::string selector;
  precision_mode precision = precision_mode::float32;
};

struct precision_overrides {
  std::vector<layer_override> rules;
  bool empty() const noexcept { return rules.empty(); }
};

// The dtype a rule's precision puts its layer or operation in: none for fp8 (the layer stays in
// the fp8 recipe's fp8; an operation rule cannot be fp8) and for the block-scaled precisions
// (never a rule's; a recipe's, whose layers keep them).
template <int = 0>
std::optional<dtype> override_dtype_of(precision_mode p) noexcept {
  switch (p) {
    case precision_mode::float32:
      return dtype::float32;
    case precision_mode::float16:
      return dtype::float16;
    case precision_mode::bfloat16:
      return dtype::bfloat16;
    case precision_mode::float8:
    case precision_mode::mxfp8:
    case precision_mode::fp8_block:
    case precision_mode::nvfp4:
    case precision_mode::fp8_rowwise:
    case precision_mode::mxfp4:
      break;
  }
  return std::nullopt;
}

// The precision a parameter's layer trains in, as the rules decide it.
struct layer_precision {
  std::size_t parameter = 0;  // registration index
  std::string parameter_name;
  std::size_t layer = 0;
  std::string layer_name;
  std::optional<std::size_t> rule;  // the rule that decided, or none: the recipe's precision
  precision_mode precision = precision_mode::float32;
};

namespace detail {

[[noreturn]] inline void override_fail(const std::string& what) { throw recipe_error("recipe: override " + what); }

template <int = 0>
bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (const char c : s) {
    if (std::isdigit(static_cast<unsigned char>(c)) == 0) return false;
  }
  return true;
}

// The layer range of an index selector (first and last need the layer count), or nothing for a
// name pattern.  Indices above 10^9 are refused as text (no model has that many layers).
struct index_range {
  std::size_t first = 0, last = 0;
};
template <int = 0>
std::optional<index_range> index_selector(std::string_view s, std::size_t layers) {
  const auto number = [&](std::string_view digits) {
    if (digits.size() > 9) override_fail("layer index '" + printable(digits) + "' is above 999999999");
    return static_cast<std::size_t>(std::stoul(std::string(digits)));
  };
  if (s == "first") return index_range{0, 0};
  if (s == "last") return index_range{layers == 0 ? 0 : layers - 1, layers == 0 ? 0 : layers - 1};
  if (all_digits(s)) return index_range{number(s), number(s)};
  const std::size_t dash = s.find('-');
  if (dash != std::string_view::npos && all_digits(s.substr(0, dash)) && all_digits(s.substr(dash + 1))) {
    const index_range r{number(s.substr(0, dash)), number(s.substr(dash + 1))};
    if (r.first > r.last) {
      override_fail("range '" + std::string(s) + "' runs backwards; allowed: N-M with N <= M");
    }
    return r;
  }
  return std::nullopt;
}

// Glob match: '*' any run of characters (none included), '?' one character.
template <int = 0>
bool glob_match(std::string_view pattern, std::string_view text) {
  std::size_t p = 0, t = 0, star = std::string_view::npos, resume = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

inline bool is_operation_selector(std::string_view s) { return !s.empty() && s.front() == '@'; }

template <int = 0>
bool selector_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.' || c == '-' || c == '*' || c == '?' ||
         c == '/' || c == '[' || c == ']';
}

template <int = 0>
std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Throws recipe_error for a selector that no rule may have: empty, a character outside the
// allowed set, a backwards range, an index above 999999999.  number: the rule's, from 1.
template <int = 0>
void check_selector(const std::string& selector, std::size_t number) {
  if (selector.empty()) override_fail("rule " + std::to_string(number) + " has an empty selector");
  if (is_operation_selector(selector)) {
    for (const char c : selector.substr(1)) {
      if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '_') {
        override_fail("rule " + std::to_string(number) + " operation '" + printable(selector) +
                      "' is not @NAME; allowed in NAME: letters, digits and _");
      }
    }
    if (selector.size() == 1) override_fail("rule " + std::to_string(number) + " operation '@' names nothing");
    return;
  }
  for (const char c : selector) {
    if (!selector_char(c)) {
      override_fail("rule " + std::to_string(number) + " selector '" + printable(selector) + "' holds '" +
                    printable(std::string_view(&c, 1)) + "'; allowed: letters, digits and _ . - * ? / [ ]");
    }
  }
  index_selector(selector, 1);
}

}  // namespace detail

// "SELECTOR:PRECISION", as the rule is written (and read back by parse_overrides).
inline std::string rule_text(const layer_override& rule) { return rule.selector + ":" + to_string(rule.precision); }

// Reads "none" or SELECTOR:PRECISION rules separated by commas; recipe_error names the rule and
// what is allowed.
template <int = 0>
precision_overrides parse_overrides(std::string_view text) {
  precision_overrides out;
  if (detail::trimmed(text) == "none") return out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const std::string_view item =
        detail::trimmed(text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    const std::size_t number = out.rules.size() + 1;
    const std::size_t colon = item.rfind(':');
    if (colon == std::string_view::npos || colon == 0) {
      detail::override_fail("rule " + std::to_string(number) + " is '" + detail::printable(item) +
                            "'; allowed: SELECTOR:PRECISION (first, last, N, N-M or a name pattern; fp32, fp16, "
                            "bf16 or fp8), or none");
    }
    layer_override rule;
    rule.selector = std::string(item.substr(0, colon));
    detail::check_selector(rule.selector, number);
    const std::string_view name = item.substr(colon + 1);
    bool known = false;
    for (const precision_mode p :
         {precision_mode::float32, precision_mode::float16, precision_mode::bfloat16, precision_mode::float8}) {
      if (name == to_string(p)) {
        rule.precision = p;
        known = true;
      }
    }
    if (!known) {
      detail::override_fail("rule " + std::to_string(number) + " precision is '" + detail::printable(name) +
                            "'; allowed: fp32, fp16, bf16, fp8");
    }
    out.rules.push_back(std::move(rule));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

// "none", or the rules as parse_overrides reads them.
template <int = 0>
std::string overrides_text(const precision_overrides& o) {
  if (o.empty()) return "none";
  std::string out;
  for (const layer_override& rule : o.rules) out.append(out.empty() ? "" : ",").append(rule_text(rule));
  return out;
}

// The layer of a parameter name: the name up to its last '.' (the whole name when it has none).
template <int = 0>
std::string layer_of(const std::string& parameter_name) {
  const std::size_t dot = parameter_name.rfind('.');
  return dot == std::string::npos ? parameter_name : parameter_name.substr(0, dot);
}

// Every parameter's layer and precision under the rules, for parameters registered with these
// names in this order, in a recipe of precision `base`.  recipe_error for a rule that matches no
// parameter, naming it and the layers there are.
template <int = 0>
std::vector<layer_precision> resolve_overrides(const precision_overrides& o,
                                               const std::vector<std::string>& parameter_names, precision_mode base) {
  std::vector<layer_precision> table(parameter_names.size());
  std::vector<std::string> layers;  // names, in the order of their first parameter
  for (std::size_t i = 0; i < parameter_names.size(); ++i) {
    layer_precision& row = table[i];
    row.parameter = i;
    row.parameter_name = parameter_names[i];
    row.layer_name = layer_of(parameter_names[i]);
    row.precision = base;
    std::size_t found = layers.size();
    for (std::size_t l = 0; l < layers.size() && !row.layer_name.empty(); ++l) {
      if (layers[l] == row.layer_name) found = l;
    }
    if (found == layers.size()) layers.push_back(row.layer_name);
    row.layer = found;
  }
  for (std::size_t k = 0; k < o.rules.size(); ++k) {
    const layer_override& rule = o.rules[k];
    if (detail::is_operation_selector(rule.selector)) continue;  // operations, not parameters
    const std::optional<detail::index_range> range = detail::index_selector(rule.selector, layers.size());
    bool matched = false;
    for (layer_precision& row : table) {
      const bool hit = range ? row.layer >= range->first && row.layer <= range->last
                             : detail::glob_match(rule.selector, row.layer_name) ||
                                   detail::glob_match(rule.selector, row.parameter_name);
      if (!hit) continue;
      matched = true;
      if (!row.rule) {
        row.rule = k;
        row.precision = rule.precision;
      }
    }
    if (!matched) {
      std::string known;
      for (std::size_t l = 0; l < layers.size() && l < 16; ++l) {
        known.append(l ? ", " : "")
            .append(std::to_string(l))
            .append(" '")
            .append(detail::printable(layers[l]))
            .append("'");
      }
      if (layers.size() > 16) known.append(", ... (" + std::to_string(layers.size()) + " in all)");
      detail::override_fail("rule " + std::to_string(k + 1) + " '" + rule_text(rule) +
                            "' matches no parameter; the layers are " + (layers.empty() ? "none" : known));
    }
  }
  return table;
}

// The operation rules (@NAME) as the pinned operations of an autocast state, in rule order (the
// first rule for a name decides); none when there are none.
template <int = 0>
std::shared_ptr<const op_precision_list> operation_precisions(const precision_overrides& o) {
  auto list = std::make_shared<op_precision_list>();
  for (const layer_override& rule : o.rules) {
    const std::optional<dtype> d = override_dtype_of(rule.precision);  // validate() refuses fp8 here
    if (detail::is_operation_selector(rule.selector) && d) list->emplace_back(rule.selector.substr(1), *d);
  }
  if (list->empty()) return nullptr;
  return list;
}

// recipe_error for an operation rule whose name is not among `known` (the operations of
// mixprec::ops and those an autocast policy lists), naming the rule and the operations there are.
template <int = 0>
void check_operation_rules(const precision_overrides& o, const std::vector<std::string>& known) {
  for (std::size_t k = 0; k < o.rules.size(); ++k) {
    const layer_override& rule = o.rules[k];
    if (!detail::is_operation_selector(rule.selector)) continue;
    bool found = false;
    for (const std::string& name : known) found = found || name == rule.selector.substr(1);
    if (found) continue;
    std::string list;
    for (std::size_t i = 0; i < known.size() && i < 24; ++i) list.append(i ? ", " : "").append(known[i]);
    if (known.size() > 24) list.append(", ... (" + std::to_string(known.size()) + " in all)");
    detail::override_fail("rule " + std::to_string(k + 1) + " '" + rule_text(rule) +
                          "' names no operation; the operations are " + list);
  }
}

}  // namespace mixprec
