// Where a mixprec::matrix keeps its elements: 64-byte aligned blocks, and a cache of the large
// ones that matrices freed, which the next matrix of exactly that size takes again.
//
// Why: a training step allocates the same matrices on every step (activations, casts,
// gradients) and frees them at its end.  Handed back to malloc, the large blocks went back to
// the kernel (glibc trims the top of its heap and unmaps large chunks), and the next step paid
// a page fault and a page clearing for every 4 KiB of them: 51 000 page faults in 66 steps of
// train_digits --benchmark (bf16, 64-2048-10, batch 512) against 5 500 with this cache, and
// 24 % more CPU time (perf stat; docs/autocast.md).  PyTorch's CUDA allocator and
// TensorFlow's CPU allocator cache for the same reason.
//
// What is cached: blocks of at least cached_block_min_bytes (64 KiB; smaller ones malloc reuses
// well), up to a limit on the cache's total (256 MiB unless set_matrix_memory_cache_limit says
// otherwise; 0 turns the cache off), the oldest blocks leaving first.  Thread-safe (one mutex,
// taken once per large allocation and once per large free).  The cache object is never
// destroyed, so that a matrix freed during static destruction still finds it; its blocks are
// reachable from it until the process ends (no leak report).
#pragma once

#include <cstddef>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

namespace mixprec {
namespace detail {

constexpr std::size_t cached_block_min_bytes = std::size_t{64} * 1024;
// Off by default under AddressSanitizer, which then sees every matrix's own allocation and free
// (a use after free of a cached block would go unseen); a test that sets a limit still runs it.
#if defined(__SANITIZE_ADDRESS__)
#define MIXPREC_DETAIL_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MIXPREC_DETAIL_ADDRESS_SANITIZER 1
#endif
#endif
#ifdef MIXPREC_DETAIL_ADDRESS_SANITIZER
constexpr std::size_t default_matrix_cache_limit = 0;
#else
constexpr std::size_t default_matrix_cache_limit = std::size_t{256} * 1024 * 1024;
#endif
constexpr std::size_t max_cached_blocks = 1024;

inline unsigned char* allocate_aligned(std::size_t bytes) {
  return static_cast<unsigned char*>(::operator new[](bytes, std::align_val_t{64}));
}
inline void free_aligned(unsigned char* p) noexcept { ::operator delete[](p, std::align_val_t{64}); }

class matrix_memory {
 public:
  static matrix_memory& instance() {
    static matrix_memory* const memory = new matrix_memory();  // never destroyed (see above)
    return *memory;
  }

  // A block of exactly `bytes` (> 0), 64-byte aligned, contents unset: the most recently cached
  // block of that size, or a new one.
  unsigned char* take(std::size_t bytes) {
    if (bytes >= cached_block_min_bytes) {
      const std::lock_guard<std::mutex> lock(mutex_);
      for (std::size_t i = blocks_.size(); i-- > 0;) {
        if (blocks_[i].first == bytes) {
          unsigned char* p = blocks_[i].second;
          blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(i));
          cached_ -= bytes;
          return p;
        }
      }
    }
    return allocate_aligned(bytes);
  }

  // A block that take(bytes) gave, back: into the cache, or freed.
  void give(unsigned char* p, std::size_t bytes) noexcept {
    if (bytes >= cached_block_min_bytes) {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (bytes <= limit_) {
        while (!blocks_.empty() && (cached_ + bytes > limit_ || blocks_.size() >= max_cached_blocks)) {
          free_aligned(blocks_.front().second);
          cached_ -= blocks_.front().first;
          blocks_.erase(blocks_.begin());
        }
        try {
          blocks_.emplace_back(bytes, p);
          cached_ += bytes;
          return;
        } catch (...) {  // no memory for the list itself: the block is freed below
        }
      }
    }
    free_aligned(p);
  }

  void set_limit(std::size_t bytes) {
    const std::lock_guard<std::mutex> lock(mutex_);
    limit_ = bytes;
    while (!blocks_.empty() && cached_ > limit_) {
      free_aligned(blocks_.front().second);
      cached_ -= blocks_.front().first;
      blocks_.erase(blocks_.begin());
    }
  }
  std::size_t limit() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return limit_;
  }
  std::size_t cached_bytes() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return cached_;
  }
  void release() {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& block : blocks_) free_aligned(block.second);
    blocks_.clear();
    cached_ = 0;
  }

 private:
  matrix_memory() = default;

  mutable std::mutex mutex_;
  std::vector<std::pair<std::size_t, unsigned char*>> blocks_;  // (bytes, block), oldest first
  std::size_t cached_ = 0;
  std::size_t limit_ = default_matrix_cache_limit;
};

}  // namespace detail

// The most bytes that freed matrices keep cached for reuse (detail/matrix_memory.hpp; default
// 256 MiB, 0 turns the cache off); lowering it frees the oldest blocks over the new limit.
inline void set_matrix_memory_cache_limit(std::size_t bytes) { detail::matrix_memory::instance().set_limit(bytes); }
inline std::size_t matrix_memory_cache_limit() { return detail::matrix_memory::instance().limit(); }
// The bytes cached now.
inline std::size_t matrix_memory_cache_bytes() { return detail::matrix_memory::instance().cached_bytes(); }
// Frees every cached block (matrices alive keep theirs).
inline void release_matrix_memory_cache() { detail::matrix_memory::instance().release(); }

}  // namespace mixprec
