// Recipes from text.  Every form starts from a named recipe (fp32 unless the key `recipe` names
// another) and overrides keys of recipe_fields.hpp; the result passes validate().
//
//   parse_recipe("O2")                                         a name (case-insensitive)
//   parse_recipe("recipe=fp16, init_scale=1024 growth_interval=100")   key=value, comma or space separated
//   parse_recipe("--precision fp16 --init-scale 1024")         flags ('-' or '_' in keys; --key=value too)
//   parse_recipe(R"({"recipe": "bf16", "max_grad_norm": 1.0})")  a JSON object (session/detail/json.hpp)
//   parse_recipe_args(argc, argv)                              flags from main's arguments
//   parse_recipe_file("train.json")                            JSON, or key=value text
//
// Everything wrong is a recipe_error naming the key and what it allows: an unknown key, a key
// given twice, a value of the wrong type (JSON) or that does not parse, a number out of the
// range of its field (1e999, 1e39 for a float field, 3.5 for an integer), NUL bytes, text over
// 1 MiB, and the contradictions validate() refuses.  A bare flag (--autocast) means true; -0
// reads as 0; max_scale also takes inf (a JSON string "inf").
#pragma once

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "detail/json.hpp"
#include "recipe.hpp"
#include "recipe_fields.hpp"

namespace mixprec {
namespace session_detail {

inline recipe named_recipe(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "fp32") return recipes::fp32();
  if (lower == "fp16") return recipes::fp16();
  if (lower == "bf16") return recipes::bf16();
  if (lower == "fp8") return recipes::fp8();
  if (lower == "o0") return recipes::O0();
  if (lower == "o1") return recipes::O1();
  if (lower == "o2") return recipes::O2();
  if (lower == "o3") return recipes::O3();
  recipe_fail("unknown recipe name '" + printable(name) + "'; allowed: fp32, fp16, bf16, fp8, O0, O1, O2, O3");
}

[[noreturn]] inline void bad_value(const field_info& info, std::string_view text, const std::string& allowed) {
  recipe_fail(std::string(info.key) + " is '" + printable(text) + "'; allowed: " + allowed);
}

template <class T>
void assign_number_text(const field_info& info, std::string_view text, T& field) {
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if constexpr (std::is_integral<T>::value) {
    std::int64_t v = 0;
    const auto r = std::from_chars(first, last, v);
    if (r.ec != std::errc{} || r.ptr != last || v < std::numeric_limits<T>::min() ||
        v > std::numeric_limits<T>::max()) {
      bad_value(info, text, info.allowed);
    }
    field = static_cast<T>(v);
  } else {
    if (info.infinity_ok && text == "inf") {
      field = std::numeric_limits<T>::infinity();
      return;
    }
    double v = 0;
    const auto r = std::from_chars(first, last, v, std::chars_format::general);
    // from_chars also reads "inf" and "nan"; a recipe wants finite numbers that the field holds
    // (a float field refuses 1e39 rather than turning it into infinity, and 1e-50 rather than 0).
    const bool held = std::is_same<T, double>::value ||
                      (std::fabs(v) <= std::numeric_limits<float>::max() && (v == 0 || static_cast<float>(v) != 0));
    if (r.ec != std::errc{} || r.ptr != last || !std::isfinite(v) || !held) bad_value(info, text, info.allowed);
    field = v == 0 ? T{0} : static_cast<T>(v);  // -0 reads as 0
  }
}

// One key's value from text (key=value, flags).
template <class T>
void assign_text(const field_info& info, std::string_view text, T& field) {
  if constexpr (std::is_same<T, bool>::value) {
    if (text == "true") {
      field = true;
    } else if (text == "false") {
      field = false;
    } else {
      bad_value(info, text, "true or false");
    }
  } else if constexpr (std::is_enum<T>::value) {
    const enum_names<T> names = names_of(field);
    for (std::size_t i = 0; i < names.count; ++i) {
      if (text == names.entries[i].first) {
        field = names.entries[i].second;
        return;
      }
    }
    bad_value(info, text, enum_allowed(field));
  } else {
    assign_number_text(info, text, field);
  }
}

// One key's value from JSON: the JSON type must match the field's.
template <class T>
void assign_json(const field_info& info, const json_value& v, T& field) {
  const auto wrong_type = [&](const char* expected) {
    recipe_fail(std::string(info.key) + " (line " + std::to_string(v.line) + ", column " + std::to_string(v.column) +
                ") is " + to_string(v.type) + "; allowed: " + expected);
  };
  if constexpr (std::is_same<T, bool>::value) {
    if (v.type != json_value::kind::boolean) wrong_type("true or false");
    field = v.boolean;
  } else if constexpr (std::is_enum<T>::value) {
    if (v.type != json_value::kind::string) wrong_type(("a string, one of " + enum_allowed(field)).c_str());
    assign_text(info, v.text, field);
  } else {
    if (info.infinity_ok && v.type == json_value::kind::string && v.text == "inf") {
      field = std::numeric_limits<T>::infinity();
      return;
    }
    if (v.type != json_value::kind::number) wrong_type(info.allowed);
    if (std::is_integral<T>::value && !v.integral) bad_value(info, v.text, info.allowed);
    assign_number_text(info, v.text, field);
  }
}

// Applies (key, value) pairs to the named base recipe (the `recipe` key), then validates.
template <class Value, class Assign>
recipe apply_pairs(const std::vector<std::pair<std::string, Value>>& pairs, Assign&& assign,
                   std::string (*name_of)(const Value&)) {
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (pairs[i].first == pairs[j].first) recipe_fail("key '" + printable(pairs[i].first) + "' is given twice");
    }
  }
  recipe r;
  for (const auto& p : pairs) {
    if (p.first == "recipe") r = named_recipe(name_of(p.second));
  }
  for (const auto& p : pairs) {
    if (p.first == "recipe") continue;
    bool known = false;
    visit_recipe_fields(r, [&](const field_info& info, auto& field) {
      if (p.first != info.key) return;
      known = true;
      assign(info, p.second, field);
    });
    if (!known) {
      recipe_fail("unknown key '" + printable(p.first) + "'; allowed keys: " + recipe_keys());
    }
  }
  validate(r);
  return r;
}

