// Recipes from text.  Every form starts from a named recipe (fp32 unless the key `recipe` names
// another) and overrides keys of recipe_fields.hpp; the result passes validate().
//
//   parse_recipe("O2")                                         a name (case-insensitive)
//   parse_recipe("recipe=fp16, init_scale=1024 growth_interval=100")   key=value, comma or space separated
//   parse_recipe("--precision fp16 --init-scale 1024")         flags ('-' or '_' in keys; --key=value too)
//   parse_recipe(R"({"recipe": "bf16", "max_grad_norm": 1.0})")  a JSON object (session/detail/json.hpp)
//   parse_recipe_args(argc, argv)                              flags from main's arguments (all of them)
//   parse_known_recipe_args(argc, argv)                        the recipe's flags; the program's others kept
//   parse_recipe_file("train.json")                            JSON, or key=value text
//
// From main's arguments, --recipe-file PATH reads a file first; the other flags then override its
// values key by key, wherever the file flag stands (--recipe NAME also replaces the file's base
// recipe, the file's other keys still apply on top of it).  parse_known_recipe_args takes only the
// recipe's own flags (--KEY, --KEY=VALUE for the keys of recipe_fields.hpp, --recipe and
// --recipe-file, optionally behind a prefix: --amp-seed) and returns every other argument
// untouched and in order; "--" ends the recipe's flags and is returned with everything after it.
//
// Everything wrong is a recipe_error naming the key and what it allows: an unknown key, a key
// given twice, a value of the wrong type (JSON) or that does not parse, a number out of the
// range of its field (1e999, 1e39 for a float field, 3.5 for an integer), NUL bytes, text over
// 1 MiB, and the contradictions validate() refuses.  A bare flag (--autocast) means true; -0
// reads as 0; max_scale also takes inf (a JSON string "inf").
//
// Functions written `template <int = 0>` are compiled only in a file that calls them
// (docs/design.md, "Compiled where called").
#pragma once

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "detail/json.hpp"
#include "recipe.hpp"
#include "recipe_fields.hpp"

namespace mixprec {
namespace detail {

template <int = 0>
recipe named_recipe(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "fp32") return recipes::fp32();
  if (lower == "fp16") return recipes::fp16();
  if (lower == "bf16") return recipes::bf16();
  if (lower == "fp8") return recipes::fp8();
  if (lower == "mxfp8") return recipes::mxfp8();
  if (lower == "fp8_block") return recipes::fp8_block();
  if (lower == "nvfp4") return recipes::nvfp4();
  if (lower == "fp8_rowwise") return recipes::fp8_rowwise();
  if (lower == "mxfp4") return recipes::mxfp4();
  if (lower == "o0") return recipes::O0();
  if (lower == "o1") return recipes::O1();
  if (lower == "o2") return recipes::O2();
  if (lower == "o3") return recipes::O3();
  recipe_fail("unknown recipe name '" + printable(name) +
              "'; allowed: fp32, fp16, bf16, fp8, mxfp8, fp8_block, nvfp4, fp8_rowwise, mxfp4, O0, O1, O2, "
              "O3");
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
  } else if constexpr (std::is_same<T, precision_overrides>::value) {
    field = parse_overrides(text);
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
  } else if constexpr (std::is_same<T, precision_overrides>::value) {
    if (v.type == json_value::kind::string) return assign_text(info, v.text, field);
    if (v.type != json_value::kind::array) wrong_type("a string or an array of \"SELECTOR:PRECISION\" strings");
    std::string rules;
    for (const json_value& item : v.items) {
      if (item.type != json_value::kind::string || item.text.find(',') != std::string::npos) {
        recipe_fail(std::string(info.key) + " (line " + std::to_string(item.line) + ", column " +
                    std::to_string(item.column) + ") holds " + to_string(item.type) +
                    (item.type == json_value::kind::string ? " with a comma" : "") +
                    "; allowed: one \"SELECTOR:PRECISION\" string per item");
      }
      rules.append(rules.empty() ? "" : ",").append(item.text);
    }
    field = v.items.empty() ? precision_overrides{} : parse_overrides(rules);
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

// The (key, value) pairs of one source of settings, before they are applied: text values
// (key=value text, flags) or JSON values (a JSON object's members).  `origin` starts the message of
// an error in this source's own values ("recipe file 'train.json': "); empty for the caller's text.
struct recipe_layer {
  std::vector<std::pair<std::string, std::string>> text;
  std::vector<std::pair<std::string, json_value>> json;
  std::string origin;
};

template <class F>
void in_layer(const recipe_layer& layer, F&& f) {
  if (layer.origin.empty()) return f();
  try {
    f();
  } catch (const recipe_error& e) {
    throw recipe_error(layer.origin + e.what());
  }
}

template <class Value>
void check_unique(const std::vector<std::pair<std::string, Value>>& pairs) {
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (pairs[i].first == pairs[j].first) recipe_fail("key '" + printable(pairs[i].first) + "' is given twice");
    }
  }
}

