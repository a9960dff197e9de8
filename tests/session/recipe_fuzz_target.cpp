// Fuzz target for the recipe parsers (session/parse_recipe.hpp, session/detail/json.hpp).  The
// first byte selects the entry point (recipe_fuzz.hpp: text, argv split at NUL or at whitespace,
// the JSON reader); the rest is the input.  Properties, beyond "no crash and no sanitizer
// report":
//   - every refusal is a recipe_error (the documented exception; anything else aborts);
//   - an accepted recipe passes validate() and reads back to the same settings and name from its
//     key=value text (to_string), from JSON and from --flags;
//   - a name is accepted exactly when it is one of the eight (any case) and gives that recipe;
//   - flags split at whitespace give the same result through parse_recipe_args as through
//     parse_recipe (both accept the same recipe, or both refuse);
//   - parse_known_recipe_args on the same arguments returns the recipe parse_recipe_args accepts
//     with nothing left over, accepts with nothing left over only what parse_recipe_args accepts,
//     and leaves arguments in the order given (a subsequence of them);
//   - the JSON reader and parse_recipe agree: JSON that the reader refuses is refused as a
//     recipe, and a recipe is only read from an object.
// Arguments that name --recipe-file are skipped: the target never opens files, and text (which
// parse_recipe reads) has no such flag.
// Built with clang's -fsanitize=fuzzer it is the libFuzzer binary recipe_fuzzer;
// recipe_fuzz_driver.cpp runs it on generated inputs elsewhere.
#include <mixprec/session/parse_recipe.hpp>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "recipe_fuzz.hpp"

// Inputs accepted so far (the driver reports it).
std::uint64_t recipe_fuzz_accepted = 0;

namespace {

using namespace mixprec;

[[noreturn]] void fail(const char* what, std::string_view input) {
  std::fprintf(stderr, "recipe fuzz: %s; input (%zu bytes): %.*s\n", what, input.size(),
               static_cast<int>(input.size() < 512 ? input.size() : 512), input.data());
  std::abort();
}

// The recipe that `parse` gives, or nothing for a recipe_error; any other exception aborts.
template <class Parse>
std::optional<recipe> attempt(Parse&& parse, std::string_view input) {
  try {
    return parse();
  } catch (const recipe_error&) {
    return std::nullopt;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "recipe fuzz: unexpected exception: %s\n", e.what());
    fail("an exception other than recipe_error", input);
  }
}

bool same(const recipe& a, const recipe& b) { return a.name == b.name && to_string(a) == to_string(b); }

bool names_a_file(const std::vector<std::string>& args) {
  for (const std::string& arg : args) {
    const std::string_view a = arg.c_str();  // what main would pass: up to a NUL
    if (a.size() < 3 || a.substr(0, 2) != "--") continue;
    if (detail::key_of(a.substr(2, a.find('=') - 2)) == "recipe_file") return true;
  }
  return false;
}

// parse_known_recipe_args against parse_recipe_args' result on the same arguments.
void check_known(const std::vector<const char*>& argv, const std::optional<recipe>& strict, std::string_view input) {
  std::optional<recipe_args> known;
  try {
    known = parse_known_recipe_args(static_cast<int>(argv.size()), argv.data());
  } catch (const recipe_error&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "recipe fuzz: unexpected exception: %s\n", e.what());
    fail("parse_known_recipe_args threw an exception other than recipe_error", input);
  }
  if (strict && (!known || !known->rest.empty() || !same(known->parsed, *strict))) {
    fail("parse_known_recipe_args differs from parse_recipe_args on recipe flags alone", input);
  }
  if (known && known->rest.empty() && !strict) {
    fail("parse_known_recipe_args took every argument that parse_recipe_args refuses", input);
  }
  if (known) {
    std::size_t next = 1;  // the arguments as main passes them (split at whitespace, one may end at a NUL)
    for (const std::string& kept : known->rest) {
      while (next < argv.size() && kept != argv[next]) ++next;
      if (next == argv.size()) fail("parse_known_recipe_args returned arguments out of order", input);
      ++next;
    }
  }
}

