// Every kernel path (portable, AVX2, AVX-512, AVX512-BF16) against the scalar functions over all 2^32 float inputs:
// float -> T for the types and modes asked for (default: bfloat16, float16, float8_e4m3fn, float8_e5m2 under
// nearest_even, both overflow modes).  The scalar results are computed once per block and each
// path the CPU has is compared with them; paths the CPU lacks are reported as skipped.
// `stochastic` among the modes (or `all`) also compares convert_stochastic_n's kernels: input i
// of the sweep is element i of one long array, rounded with philox_bits(seed, i).
//
// `stochastic` runs both rules (proportional, equal_probability); --subnormals flush or both
// also compares the subnormals::flush paths of convert_n and convert_stochastic_n.
//
//   bulk_sweep [--types a,b,...] [--modes all|<mode>|stochastic,...] [--stride N] [--threads N]
//              [--subnormals keep|flush|both]
#include <mixprec/bulk/convert_n.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "all_formats.hpp"
#include "sweep.hpp"

namespace {

using namespace mixprec;
using mixprec_test::all_overflows;

// The kernel paths this CPU has (the portable kernels always; the scalar functions are what
// they are compared with).
std::vector<simd_path> vector_paths() {
  std::vector<simd_path> paths;
  for (simd_path p : {simd_path::portable, simd_path::avx2, simd_path::avx512, simd_path::avx512_bf16}) {
    if (simd_path_supported(p)) paths.push_back(p);
  }
  return paths;
}

std::string mode_name(const char* mode, subnormals s) {
  return std::string(mode) + (s == subnormals::flush ? "/flush" : "");
}

template <class T>
int sweep(const std::vector<rounding>& modes, bool stochastic, const std::vector<subnormals>& policies,
          std::uint64_t stride, unsigned threads) {
  const std::vector<simd_path> paths = vector_paths();
  const std::string name = format_name<typename T::format>();
  std::atomic<std::uint64_t> checks{0}, mismatches{0};
  mixprec_test::stopwatch clock;
  constexpr std::uint64_t block = 1u << 16;
  mixprec_test::parallel_ranges(
      0, (std::uint64_t{1} << 32) / block, 1, threads, [&](std::uint64_t first, std::uint64_t last) {
        std::vector<float> in(block);
        std::vector<T> expected(block), actual(block);
        for (std::uint64_t b = first; b < last; ++b) {
          std::size_t n = 0;
          for (std::uint64_t u = b * block; u < (b + 1) * block; u += stride) {
            const auto bits = static_cast<std::uint32_t>(u);
            std::memcpy(&in[n++], &bits, 4);
          }
          const auto compare = [&](simd_path path, const char* mode, overflow o) {
            checks += n;
            // One memcmp per block: a byte loop with the report inside took half the sweep's time.
            if (std::memcmp(actual.data(), expected.data(), n * sizeof(T)) == 0) return;
            for (std::size_t i = 0; i < n; ++i) {
              if (actual[i].bits() != expected[i].bits() && mismatches.fetch_add(1) < 10) {
                std::printf("  MISMATCH %s %s %s %s x=%a: expected 0x%x, got 0x%x\n", name.c_str(), to_string(path),
                            mode, to_string(o), static_cast<double>(in[i]), expected[i].bits(), actual[i].bits());
              }
            }
          };
          for (subnormals s : policies) {
            for (rounding r : modes) {
              for (overflow o : all_overflows) {
                for (std::size_t i = 0; i < n; ++i) expected[i] = convert<T>(in[i], r, o, s);
                for (simd_path path : paths) {
                  detail::convert_n_on(path, in.data(), n, actual.data(), r, o, s);
                  compare(path, mode_name(to_string(r), s).c_str(), o);
                }
              }
            }
            if (!stochastic) continue;
            // Input i of the sweep is element i of one long array (one thread's share of it
            // starting at `index`); with flush, each block is an array of its own.
            constexpr std::uint64_t seed = 0x5EED5EED12345678u;
            const std::uint64_t index = s == subnormals::keep ? b * block / stride : 0;  // of in[0]
            for (stochastic_rule rule : {stochastic_rule::proportional, stochastic_rule::equal_probability}) {
              for (overflow o : all_overflows) {
                for (std::size_t i = 0; i < n; ++i) {
                  expected[i] = convert_stochastic<T>(in[i], detail::philox_bits(seed, index + i), o, rule, s);
                }
                for (simd_path path : paths) {
                  if (s == subnormals::keep) {
                    detail::stochastic_serial(path, in.data(), n, actual.data(), o, seed, index, rule);
                  } else {
                    detail::convert_stochastic_n_on(path, in.data(), n, actual.data(), seed, o, rule, s);
                  }
                  compare(path, mode_name(to_string(rule), s).c_str(), o);
                }
              }
            }
          }
        }
      });
  std::printf(
      "%-14s %zu paths x %zu modes x 2 overflow modes x %zu subnormal policies over 2^32 floats / stride %llu: "
      "%llu checks, %llu mismatches, %.1f s\n",
      name.c_str(), paths.size(), modes.size() + (stochastic ? 2 : 0), policies.size(),
      static_cast<unsigned long long>(stride), static_cast<unsigned long long>(checks.load()),
      static_cast<unsigned long long>(mismatches.load()), clock.seconds());
  return mismatches == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> types = {"bfloat16", "float16", "float8_e4m3fn", "float8_e5m2"};
  std::vector<rounding> modes = {rounding::nearest_even};
  bool stochastic = false;
  std::vector<subnormals> policies = {subnormals::keep};
  std::uint64_t stride = 1;
  unsigned threads = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--types" && i + 1 < argc) {
      types = mixprec_test::split(argv[++i]);
    } else if (arg == "--modes" && i + 1 < argc) {
      const std::string list = argv[++i];
      modes.clear();
      for (rounding r : mixprec_test::all_roundings) {
        for (const std::string& m : mixprec_test::split(list)) {
          if (m == "all" || m == to_string(r)) modes.push_back(r);
        }
      }
      for (const std::string& m : mixprec_test::split(list)) stochastic = stochastic || m == "all" || m == "stochastic";
    } else if (arg == "--stride" && i + 1 < argc) {
      stride = std::max<std::uint64_t>(1, std::stoull(argv[++i]));
    } else if (arg == "--threads" && i + 1 < argc) {
      threads = static_cast<unsigned>(std::stoul(argv[++i]));
    } else if (arg == "--subnormals" && i + 1 < argc) {
      const std::string which = argv[++i];
      policies.clear();
      if (which == "keep" || which == "both") policies.push_back(subnormals::keep);
      if (which == "flush" || which == "both") policies.push_back(subnormals::flush);
      if (policies.empty()) {
        std::fprintf(stderr, "--subnormals takes keep, flush or both\n");
        return 2;
      }
    } else {
      std::fprintf(stderr,
                   "usage: %s [--types a,b] [--modes all|<mode>|stochastic,...] [--stride N] [--threads N] "
                   "[--subnormals keep|flush|both]\n",
                   argv[0]);
      return 2;
    }
  }
  for (simd_path p : {simd_path::avx2, simd_path::avx512, simd_path::avx512_bf16}) {
    if (!simd_path_supported(p)) std::printf("SIMD path %s skipped: not available on this CPU\n", to_string(p));
  }
  int status = 0;
  for (const std::string& type : types) {
    if (!mixprec_test::with_type_named(
            type, [&](auto tag) { status |= sweep<decltype(tag)>(modes, stochastic, policies, stride, threads); })) {
      std::fprintf(stderr, "unknown type: %s\n", type.c_str());
      return 2;
    }
  }
  return status;
}