template <int = 0>
std::string json_name(const json_value& v) {
  if (v.type != json_value::kind::string) {
    recipe_fail("recipe (line " + std::to_string(v.line) + ", column " + std::to_string(v.column) + ") is " +
                to_string(v.type) + "; allowed: a string, one of fp32, fp16, bf16, fp8, O0, O1, O2, O3");
  }
  return v.text;
}

// Every key but `recipe`, in order, onto r.
template <class Value, class Assign>
void apply_values(recipe& r, const std::vector<std::pair<std::string, Value>>& pairs, Assign&& assign) {
  for (const auto& p : pairs) {
    if (p.first == "recipe") continue;
    bool known = false;
    visit_recipe_fields(r, [&](const field_info& info, auto& field) {
      if (p.first != info.key) return;
      known = true;
      assign(info, p.second, field);
    });
    if (!known) recipe_fail("unknown key '" + printable(p.first) + "'; allowed keys: " + recipe_keys());
  }
}

// The layers, in order, onto the named base recipe, then validate() on the result.  The base is
// the last layer's `recipe` key (a command line's over a file's); every other key then applies
// layer by layer, so a later layer wins key by key.  A key twice in one layer is an error; only
// the combination has to be valid (a file's fp16 without scaling, completed by --scaling dynamic).
template <int = 0>
recipe apply_layers(std::initializer_list<const recipe_layer*> layers) {
  recipe r;
  for (const recipe_layer* layer : layers) {
    in_layer(*layer, [&] {
      check_unique(layer->text);
      check_unique(layer->json);
      for (const auto& p : layer->text) {
        if (p.first == "recipe") r = named_recipe(p.second);
      }
      for (const auto& p : layer->json) {
        if (p.first == "recipe") r = named_recipe(json_name(p.second));
      }
    });
  }
  for (const recipe_layer* layer : layers) {
    in_layer(*layer, [&] {
      apply_values(r, layer->text, [](const field_info& info, const std::string& text, auto& field) {
        assign_text(info, text, field);
      });
      apply_values(r, layer->json,
                   [](const field_info& info, const json_value& v, auto& field) { assign_json(info, v, field); });
    });
  }
  validate(r);
  return r;
}

inline bool is_key_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-'; }

template <int = 0>
std::string key_of(std::string_view raw) {
  std::string key(raw);
  for (char& c : key) c = c == '-' ? '_' : c;
  return key;
}

template <int = 0>
recipe_layer key_values_layer(std::string_view text) {
  recipe_layer layer;
  auto& pairs = layer.text;
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
    std::string value(text.substr(value_start, i - value_start));
    // override's rules are separated by commas too: a following item with a ':' and no '=' is
    // the next rule, not the next key (override=fc1:fp32,last:bf16, seed=3).
    while (key_of(key) == "override" && i < text.size() && text[i] == ',') {
      std::size_t j = i + 1;
      while (j < text.size() && (text[j] == ' ' || text[j] == '\t')) ++j;
      const std::size_t item_start = j;
      while (j < text.size() && !separator(text[j]) && text[j] != '=') ++j;
      const std::string_view item = text.substr(item_start, j - item_start);
      if (item.find(':') == std::string_view::npos || (j < text.size() && text[j] == '=')) break;
      value.append(",").append(item);
      i = j;
    }
    pairs.emplace_back(key_of(key), std::move(value));
  }
  return layer;
}