inline std::string text_name(const std::string& s) { return s; }

inline std::string json_name(const json_value& v) {
  if (v.type != json_value::kind::string) {
    recipe_fail("recipe (line " + std::to_string(v.line) + ", column " + std::to_string(v.column) + ") is " +
                to_string(v.type) + "; allowed: a string, one of fp32, fp16, bf16, fp8, O0, O1, O2, O3");
  }
  return v.text;
}

inline recipe apply_text_pairs(const std::vector<std::pair<std::string, std::string>>& pairs) {
  return apply_pairs(
      pairs, [](const field_info& info, const std::string& text, auto& field) { assign_text(info, text, field); },
      &text_name);
}

inline bool is_key_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-'; }

inline std::string key_of(std::string_view raw) {
  std::string key(raw);
  for (char& c : key) c = c == '-' ? '_' : c;
  return key;
}

inline recipe parse_key_values(std::string_view text) {
  std::vector<std::pair<std::string, std::string>> pairs;
  const auto separator = [](char c) { return c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  std::size_t i = 0;
  while (i < text.size()) {
    if (separator(text[i])) {
      ++i;
      continue;
    }
    const std::size_t key_start = i;
    while (i < text.size() && is_key_char(text[i])) ++i;
    const std::string_view key = text.substr(key_start, i - key_start);
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    if (key.empty() || i >= text.size() || text[i] != '=') {
      recipe_fail("expected key=value at offset " + std::to_string(key_start) + " ('" +
                  printable(text.substr(key_start, 32)) + "'); allowed keys: " + recipe_keys());
    }
    ++i;
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    const std::size_t value_start = i;
    while (i < text.size() && !separator(text[i])) ++i;
    if (i == value_start) recipe_fail("key '" + printable(key) + "' has no value");
    pairs.emplace_back(key_of(key), std::string(text.substr(value_start, i - value_start)));
  }
  return apply_text_pairs(pairs);
}

inline recipe parse_flags(const std::vector<std::string_view>& args) {
  std::vector<std::pair<std::string, std::string>> pairs;
  const recipe defaults;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    if (arg.size() < 3 || arg.substr(0, 2) != "--") {
      recipe_fail("expected a --flag, found '" + printable(arg) + "'; allowed flags: --" + recipe_keys() +
                  " (with '-' or '_')");
    }
    const std::string_view body = arg.substr(2);
    const std::size_t eq = body.find('=');
    if (eq != std::string_view::npos) {
      pairs.emplace_back(key_of(body.substr(0, eq)), std::string(body.substr(eq + 1)));
      continue;
    }
    const std::string key = key_of(body);
    bool is_bool = false;
    visit_recipe_fields(defaults, [&](const field_info& info, const auto& field) {
      is_bool |= key == info.key && std::is_same<std::decay_t<decltype(field)>, bool>::value;
    });
    const bool has_value = i + 1 < args.size() && args[i + 1].substr(0, 2) != "--";
    if (is_bool && !has_value) {
      pairs.emplace_back(key, "true");
    } else if (!has_value) {
      recipe_fail("flag --" + printable(body) + " has no value");
    } else {
      pairs.emplace_back(key, std::string(args[++i]));
    }
  }
  return apply_text_pairs(pairs);
}

