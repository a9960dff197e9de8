// float -> every narrow integer (int4, uint4, int2, uint2, int1, uint1) under every rounding mode,
// both overflow modes and both stochastic rules, against tests/intn/intn_oracle.hpp (floor-free
// exact arithmetic on doubles, no library code): every float, or every stride-th float plus every
// breakpoint k and k + 1/2 (|k| <= 20) with its 16 float neighbours on each side.  Stochastic
// rounding is checked at the exact threshold: a value whose fraction reads F = floor(frac · 2^32)
// rounds away from zero for the random words 2^32 - F and up, toward it below (so for exactly F of
// the 2^32 words); equal_probability for the words with the top bit set.
//   float_to_intn_sweep [--stride N] [--threads N]
#include <mixprec/intn_convert.hpp>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "../intn/intn_oracle.hpp"

using namespace mixprec;

namespace {

constexpr rounding every_rounding[] = {rounding::nearest_even, rounding::nearest_away, rounding::toward_zero,
                                       rounding::upward,       rounding::downward,     rounding::to_odd,
                                       rounding::nearest_zero};

struct counts {
  std::uint64_t checks = 0, mismatches = 0;
};

template <class T>
void check_one(float x, counts& c) {
  constexpr int bits = T::bits_per_value;
  const auto report = [&](const char* what, int got, int expected) {
    if (++c.mismatches <= 10) {
      std::fprintf(stderr, "%s%d: %a (%.9g) %s gave %d, expected %d\n", T::is_signed ? "int" : "uint", bits,
                   static_cast<double>(x), static_cast<double>(x), what, got, expected);
    }
  };
  for (rounding r : every_rounding) {
    const int expected = intn_oracle::converted(x, r, bits, T::is_signed);
    for (overflow o : {overflow::non_finite, overflow::saturate}) {
      const int got = convert<T>(x, r, o).value();
      ++c.checks;
      if (got != expected) report(to_string(r), got, expected);
    }
  }
  // Stochastic: the two integers around x, and the threshold word.
  if (std::isnan(x)) {
    ++c.checks;
    if (convert_stochastic<T>(x, ~0u).value() != 0) report("stochastic", convert_stochastic<T>(x, ~0u).value(), 0);
    return;
  }
  const int toward = intn_oracle::converted(x, rounding::toward_zero, bits, T::is_signed);
  const int away =
      intn_oracle::converted(x, std::signbit(x) ? rounding::downward : rounding::upward, bits, T::is_signed);
  const double frac = std::isinf(x) ? 0.0 : std::fabs(static_cast<double>(x) - std::trunc(static_cast<double>(x)));
  const auto fixed = static_cast<std::uint64_t>(std::floor(frac * 0x1p32));
  std::uint32_t words[4] = {0u, ~0u, 0x7FFFFFFFu, 0x80000000u};
  int expect_proportional[4] = {toward, fixed == 0 ? toward : away, 0, 0};
  for (int i = 0; i < 2; ++i) {
    const int got = convert_stochastic<T>(x, words[i]).value();
    ++c.checks;
    if (got != expect_proportional[i]) report("stochastic", got, expect_proportional[i]);
  }
  if (fixed != 0) {
    const auto threshold = static_cast<std::uint32_t>((std::uint64_t{1} << 32) - fixed);
    const int at = convert_stochastic<T>(x, threshold).value();
    const int below = convert_stochastic<T>(x, threshold - 1).value();
    c.checks += 2;
    if (at != away) report("stochastic at the threshold", at, away);
    if (below != toward) report("stochastic below the threshold", below, toward);
  }
  const bool exact = frac == 0;
  for (int i = 2; i < 4; ++i) {
    const int got = convert_stochastic<T>(x, words[i], overflow::saturate, stochastic_rule::equal_probability).value();
    const int expected = exact || i == 2 ? toward : away;
    ++c.checks;
    if (got != expected) report("stochastic equal_probability", got, expected);
  }
}

void check_all_types(float x, counts& c) {
  check_one<int4>(x, c);
  check_one<uint4>(x, c);
  check_one<int2>(x, c);
  check_one<uint2>(x, c);
  check_one<int1>(x, c);
  check_one<uint1>(x, c);
}

float from_bits(std::uint32_t b) {
  float x;
  std::memcpy(&x, &b, 4);
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t stride = 1;
  unsigned threads = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string option = argv[i];
    if (option == "--stride") {
      stride = std::strtoull(argv[i + 1], nullptr, 10);
    } else if (option == "--threads") {
      threads = static_cast<unsigned>(std::strtoul(argv[i + 1], nullptr, 10));
    } else {
      std::fprintf(stderr, "usage: %s [--stride N] [--threads N]\n", argv[0]);
      return 2;
    }
  }
  if (stride == 0 || threads == 0) return 2;
  const auto start = std::chrono::steady_clock::now();
  std::vector<counts> per_thread(threads);
  std::vector<std::thread> workers;
  const std::uint64_t total = std::uint64_t{1} << 32;
  const std::uint64_t steps = (total + stride - 1) / stride;
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      counts& c = per_thread[t];
      for (std::uint64_t step = t; step < steps; step += threads) {
        check_all_types(from_bits(static_cast<std::uint32_t>(step * stride)), c);
      }
      if (t == 0 && stride > 1) {
        for (int k2 = -40; k2 <= 40; ++k2) {
          const float b = static_cast<float>(k2) / 2.0f;
          float down = b, up = b;
          check_all_types(b, c);
          for (int i = 0; i < 16; ++i) {
            down = std::nextafter(down, -100.0f);
            up = std::nextafter(up, 100.0f);
            check_all_types(down, c);
            check_all_types(up, c);
          }
        }
      }
    });
  }
  for (auto& w : workers) w.join();
  counts sum;
  for (const counts& c : per_thread) {
    sum.checks += c.checks;
    sum.mismatches += c.mismatches;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "float -> int4/uint4/int2/uint2/int1/uint1, every %llu-th float%s: %llu checks, %llu mismatches, %.1f s\n",
      static_cast<unsigned long long>(stride), stride > 1 ? " and every breakpoint" : "",
      static_cast<unsigned long long>(sum.checks), static_cast<unsigned long long>(sum.mismatches), seconds);
  return sum.mismatches == 0 ? 0 : 1;
}
