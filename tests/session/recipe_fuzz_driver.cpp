// Runs the recipe fuzz target (recipe_fuzz_target.cpp) on generated inputs, for compilers without
// libFuzzer: valid configurations in every text form (names, key=value, flags in one string and
// as NUL-separated arguments, JSON, multi-line JSON), mutated with the state fuzzers' byte
// mutations (tests/support/state_fuzz.hpp: bit flips, random and boundary bytes, boundary
// numbers, cuts, insertions, repeated chunks) and with text mutations (a digit string grown huge,
// nesting, quotes and separators dropped or doubled).  The target aborts on any input that is
// neither refused with recipe_error nor accepted as a valid recipe that reads back.
//
//   recipe_fuzz_driver [iterations = 100000] [seed = 1] [--corpus DIR] [--write-corpus DIR]
//
// --corpus replays the files of DIR first (tests/fuzz_corpus/recipe, the libFuzzer corpus kept in
// the repository); --write-corpus writes the unmutated seeds (selector byte first) to DIR and exits.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "fuzz_corpus.hpp"
#include "recipe_fuzz.hpp"
#include "state_fuzz.hpp"

extern std::uint64_t recipe_fuzz_accepted;

namespace {

using namespace mixprec;

std::string with_selector(recipe_fuzz::selector s, const std::string& body) { return char(s) + body; }

// Valid inputs, each with its selector byte in front.
std::vector<std::string> seeds() {
  std::vector<std::string> out;
  for (const char* name : {"fp32", "fp16", "bf16", "fp8", "mxfp8", "fp8_block", "nvfp4", "fp8_rowwise", "mxfp4", "O0",
                           "O1", "O2", "O3", "  o2\n", "BF16"}) {
    out.push_back(with_selector(recipe_fuzz::text, name));
  }
  for (const char* text :
       {"precision=fp16, scaling=dynamic, init_scale=1024", "recipe=fp8 fp8_format=e4m3 margin=2 amax_history_len=16",
        "recipe=O2,max_grad_norm=1.5,accumulation-steps=4", "recipe = bf16\nmax_scale=inf\tseed=7",
        "--precision fp16 --scaling dynamic --init-scale 1024 --growth-interval=100 --autocast",
        "--recipe O2 --max-grad-norm 1.5 --accumulation-steps 4",
        "--recipe=fp8 --fp8-format e5m2 --margin -3 --amax-compute-algo most_recent",
        "recipe=fp8, override=first:bf16, last:bf16,fc?.w*:fp8,2-3:fp32 seed=2",
        "--recipe bf16 --override fc1:fp32,norm*:fp32 --max-grad-norm 1", "recipe=nvfp4, seed=3, override=last:bf16",
        "--precision fp8_block --autocast --master-weights"}) {
    out.push_back(with_selector(recipe_fuzz::text, text));
    if (text[0] == '-') out.push_back(with_selector(recipe_fuzz::argv_by_space, text));
  }
  out.push_back(with_selector(recipe_fuzz::argv_by_nul, std::string("--recipe\0fp16\0--init-scale\0"
                                                                    "256",
                                                                    30)));
  for (const char* json : {"{\"recipe\": \"bf16\", \"max_grad_norm\": 1.0, \"max_scale\": \"inf\"}",
                           "{\"recipe\": \"fp16\", \"scaling\": \"hysteresis\", \"hysteresis\": 3, "
                           "\"hysteresis_rules\": \"deepspeed\", \"init_scale\": 2.5e2}",
                           "{}", " {\"seed\": 0, \"precision\": \"bf16\", \"autocast\": true}\n",
                           "{\"recipe\": \"bf16\", \"override\": [\"first:fp32\", \"0-2:bf16\"]}"}) {
    out.push_back(with_selector(recipe_fuzz::text, json));
    out.push_back(with_selector(recipe_fuzz::json, json));
  }
  for (const recipe& r :
       {recipes::fp16(), recipes::bf16(), recipes::fp8(), recipes::nvfp4(), recipes::O2(), recipes::O3()}) {
    out.push_back(with_selector(recipe_fuzz::text, to_string(r)));
    out.push_back(with_selector(recipe_fuzz::text, recipe_fuzz::as_json(r, false)));
    out.push_back(with_selector(recipe_fuzz::json, recipe_fuzz::as_json(r, true)));
    std::string by_nul, by_space;
    for (const std::string& a : recipe_fuzz::as_flags(r)) {
      by_nul += (by_nul.empty() ? "" : std::string(1, '\0')) + a;
      by_space += (by_space.empty() ? "" : " ") + a;
    }
    out.push_back(with_selector(recipe_fuzz::argv_by_nul, by_nul));
    out.push_back(with_selector(recipe_fuzz::argv_by_space, by_space));
  }
  return out;
}

void text_mutation(std::string& s, std::mt19937_64& random) {
  if (s.size() < 2) return;
  const std::size_t at = 1 + static_cast<std::size_t>(random() % (s.size() - 1));  // the selector stays
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
      s.resize(at);  // truncated
      break;
  }
}

bool run(const std::string& input) {
  const std::uint64_t before = recipe_fuzz_accepted;
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(input.data()), input.size());
  return recipe_fuzz_accepted != before;
}

}  // namespace

int main(int argc, char** argv) {
  const fuzz_corpus::driver_options options = fuzz_corpus::parse_driver_options(argc, argv);
  const std::vector<std::string> valid = seeds();
  if (!options.write_corpus.empty()) return fuzz_corpus::write_all(options.write_corpus, "seed", valid) ? 0 : 1;
  fuzz_corpus::replay(options.corpus, "recipe fuzz", run);
  for (const std::string& s : valid) {
    if (!run(s)) {
      std::fprintf(stderr, "a valid seed configuration was refused: %s\n", s.c_str() + 1);
      return 1;
    }
  }
  std::mt19937_64 random(options.seed);
  std::uint64_t accepted = 0;
  for (std::uint64_t i = 0; i < options.iterations; ++i) {
    std::string input = valid[static_cast<std::size_t>(random() % valid.size())];
    if (random() % 2) {
      state_fuzz::bytes_t bytes(input.begin(), input.end());
      state_fuzz::mutate(bytes, random);  // byte 0 changes now and then: another entry point
      input.assign(bytes.begin(), bytes.end());
    } else {
      text_mutation(input, random);
    }
    if (run(input)) ++accepted;
  }
  std::printf("recipe fuzz: %llu mutated configurations, %llu accepted (valid recipes), the rest refused cleanly\n",
              static_cast<unsigned long long>(options.iterations), static_cast<unsigned long long>(accepted));
  return 0;
}