// What a flag names: nothing of the recipe's, the base recipe, a boolean key, another key.
enum class flag_kind { none, name, boolean, value };

template <int = 0>
flag_kind kind_of_flag(const std::string& key) {
  if (key == "recipe") return flag_kind::name;
  flag_kind kind = flag_kind::none;
  const recipe defaults;
  visit_recipe_fields(defaults, [&](const field_info& info, const auto& field) {
    if (key != info.key) return;
    kind = std::is_same<std::decay_t<decltype(field)>, bool>::value ? flag_kind::boolean : flag_kind::value;
  });
  return kind;
}

// The recipe's flags found in arguments, the --recipe-file path, and the other arguments in order.
struct flag_scan {
  recipe_layer flags;
  std::optional<std::string> file;
  std::vector<std::string> rest;
};

// strict: every argument must be a flag (parse_recipe's flags, parse_recipe_args), and a bare
// boolean takes the next argument as its value unless it is a flag.  Otherwise (known) arguments
// that are not the recipe's go to `rest`, and a bare boolean takes the next one only when it is
// true or false: `--autocast data.csv` leaves the program its file.  file_flag: --recipe-file is
// a flag (main's arguments; never in text, which a file itself may hold).  prefix: the recipe's
// flags are --<prefix><key> (known only).
template <int = 0>
flag_scan scan_flags(const std::vector<std::string_view>& args, bool strict, bool file_flag,
                     std::string_view prefix = {}) {
  flag_scan out;
  const std::string own = key_of(prefix);
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    if (!strict && arg == "--") {  // the end of options, for the program's parser to see too
      for (std::size_t j = i; j < args.size(); ++j) out.rest.emplace_back(args[j]);
      break;
    }
    const bool is_flag = arg.size() >= 3 && arg.substr(0, 2) == "--";
    const std::string_view body = is_flag ? arg.substr(2) : std::string_view();
    const std::size_t eq = body.find('=');
    std::string key = key_of(body.substr(0, eq));
    const bool prefixed = key.compare(0, own.size(), own) == 0;
    if (prefixed) key.erase(0, own.size());
    const flag_kind kind = is_flag && prefixed ? kind_of_flag(key) : flag_kind::none;
    const bool is_file = file_flag && is_flag && prefixed && key == "recipe_file";
    if (!strict && kind == flag_kind::none && !is_file) {
      out.rest.emplace_back(arg);
      continue;
    }
    if (!is_flag) {
      recipe_fail("expected a --flag, found '" + printable(arg) + "'; allowed flags: --" + recipe_keys() +
                  (file_flag ? ", recipe_file" : "") + " (with '-' or '_')");
    }
    std::string value;
    if (eq != std::string_view::npos) {
      value = std::string(body.substr(eq + 1));
    } else {
      const bool next = i + 1 < args.size() && args[i + 1].substr(0, 2) != "--";
      if (next && (kind != flag_kind::boolean || strict || args[i + 1] == "true" || args[i + 1] == "false")) {
        value = std::string(args[++i]);
      } else if (kind == flag_kind::boolean) {
        value = "true";
      } else {
        recipe_fail("flag --" + printable(body) + " has no value");
      }
    }
    if (!is_file) {
      out.flags.text.emplace_back(key, std::move(value));
    } else if (out.file) {
      recipe_fail("flag --" + printable(body.substr(0, eq)) + " is given twice");
    } else if (value.empty()) {
      recipe_fail("flag --" + printable(body.substr(0, eq)) + " has no value");
    } else {
      out.file = std::move(value);
    }
  }
  return out;
}

template <int = 0>
recipe_layer json_layer(std::string_view text) {
  json_value doc = parse_json(text);
  if (doc.type != json_value::kind::object) {
    recipe_fail(std::string("a JSON recipe is an object of keys; this one is ") + to_string(doc.type));
  }
  recipe_layer layer;
  layer.json = std::move(doc.members);
  return layer;
}