std::optional<recipe> from_args(const std::vector<std::string>& args, std::string_view input) {
  std::vector<const char*> argv = {"fuzz"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::optional<recipe> got =
      attempt([&] { return parse_recipe_args(static_cast<int>(argv.size()), argv.data()); }, input);
  check_known(argv, got, input);
  return got;
}

// An accepted recipe is valid and reads back from each of its text forms.
void check_accepted(const recipe& r, std::string_view input) {
  try {
    validate(r);
  } catch (const recipe_error&) {
    fail("an accepted recipe does not validate", input);
  }
  const std::optional<recipe> from_text = attempt([&] { return parse_recipe(to_string(r)); }, input);
  if (!from_text || !same(*from_text, r)) fail("an accepted recipe does not read back from to_string", input);
  const std::optional<recipe> from_json = attempt([&] { return parse_recipe(recipe_fuzz::as_json(r, false)); }, input);
  if (!from_json || !same(*from_json, r)) fail("an accepted recipe does not read back from JSON", input);
  const std::optional<recipe> from_flags = from_args(recipe_fuzz::as_flags(r), input);
  if (!from_flags || !same(*from_flags, r)) fail("an accepted recipe does not read back from flags", input);
  ++recipe_fuzz_accepted;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// Text that parse_recipe reads as a name: not JSON, not flags, no '='.
void check_name(std::string_view input, const std::optional<recipe>& got) {
  const std::string_view body = trimmed(input);
  if (body.empty() || body.front() == '{' || body.front() == '[' || body.substr(0, 2) == "--" ||
      body.find('=') != std::string_view::npos || input.find('\0') != std::string_view::npos) {
    return;
  }
  std::string lower(body);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::pair<const char*, recipe (*)()> names[] = {
      {"fp32", recipes::fp32},   {"fp16", recipes::fp16},
      {"bf16", recipes::bf16},   {"fp8", recipes::fp8},
      {"mxfp8", recipes::mxfp8}, {"fp8_block", recipes::fp8_block},
      {"nvfp4", recipes::nvfp4}, {"fp8_rowwise", recipes::fp8_rowwise},
      {"mxfp4", recipes::mxfp4}, {"o0", recipes::O0},
      {"o1", recipes::O1},       {"o2", recipes::O2},
      {"o3", recipes::O3}};
  for (const auto& n : names) {
    if (lower != n.first) continue;
    if (!got || !same(*got, n.second())) fail("a recipe name does not give its recipe", input);
    return;
  }
  if (got) fail("text that is no recipe name was accepted as one", input);
}

std::vector<std::string> split(std::string_view text, bool at_nul) {
  std::vector<std::string> out;
  if (at_nul) {
    std::size_t start = 0;
    for (std::size_t i = 0; i <= text.size(); ++i) {
      if (i == text.size() || text[i] == '\0') {
        out.emplace_back(text.substr(start, i - start));
        start = i + 1;
      }
    }
    return out;
  }
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_space(text[i])) ++i;
    const std::size_t start = i;
    while (i < text.size() && !is_space(text[i])) ++i;
    if (i > start) out.emplace_back(text.substr(start, i - start));
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::optional<recipe> got;
  switch (data[0] & 3u) {
    case recipe_fuzz::text:
      got = attempt([&] { return parse_recipe(input); }, input);
      check_name(input, got);
      break;
    case recipe_fuzz::argv_by_nul: {
      const std::vector<std::string> args = split(input, true);
      if (names_a_file(args)) return 0;
      got = from_args(args, input);
      break;
    }
    case recipe_fuzz::argv_by_space: {
      const std::vector<std::string> args = split(input, false);
      if (names_a_file(args)) return 0;
      got = from_args(args, input);
      // Flags in one string read as the same arguments would (parse_recipe splits at whitespace).
      if (trimmed(input).substr(0, 2) == "--" && input.find('\0') == std::string_view::npos) {
        const std::optional<recipe> as_text = attempt([&] { return parse_recipe(input); }, input);
        if (as_text.has_value() != got.has_value() || (got && !same(*got, *as_text))) {
          fail("parse_recipe and parse_recipe_args disagree on flags", input);
        }
      }
      break;
    }
    default: {
      std::optional<detail::json_value> doc;
      try {
        doc = detail::parse_json(input);
      } catch (const recipe_error&) {
      } catch (const std::exception& e) {
        std::fprintf(stderr, "recipe fuzz: unexpected exception: %s\n", e.what());
        fail("the JSON reader threw an exception other than recipe_error", input);
      }
      got = attempt([&] { return parse_recipe(input); }, input);
      const std::string_view body = trimmed(input);
      const bool json_text = !body.empty() && (body.front() == '{' || body.front() == '[');
      if (json_text && got && (!doc || doc->type != detail::json_value::kind::object)) {
        fail("a recipe was read from JSON that is not an object", input);
      }
      break;
    }
  }
  if (got) check_accepted(*got, input);
  return 0;
}
