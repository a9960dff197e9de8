// Bulk conversion speed on this machine: convert_n from float to T (encode) and from T to float
// (decode), on one thread, against memcpy of a float array of the same length.  The narrow
// integers go through pack_n and unpack_n, packed as they are exchanged (int4: two per byte).
//
// GB/s counts bytes read plus bytes written, as docs/performance.md does.  Each figure is the
// median of three timings of at least `min_seconds` each; the benchmarks under benchmarks/ (Google
// Benchmark) give the careful figures, this is the quick look a user gets on their own machine.
#pragma once

#include <mixprec/bulk/convert_n.hpp>
#include <mixprec/bulk/intn_pack.hpp>
#include <mixprec/intn_packing.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <vector>

#include "formats.hpp"

namespace mixprec_example {

// Publishes a buffer's address in a volatile variable: from then on the compiler must assume that
// any call it cannot see into (the clock) may read the buffer, so it keeps every write to it, even
// the repeated identical ones of a timing loop.
inline const void* volatile published_buffer = nullptr;
inline void keep_writes_to(const void* buffer) { published_buffer = buffer; }

// Seconds per call of f: calls it until min_seconds have passed, three times over, and takes the
// median of the three averages (a single slow pass, another process taking the core, does not
// decide the figure).
template <class F>
double seconds_per_call(F&& f, double min_seconds) {
  using clock = std::chrono::steady_clock;
  f();  // warm the caches and fault the pages in
  double timings[3] = {0, 0, 0};
  for (double& t : timings) {
    std::size_t calls = 0;
    const clock::time_point start = clock::now();
    double elapsed = 0;
    do {
      f();
      ++calls;
      elapsed = std::chrono::duration<double>(clock::now() - start).count();
    } while (elapsed < min_seconds);
    t = elapsed / static_cast<double>(calls);
  }
  // The median of three, written out: clang-analyzer reports std::sort over this array as
  // reading an uninitialised value (a false positive, seen with the tfloat32 instantiation).
  const double low = std::min(timings[0], timings[1]), high = std::max(timings[0], timings[1]);
  return std::max(low, std::min(high, timings[2]));
}

struct conversion_speed {
  double encode_gb_per_s;  // float -> T
  double decode_gb_per_s;  // T -> float
};

namespace detail {
template <class Encode, class Decode>
conversion_speed speed_of(double bytes, Encode&& encode, Decode&& decode, double min_seconds) {
  return {bytes / seconds_per_call(encode, min_seconds) / 1e9, bytes / seconds_per_call(decode, min_seconds) / 1e9};
}
}  // namespace detail

template <class T>
conversion_speed measure_conversion_speed(const std::vector<float>& input, double min_seconds) {
  const std::size_t n = input.size();
  std::vector<float> wide(n);
  keep_writes_to(wide.data());
  if constexpr (is_narrow_integer<T>) {
    std::vector<unsigned char> packed(mixprec::packed_bytes<T>(n));
    keep_writes_to(packed.data());
    return detail::speed_of(
        static_cast<double>(n * sizeof(float) + packed.size()),
        [&] { mixprec::pack_n<T>(input.data(), n, packed.data()); },
        [&] { mixprec::unpack_n<T>(packed.data(), n, wide.data()); }, min_seconds);
  } else {
    std::vector<T> narrow(n);
    keep_writes_to(narrow.data());
    return detail::speed_of(
        static_cast<double>(n * (sizeof(float) + sizeof(T))),
        [&] { mixprec::convert_n(input.data(), n, narrow.data()); },
        [&] { mixprec::convert_n(narrow.data(), n, wide.data()); }, min_seconds);
  }
}

// The physical limit for comparison: copying the float array (read 4n bytes, write 4n).
inline double memcpy_gb_per_s(const std::vector<float>& input, double min_seconds) {
  std::vector<float> copy(input.size());
  keep_writes_to(copy.data());
  const std::size_t bytes = input.size() * sizeof(float);
  const double seconds = seconds_per_call([&] { std::memcpy(copy.data(), input.data(), bytes); }, min_seconds);
  return 2.0 * static_cast<double>(bytes) / seconds / 1e9;
}

}  // namespace mixprec_example
