// Helpers for the exhaustive sweeps: run a function over a range of 32-bit patterns on every
// core, and look a type up by name.
#pragma once

#include <mixprec/types.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace mixprec_test {

// Calls body(first, last) on disjoint chunks [first, last) of [begin, end), `chunk` long, from
// `threads` threads (0: one per hardware thread).
template <class Body>
void parallel_ranges(std::uint64_t begin, std::uint64_t end, std::uint64_t chunk, unsigned threads, Body body) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  std::atomic<std::uint64_t> next{begin};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (;;) {
        const std::uint64_t first = next.fetch_add(chunk);
        if (first >= end) return;
        body(first, std::min(end, first + chunk));
      }
    });
  }
  for (auto& thread : pool) thread.join();
}

// Calls body(i) for every i in [0, n), in chunks of `chunk`, on every hardware thread.
template <class Body>
void parallel_for(std::uint64_t n, std::uint64_t chunk, Body body) {
  parallel_ranges(0, n, chunk, 0, [&](std::uint64_t first, std::uint64_t last) {
    for (std::uint64_t i = first; i < last; ++i) body(static_cast<std::size_t>(i));
  });
}

// The items of a comma-separated list (command-line options of the sweep programs).
inline std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  for (std::size_t start = 0;;) {
    const std::size_t comma = list.find(',', start);
    out.push_back(list.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

class stopwatch {
 public:
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// Calls f(T{}) for the type whose format name is `name`; returns false if there is none.
template <class F>
bool with_type_named(const std::string& name, F f) {
  bool found = false;
  auto try_one = [&](auto tag) {
    using T = decltype(tag);
    if (!found && mixprec::format_name<typename T::format>() == name) {
      found = true;
      f(tag);
    }
  };
  try_one(mixprec::float16{});
  try_one(mixprec::bfloat16{});
  try_one(mixprec::float8_e4m3fn{});
  try_one(mixprec::float8_e5m2{});
  try_one(mixprec::float8_e4m3fnuz{});
  try_one(mixprec::float8_e5m2fnuz{});
  try_one(mixprec::float6_e3m2fn{});
  try_one(mixprec::float6_e2m3fn{});
  try_one(mixprec::float4_e2m1fn{});
  try_one(mixprec::float8_e8m0fnu{});
  try_one(mixprec::float8_ue4m3{});
  try_one(mixprec::float8_e4m3{});
  try_one(mixprec::float8_e3m4{});
  try_one(mixprec::float8_e4m3b11fnuz{});
  try_one(mixprec::tfloat32{});
  return found;
}

}  // namespace mixprec_test
