// Shared by the recipe fuzz target (recipe_fuzz_target.cpp) and its driver
// (recipe_fuzz_driver.cpp): a recipe written in each text form that parse_recipe reads, and the
// selector byte that starts every fuzz input.
#pragma once

#include <mixprec/session/parse_recipe.hpp>

#include <string>
#include <type_traits>
#include <vector>

namespace recipe_fuzz {

// The first byte of a fuzz input (its low two bits) says how the rest is read.
enum selector : unsigned char {
  text = 0,           // parse_recipe(rest): a name, key=value pairs, --flags or JSON, by its first bytes
  argv_by_nul = 1,    // parse_recipe_args over the rest split at NUL bytes (arguments may hold spaces)
  argv_by_space = 2,  // parse_recipe_args over the rest split at whitespace, as parse_recipe splits flags
  json = 3,           // the JSON reader on its own (any value, not only an object), then parse_recipe
};

// JSON of a recipe: strings for enums and names, bare values for the rest ("inf" as a string,
// as the parser takes it).
inline std::string as_json(const mixprec::recipe& r, bool multiline) {
  namespace sd = mixprec::detail;
  std::string out = "{";
  out += multiline ? "\n  " : "";
  out += "\"recipe\": \"" + r.name + "\"";
  sd::visit_recipe_fields(r, [&](const sd::field_info& info, const auto& value) {
    std::string value_text = sd::field_text(value);
    using T = std::decay_t<decltype(value)>;
    if (std::is_enum<T>::value || std::is_same<T, mixprec::precision_overrides>::value || value_text == "inf") {
      value_text = "\"" + value_text + "\"";
    }
    out += multiline ? ",\n  " : ", ";
    out += "\"" + std::string(info.key) + "\": " + value_text;
  });
  return out + (multiline ? "\n}" : "}");
}

// A recipe as command-line arguments: --recipe NAME, then --key value with '-' in keys (every
// bool as --key true|false, so that a false survives).
inline std::vector<std::string> as_flags(const mixprec::recipe& r) {
  namespace sd = mixprec::detail;
  std::vector<std::string> out = {"--recipe", r.name};
  sd::visit_recipe_fields(r, [&](const sd::field_info& info, const auto& value) {
    std::string key = info.key;
    for (char& c : key) c = c == '_' ? '-' : c;
    out.push_back("--" + key);
    out.push_back(sd::field_text(value));
  });
  return out;
}

}  // namespace recipe_fuzz
