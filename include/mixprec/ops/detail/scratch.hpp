// Working buffers that the operations borrow for the length of one call: float staging for a
// product's sum before it is rounded, fp8 codes of a quantised operand.  A training step asks
// for buffers of the same few sizes on every step; allocating them afresh each time cost a zero
// fill (memset, 6–10 % of a step) and the page faults of fresh memory (4–5 %), measured with
// perf on train_digits --benchmark (docs/performance.md).  So a buffer, when its borrower is done,
// goes back to a small pool of the thread's and the next borrower of that size or less takes it.
//
//   scratch<float> c(rows * cols);   // contents unset: the borrower writes before it reads
//   gemm(..., c.data(), ...);
//
// The pool keeps at most `pool_capacity` buffers per thread (the largest ones: a step's sizes
// repeat) and holds their memory until the thread ends; release_scratch_memory() frees the
// calling thread's pool.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace mixprec::ops {
namespace detail {

struct scratch_block {
  struct aligned_delete {
    void operator()(unsigned char* p) const noexcept { ::operator delete[](p, std::align_val_t{64}); }
  };
  std::unique_ptr<unsigned char[], aligned_delete> bytes;
  std::size_t capacity = 0;
};

constexpr std::size_t pool_capacity = 8;

inline std::vector<scratch_block>& scratch_pool() {
  thread_local std::vector<scratch_block> pool;
  return pool;
}

// The pool's smallest buffer of at least `bytes`, or a new one.
inline scratch_block borrow_block(std::size_t bytes) {
  std::vector<scratch_block>& pool = scratch_pool();
  auto best = pool.end();
  for (auto it = pool.begin(); it != pool.end(); ++it) {
    if (it->capacity >= bytes && (best == pool.end() || it->capacity < best->capacity)) best = it;
  }
  if (best != pool.end()) {
    scratch_block found = std::move(*best);
    pool.erase(best);
    return found;
  }
  scratch_block fresh;
  fresh.bytes.reset(static_cast<unsigned char*>(::operator new[](bytes, std::align_val_t{64})));
  fresh.capacity = bytes;
  return fresh;
}

// Back into the pool; over capacity, the smallest buffer is freed.
inline void return_block(scratch_block block) noexcept {
  std::vector<scratch_block>& pool = scratch_pool();
  if (pool.size() < pool_capacity) {
    try {
      pool.push_back(std::move(block));
    } catch (...) {  // no memory for the pool's own array: the buffer is simply freed
      return;
    }
    return;
  }
  auto smallest = std::min_element(
      pool.begin(), pool.end(), [](const scratch_block& a, const scratch_block& b) { return a.capacity < b.capacity; });
  if (smallest->capacity < block.capacity) *smallest = std::move(block);
}

// `count` elements of T, borrowed from the thread's pool; contents unset.
template <class T>
class scratch {
  static_assert(std::is_trivially_copyable<T>::value && alignof(T) <= 64, "scratch holds plain values");

 public:
  explicit scratch(std::size_t count) : count_(count) {
    if (count != 0) block_ = borrow_block(count * sizeof(T));
  }
  scratch(scratch&& other) noexcept : block_(std::move(other.block_)), count_(std::exchange(other.count_, 0)) {}
  scratch& operator=(scratch&&) = delete;
  scratch(const scratch&) = delete;
  scratch& operator=(const scratch&) = delete;
  ~scratch() {
    if (block_.bytes) return_block(std::move(block_));
  }

  T* data() noexcept { return reinterpret_cast<T*>(block_.bytes.get()); }
  const T* data() const noexcept { return reinterpret_cast<const T*>(block_.bytes.get()); }
  std::size_t size() const noexcept { return count_; }
  bool empty() const noexcept { return count_ == 0; }
  T& operator[](std::size_t i) noexcept { return data()[i]; }
  const T& operator[](std::size_t i) const noexcept { return data()[i]; }
  T* begin() noexcept { return data(); }
  T* end() noexcept { return data() + count_; }
  const T* begin() const noexcept { return data(); }
  const T* end() const noexcept { return data() + count_; }

 private:
  scratch_block block_;
  std::size_t count_;
};

}  // namespace detail

// Frees the buffers the operations keep for reuse on the calling thread (detail/scratch.hpp).
inline void release_scratch_memory() noexcept { detail::scratch_pool().clear(); }

}  // namespace mixprec::ops
