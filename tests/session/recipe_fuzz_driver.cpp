// Bounded fuzzing of parse_recipe: valid configurations in every text form (names, key=value,
// flags, JSON, multi-line JSON), mutated with the state fuzzers' byte mutations
// (tests/support/state_fuzz.hpp: bit flips, random and boundary bytes, boundary numbers, cuts,
// insertions, repeated chunks) and with text mutations (a digit string grown huge, nesting,
// quotes and separators dropped or doubled).  Every input must give either recipe_error or a
// recipe that passes validate() and reads back from its own text to the same settings.  Any other
// exception, a crash or a sanitizer report fails the run.
//
//   recipe_fuzz_driver [iterations = 100000] [seed = 1]
#include <mixprec/session/parse_recipe.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "state_fuzz.hpp"

namespace {

using namespace mixprec;

// JSON of a recipe, built from its key=value text: strings for enums and names, bare values for
// the rest ("inf" as a string, as the parser takes it).
std::string as_json(const recipe& r, bool multiline) {
  std::string out = "{";
  out += multiline ? "\n  " : "";
  out += "\"recipe\": \"" + r.name + "\"";
  session_detail::visit_recipe_fields(r, [&](const session_detail::field_info& info, const auto& value) {
    std::string text = session_detail::field_text(value);
    using T = std::decay_t<decltype(value)>;
    if (std::is_enum<T>::value || text == "inf") text = "\"" + text + "\"";
    out += multiline ? ",\n  " : ", ";
    out += "\"" + std::string(info.key) + "\": " + text;
  });
  return out + (multiline ? "\n}" : "}");
}

std::vector<std::string> seeds() {
  std::vector<std::string> out = {
      "fp32",
      "fp16",
      "bf16",
      "fp8",
      "O0",
      "O1",
      "O2",
      "O3",
      "precision=fp16, scaling=dynamic, init_scale=1024",
      "--precision fp16 --scaling dynamic --init-scale 1024 --growth-interval=100 --autocast",
      "--recipe O2 --max-grad-norm 1.5 --accumulation-steps 4",
      "recipe=fp8 fp8_format=e4m3 margin=2 amax_history_len=16",
      "{\"recipe\": \"bf16\", \"max_grad_norm\": 1.0, \"max_scale\": \"inf\"}",
      "{\"recipe\": \"fp16\", \"scaling\": \"hysteresis\", \"hysteresis\": 3, "
      "\"hysteresis_rules\": \"deepspeed\", \"init_scale\": 2.5e2}"};
  for (const recipe& r : {recipes::fp16(), recipes::bf16(), recipes::fp8(), recipes::O2(), recipes::O3()}) {
    out.push_back(to_string(r));
    out.push_back(as_json(r, false));
    out.push_back(as_json(r, true));
  }
  return out;
}

void text_mutation(std::string& s, std::mt19937_64& random) {
  if (s.empty()) return;
  const std::size_t at = static_cast<std::size_t>(random() % s.size());
  switch (random() % 6) {
    case 0:
      s.insert(at, std::string(1 + random() % 400, '9'));  // huge numbers
      break;
    case 1:
      s.insert(at, std::string(1 + random() % 64, random() % 2 ? '[' : '{'));
      break;
    case 2: {
      static const char special[] = {'"', ',', '=', ':', ' ', '\\', '-', 'e', '.', '\0', '\n'};
      s.insert(s.begin() + static_cast<std::ptrdiff_t>(at), special[random() % sizeof special]);
      break;
    }
    case 3:
      s.erase(at, 1 + random() % 8);
      break;
    case 4: {
      static const char* const words[] = {"true", "null", "-0", "1e999", "inf", "nan", "\\u0000", "\\ud800", "O2"};
      s.insert(at, words[random() % (sizeof words / sizeof words[0])]);
      break;
    }
    default:
      s = s.substr(0, at);  // truncated
      break;
  }
}

// One input: a recipe_error, or a valid recipe that reads back from its own text.
bool parse_one(const std::string& text) {
  try {
    const recipe r = parse_recipe(text);
    validate(r);
    if (to_string(parse_recipe(to_string(r))) != to_string(r)) {
      std::fprintf(stderr, "accepted recipe does not read back: %s\n", to_string(r).c_str());
      std::abort();
    }
    return true;
  } catch (const recipe_error&) {
    return false;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unexpected exception (%s) for input of %zu bytes\n", e.what(), text.size());
    std::abort();
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::uint64_t iterations = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 100000;
  const std::uint64_t seed = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1;
  std::mt19937_64 random(seed);
  const std::vector<std::string> valid = seeds();
  for (const std::string& s : valid) {
    if (!parse_one(s)) {
      std::fprintf(stderr, "a valid seed configuration was refused: %s\n", s.c_str());
      return 1;
    }
  }
  std::uint64_t accepted = 0;
  for (std::uint64_t i = 0; i < iterations; ++i) {
    std::string text = valid[static_cast<std::size_t>(random() % valid.size())];
    if (random() % 2) {
      state_fuzz::bytes_t bytes(1, 0);  // the mutator keeps byte 0 (its selector) in place
      bytes.insert(bytes.end(), text.begin(), text.end());
      state_fuzz::mutate(bytes, random);
      text.assign(bytes.begin() + 1, bytes.end());
    } else {
      text_mutation(text, random);
    }
    if (parse_one(text)) ++accepted;
  }
  std::printf("recipe fuzz: %llu mutated configurations, %llu accepted (valid recipes), the rest refused cleanly\n",
              static_cast<unsigned long long>(iterations), static_cast<unsigned long long>(accepted));
  return 0;
}
