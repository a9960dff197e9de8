// Working buffers that the operations borrow for the length of one call: float staging for a
// product's sum before it is rounded, fp8 codes of a quantised operand.  A training step asks
// for buffers of the same few sizes on every step; allocating them afresh each time cost a zero
// fill (memset, 6–10 % of a step) and the page faults of fresh memory (4–5 %), measured with
// perf on train_digits --benchmark (docs/performance.md).  So the memory comes from, and goes
// back to, the cache that matrices use (detail/matrix_memory.hpp): a freed block of 64 KiB or
// more is kept for the next borrower of exactly that size, smaller ones are malloc's.
//
//   scratch<float> c(rows * cols);   // contents unset: the borrower writes before it reads
//   gemm(..., c.data(), ...);
//
// set_matrix_memory_cache_limit and release_matrix_memory_cache govern these blocks too.
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

#include "../../detail/matrix_memory.hpp"

namespace mixprec::ops::detail {

// `count` elements of T, 64-byte aligned, borrowed from the matrix memory cache; contents unset.
template <class T>
class scratch {
  static_assert(std::is_trivially_copyable<T>::value && alignof(T) <= 64, "scratch holds plain values");

 public:
  explicit scratch(std::size_t count) : count_(count) {
    if (count != 0) bytes_ = mixprec::detail::matrix_memory::instance().take(count * sizeof(T));
  }
  scratch(scratch&& other) noexcept
      : bytes_(std::exchange(other.bytes_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  scratch& operator=(scratch&&) = delete;
  scratch(const scratch&) = delete;
  scratch& operator=(const scratch&) = delete;
  ~scratch() {
    if (bytes_ != nullptr) mixprec::detail::matrix_memory::instance().give(bytes_, count_ * sizeof(T));
  }

  T* data() noexcept { return reinterpret_cast<T*>(bytes_); }
  const T* data() const noexcept { return reinterpret_cast<const T*>(bytes_); }
  std::size_t size() const noexcept { return count_; }
  bool empty() const noexcept { return count_ == 0; }
  T& operator[](std::size_t i) noexcept { return data()[i]; }
  const T& operator[](std::size_t i) const noexcept { return data()[i]; }
  T* begin() noexcept { return data(); }
  T* end() noexcept { return data() + count_; }
  const T* begin() const noexcept { return data(); }
  const T* end() const noexcept { return data() + count_; }

 private:
  unsigned char* bytes_ = nullptr;
  std::size_t count_;
};

}  // namespace mixprec::ops::detail