// Text in any of parse_recipe's forms as one layer.
template <int = 0>
recipe_layer text_layer(std::string_view text) {
  if (text.size() > json_text_limit) {
    recipe_fail(std::to_string(text.size()) + " bytes of text, the limit is " + std::to_string(json_text_limit));
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
  if (body.front() == '{' || body.front() == '[') return json_layer(text);
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
    return scan_flags(args, true, false).flags;
  }
  if (body.find('=') != std::string_view::npos) return key_values_layer(body);
  recipe_layer layer;
  layer.text.emplace_back("recipe", std::string(body));
  return layer;
}

// A file's text: at most json_text_limit + 1 bytes are read, so that text_layer names the limit.
template <int = 0>
std::string read_recipe_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw recipe_error("recipe file '" + path + "' cannot be opened");
  std::string text(json_text_limit + 1, '\0');
  in.read(&text[0], static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (in.bad()) throw recipe_error("recipe file '" + path + "' cannot be read");
  return text;
}

template <int = 0>
std::vector<std::string_view> main_arguments(const char* function, int argc, const char* const* argv, int first) {
  if (first < 0) recipe_fail(std::string(function) + ": first is " + std::to_string(first) + "; allowed: >= 0");
  if (argv == nullptr && argc > first) {
    recipe_fail(std::string(function) + ": argv is null with argc = " + std::to_string(argc));
  }
  std::vector<std::string_view> args;
  for (int i = first; i < argc; ++i) args.emplace_back(argv[i] != nullptr ? argv[i] : "");
  return args;
}

// The scanned flags over the --recipe-file's values, if one was given.
template <int = 0>
recipe apply_scan(const flag_scan& scan) {
  if (!scan.file) return apply_layers({&scan.flags});
  const std::string origin = "recipe file '" + *scan.file + "': ";
  const std::string text = read_recipe_file(*scan.file);
  recipe_layer file;
  try {
    file = text_layer(text);
  } catch (const recipe_error& e) {
    throw recipe_error(origin + e.what());
  }
  file.origin = origin;
  return apply_layers({&file, &scan.flags});
}

}  // namespace detail

template <int = 0>
recipe parse_recipe(std::string_view text) {
  const detail::recipe_layer layer = detail::text_layer(text);
  return detail::apply_layers({&layer});
}

// Flags from main's arguments, from argv[first] on; every argument must be a recipe flag
// (--recipe-file PATH included: the file's values first, the other flags over them).
template <int = 0>
recipe parse_recipe_args(int argc, const char* const* argv, int first = 1) {
  const auto args = detail::main_arguments("parse_recipe_args", argc, argv, first);
  return detail::apply_scan(detail::scan_flags(args, true, true));
}

// The recipe, and main's other arguments (from argv[first] on) for the program's own parser.
struct recipe_args {
  recipe parsed;
  std::vector<std::string> rest;  // untouched and in order; "--" and everything after it included
};

// The recipe's own flags from main's arguments; the others are left in `rest`.  With a prefix
// ("amp-") the recipe's flags are --amp-precision, --amp-seed, --amp-recipe-file ..., so that a
// program's own --seed stays the program's.  A recipe flag with a bad or missing value is an error
// as in parse_recipe_args; an argument that is not the recipe's never is.
template <int = 0>
recipe_args parse_known_recipe_args(int argc, const char* const* argv, int first = 1, std::string_view prefix = {}) {
  const auto args = detail::main_arguments("parse_known_recipe_args", argc, argv, first);
  detail::flag_scan scan = detail::scan_flags(args, false, true, prefix);
  recipe_args out{detail::apply_scan(scan), std::move(scan.rest)};
  return out;
}

// A recipe file: JSON, key=value text, flags or a name (as parse_recipe), at most 1 MiB.
template <int = 0>
recipe parse_recipe_file(const std::string& path) {
  const std::string text = detail::read_recipe_file(path);
  try {
    return parse_recipe(text);
  } catch (const recipe_error& e) {
    throw recipe_error("recipe file '" + path + "': " + e.what());
  }
}

}  // namespace mixprec
