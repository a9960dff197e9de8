// Runs the text-input fuzz target (parse_fuzz_target.cpp) on generated inputs, for compilers
// without libFuzzer: the shortest text of every code of the 8-bit and smaller types and of every
// 257th code of float16 and bfloat16, and edge texts (specials in every spelling, hexadecimal,
// long digit strings, exact midpoints, prefixes that streams must put back), mutated with the state
// fuzzers' byte mutations (tests/support/state_fuzz.hpp) and with number-shaped text mutations
// (digits, exponents, signs, points, "0x", case).  The selector byte (type, rounding, overflow)
// is random.  The target aborts on any property it finds broken.
//
//   parse_fuzz_driver [iterations = 100000] [seed = 1] [--corpus DIR] [--write-corpus DIR]
//
// --corpus replays the files of DIR first (tests/fuzz_corpus/parse, the libFuzzer corpus kept in
// the repository); --write-corpus writes the edge texts (selector byte first) to DIR and exits.
#include <mixprec/io.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "all_formats.hpp"
#include "fuzz_corpus.hpp"
#include "state_fuzz.hpp"

extern std::uint64_t parse_fuzz_accepted;

namespace {

const char* const edge_texts[] = {
    "0",
    "-0",
    "+0.000e-99",
    "inf",
    "-Infinity",
    "INF",
    "NaN",
    "-nan",
    "1e99999",
    "-1e-99999",
    "1e-400",
    "0x1.8p3",
    "0X.8P-1",
    "-0x1p-149",
    "0x1.ffep15",
    "1.",
    ".5",
    "65504",
    "65520",
    "65519.99999999999999999999",
    "1.000488281250000000000000000001",
    "1.00048828125",
    "448",
    "464",
    "-480",
    "240",
    "57344",
    "61440",
    "6",
    "7.5",
    "28",
    "3.3895e38",
    "3.4028235677973366e+38",
    "5.9604644775390625e-08",
    "2.98023223876953125e-8",
    "1e-45",
    "5.877471754111438e-39",
    "1.7014118346046923e+38",
    "0.00006103515625",
    "  1.5 2",
    "1e+x",
    "1.5,2",
    "0x",
    "infinit",
    "nan(1)",
    "+",
    "-",
    ".",
    "e5",
    "1e",
    "1_000",
    "0.1000000000000000055511151231257827021181583404541015625000000000000000000000000000000000000000000001"};

template <std::size_t I>
void add_codes(std::vector<std::string>& out) {
  using T = std::tuple_element_t<I, mixprec_test::all_types>;
  const unsigned count = mixprec_test::code_count<T>();
  const unsigned step = count > 256 ? 257 : 1;
  for (unsigned code = 0; code < count; code += step) {
    const auto bits = static_cast<typename mixprec::format_traits<typename T::format>::storage_type>(code);
    out.push_back(char(I) + mixprec::to_string(T::from_bits(bits)));
  }
}

template <std::size_t... I>
std::vector<std::string> seeds(std::index_sequence<I...>) {
  std::vector<std::string> out;
  (add_codes<I>(out), ...);
  for (const char* text : edge_texts) {
    for (std::size_t type = 0; type < sizeof...(I); ++type) out.push_back(char(type) + std::string(text));
  }
  return out;
}

// The edge texts once each, type and rounding mode cycling: a small starting corpus.
std::vector<std::string> corpus_seeds() {
  std::vector<std::string> out;
  std::size_t i = 0;
  for (const char* text : edge_texts) {
    out.push_back(static_cast<char>((i % 10) | ((i / 10 % 6) << 4)) + std::string(text));
    ++i;
  }
  return out;
}

void text_mutation(std::string& s, std::mt19937_64& random) {
  const std::size_t at = 1 + static_cast<std::size_t>(random() % s.size());  // after the selector
  switch (random() % 7) {
    case 0:
      s.insert(at, std::string(1 + random() % 300, static_cast<char>('0' + random() % 10)));
      break;
    case 1: {
      static const char* const pieces[] = {"e", "E+", "e-", "p",   "0x",  ".",   "-",         "+",
                                           "5", "0",  "9",  "inf", "nan", "ity", "999999999", "e-4000000000000000"};
      s.insert(at, pieces[random() % (sizeof pieces / sizeof pieces[0])]);
      break;
    }
    case 2:
      s.erase(at, 1 + random() % 4);
      break;
    case 3:
      s.resize(at);
      break;
    case 4:
      if (at < s.size()) s[at] = static_cast<char>(s[at] ^ 0x20);  // case, or a digit into a control byte
      break;
    case 5:
      s.insert(at, std::string(1 + random() % 3, " \t\n"[random() % 3]));
      break;
    default:
      s[0] = static_cast<char>(random());  // another type, rounding or overflow mode
      break;
  }
}

bool run(const std::string& input) {
  const std::uint64_t before = parse_fuzz_accepted;
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(input.data()), input.size());
  return parse_fuzz_accepted != before;
}

}  // namespace

int main(int argc, char** argv) {
  const fuzz_corpus::driver_options options = fuzz_corpus::parse_driver_options(argc, argv);
  if (!options.write_corpus.empty())
    return fuzz_corpus::write_all(options.write_corpus, "seed", corpus_seeds()) ? 0 : 1;
  fuzz_corpus::replay(options.corpus, "parse fuzz", run);
  const std::vector<std::string> valid =
      seeds(std::make_index_sequence<std::tuple_size<mixprec_test::all_types>::value>{});
  for (const std::string& s : valid) {
    if (!run(s) && s[0] < 10 && std::isdigit(static_cast<unsigned char>(s[1])) &&
        s.find_first_of(" ,x_(") == std::string::npos && s.back() != 'e') {
      std::fprintf(stderr, "parse fuzz: a number was refused: %s\n", s.c_str() + 1);
      return 1;
    }
  }
  std::mt19937_64 random(options.seed);
  std::uint64_t accepted = 0;
  for (std::uint64_t i = 0; i < options.iterations; ++i) {
    std::string input = valid[static_cast<std::size_t>(random() % valid.size())];
    input[0] = static_cast<char>(random());
    if (random() % 2) {
      state_fuzz::bytes_t bytes(input.begin(), input.end());
      state_fuzz::mutate(bytes, random);
      input.assign(bytes.begin(), bytes.end());
    } else {
      for (std::uint64_t k = 1 + random() % 3; k > 0; --k) text_mutation(input, random);
    }
    if (run(input)) ++accepted;
  }
  std::printf("parse fuzz: %llu mutated texts, %llu read as numbers, the rest refused cleanly\n",
              static_cast<unsigned long long>(options.iterations), static_cast<unsigned long long>(accepted));
  return 0;
}