inline recipe parse_json_recipe(std::string_view text) {
  const json_value doc = parse_json(text);
  if (doc.type != json_value::kind::object) {
    recipe_fail(std::string("a JSON recipe is an object of keys; this one is ") + to_string(doc.type));
  }
  return apply_pairs(
      doc.members, [](const field_info& info, const json_value& v, auto& field) { assign_json(info, v, field); },
      &json_name);
}

}  // namespace session_detail

inline recipe parse_recipe(std::string_view text) {
  using session_detail::recipe_fail;
  if (text.size() > session_detail::json_text_limit) {
    recipe_fail(std::to_string(text.size()) + " bytes of text, the limit is " +
                std::to_string(session_detail::json_text_limit));
  }
  const std::size_t nul = text.find('\0');
  if (nul != std::string_view::npos) recipe_fail("NUL byte at offset " + std::to_string(nul) + " of the text");
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) {
    recipe_fail(
        "empty text; allowed: a recipe name (fp32, fp16, bf16, fp8, O0, O1, O2, O3), key=value pairs, "
        "--flags or a JSON object");
  }
  const std::size_t last = text.find_last_not_of(" \t\r\n");
  const std::string_view body = text.substr(first, last - first + 1);
  if (body.front() == '{' || body.front() == '[') return session_detail::parse_json_recipe(text);
  if (body.substr(0, 2) == "--") {
    std::vector<std::string_view> args;
    std::size_t i = 0;
    while (i < body.size()) {
      const std::size_t start = body.find_first_not_of(" \t\r\n", i);
      if (start == std::string_view::npos) break;
      const std::size_t end = std::min(body.find_first_of(" \t\r\n", start), body.size());
      args.push_back(body.substr(start, end - start));
      i = end;
    }
    return session_detail::parse_flags(args);
  }
  if (body.find('=') != std::string_view::npos) return session_detail::parse_key_values(body);
  return session_detail::named_recipe(body);
}

// Flags from main's arguments, from argv[first] on; every argument must be a recipe flag.
inline recipe parse_recipe_args(int argc, const char* const* argv, int first = 1) {
  std::vector<std::string_view> args;
  for (int i = first; i < argc; ++i) args.emplace_back(argv[i] != nullptr ? argv[i] : "");
  return session_detail::parse_flags(args);
}

// A recipe file: JSON, key=value text, flags or a name (as parse_recipe), at most 1 MiB.
inline recipe parse_recipe_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw recipe_error("recipe file '" + path + "' cannot be opened");
  std::string text(session_detail::json_text_limit + 1, '\0');
  in.read(&text[0], static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (in.bad()) throw recipe_error("recipe file '" + path + "' cannot be read");
  try {
    return parse_recipe(text);
  } catch (const recipe_error& e) {
    throw recipe_error("recipe file '" + path + "': " + e.what());
  }
}

}  // namespace mixprec
