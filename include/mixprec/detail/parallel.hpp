// Splitting work over threads, written once for bulk conversion (bulk/dispatch.hpp), gemm
// (gemm/detail/driver.hpp) and unscaling (scaling/unscale.hpp).
//
//   resolve_thread_count(requested)               0 means one per hardware thread; never 0
//   split_work(n, threads, min_per_chunk, grain)  how [0, n) is cut (the rule below)
//   run_chunks(split, task)                       task(index, begin, end) once per chunk: chunk 0
//                                                 on the caller's thread, the others on std::threads
//
// The rule.  count = min(threads, n / min_per_chunk), at least 1; size = ceil(n / count) rounded
// up to a multiple of grain; chunk i is [i * size, min(n, (i + 1) * size)), and only chunks that
// start below n exist, so the count can come out lower than asked (never higher).  n = 0 is one
// empty chunk.  Callers pick the unit: bulk and unscale count elements (grain 64, whole cache
// lines of floats), gemm counts tiles (grain 1).  With grain 1 the largest chunk, ceil(n / count),
// is the least any split into count parts can have (the slowest thread decides the time); a
// grain adds at most grain - 1 units to it.  min_per_chunk sets the count (n / count is at least
// min_per_chunk); the rounding can leave the last chunk somewhat shorter.
//
// Failures.  Every chunk runs exactly once, whatever the other chunks do.  A thread that cannot
// be started (std::thread throws std::system_error when the system is out of threads) leaves its
// chunk, and every later one, to the caller's thread, after chunk 0: the result is complete
// and, because callers' results never depend on which thread ran a chunk, the same (rather than
// an error: the work can still be done, only slower, and a call should not fail for lack of
// threads when one thread would have done).  A task that throws stops only its own chunk; when
// all are done and every thread is joined, the exception of the lowest-numbered failed chunk is
// rethrown (the same one on every run, however the threads were scheduled).  No thread is ever
// detached or left unjoined.
#pragma once

#include <algorithm>
#include <cstddef>
#include <exception>
#include <memory>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace mixprec::detail {

// Threads for a setting where 0 means "one per hardware thread" (hardware_concurrency() may
// say 0 when it cannot tell: then 1).
inline unsigned resolve_thread_count(unsigned requested) noexcept {
  return requested != 0 ? requested : std::max(1u, std::thread::hardware_concurrency());
}

// The chunks of [0, n): count chunks of `size` units, the last one possibly shorter.
struct work_split {
  std::size_t n = 0, size = 0, count = 1;

  // For chunk < count, begin < n when chunk > 0.  Both are clamped to n so that begin <= end <= n
  // holds for any chunk the compiler cannot rule out: without the clamp g++ 12 -O3 follows an
  // impossible chunk whose n - begin wraps into a loop of 2^63 iterations and rejects the build
  // (-Waggressive-loop-optimizations).
  std::size_t begin(std::size_t chunk) const noexcept { return std::min(chunk * size, n); }
  std::size_t end(std::size_t chunk) const noexcept { return begin(chunk) + std::min(size, n - begin(chunk)); }
};

// The rule above.  min_per_chunk and grain of 0 count as 1.  No intermediate value exceeds n,
// so n up to SIZE_MAX is fine.
inline work_split split_work(std::size_t n, std::size_t threads, std::size_t min_per_chunk,
                             std::size_t grain) noexcept {
  min_per_chunk = std::max<std::size_t>(min_per_chunk, 1);
  grain = std::max<std::size_t>(grain, 1);
  const std::size_t count = std::max<std::size_t>(1, std::min(threads, n / min_per_chunk));
  std::size_t size = n / count + (n % count != 0 ? 1 : 0);
  const std::size_t short_of_grain = (grain - size % grain) % grain;
  size = short_of_grain > n - size ? n : size + short_of_grain;  // rounded up, at most n
  work_split split;
  split.n = n;
  split.size = size;
  split.count = size == 0 ? 1 : n / size + (n % size != 0 ? 1 : 0);
  return split;
}

// Test hook (tests/core/parallel_test.cpp): when set to k > 0, the k-th thread that run_chunks
// tries to start from this thread from now on fails with std::system_error, as when the system
// is out of threads; the hook is then off again (0).  thread_local: one test's injection never
// reaches another thread's calls.
inline std::size_t& thread_start_failure_countdown() noexcept {
  thread_local std::size_t countdown = 0;
  return countdown;
}

// Threads that are joined when the owner goes out of scope, whichever way it leaves.
class joined_threads {
 public:
  explicit joined_threads(std::size_t capacity) { threads_.reserve(capacity); }
  joined_threads(const joined_threads&) = delete;
  joined_threads& operator=(const joined_threads&) = delete;
  ~joined_threads() { join(); }

  // Starts f on a new thread; on failure (the thread's start, or the hook) throws and changes
  // nothing.  emplace_back does not allocate: the capacity was reserved.
  template <class F>
  void start(F f) {
    std::size_t& countdown = thread_start_failure_countdown();
    if (countdown != 0 && --countdown == 0) {
      throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again),
                              "mixprec: injected thread start failure");
    }
    threads_.emplace_back(std::move(f));
  }

  void join() noexcept {
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  std::vector<std::thread> threads_;
};

// The chunks of `split` from 1 on, each on a thread of its own where one starts, with chunk 0
// on the caller's thread; call(context, index, begin, end) runs one chunk.  Not a template: the
// threads (std::thread's state types, which have vtables) are instantiated once per program,
// not once per task type.  A template here made every file that merely names a conversion of
// any format (as matrix.hpp's run-time dtype dispatch does) compile every format's kernels, the
// vtables keeping them alive: about 0.7 CPU s per format for a file with one convert_n call.
inline void run_chunks_on_threads(const work_split& split, void (*call)(void*, std::size_t, std::size_t, std::size_t),
                                  void* context) {
  std::vector<std::exception_ptr> failures(split.count);
  const auto run = [&](std::size_t chunk) noexcept {
    try {
      call(context, chunk, split.begin(chunk), split.end(chunk));
    } catch (...) {
      failures[chunk] = std::current_exception();
    }
  };
  std::size_t started = 1;  // chunks [1, started) run on helper threads
  {
    joined_threads helpers(split.count - 1);
    for (; started < split.count; ++started) {
      try {
        helpers.start([&run, started] { run(started); });
      } catch (...) {
        break;  // out of threads: later starts would most likely fail too
      }
    }
    run(0);
    for (std::size_t chunk = started; chunk < split.count; ++chunk) run(chunk);
  }  // every helper joined here
  for (const std::exception_ptr& failure : failures) {
    if (failure) std::rethrow_exception(failure);
  }
}

// Runs task(index, begin, end) once for every chunk of `split`; see "Failures" above.  The task
// is called concurrently from several threads and must be safe for that.
template <class Task>
void run_chunks(const work_split& split, Task&& task) {
  if (split.count == 1) {
    task(std::size_t{0}, std::size_t{0}, split.n);
    return;
  }
  using task_type = std::remove_reference_t<Task>;
  task_type* erased = std::addressof(task);  // the context is a pointer to this pointer
  run_chunks_on_threads(
      split,
      [](void* context, std::size_t chunk, std::size_t begin, std::size_t end) {
        (**static_cast<task_type**>(context))(chunk, begin, end);
      },
      &erased);
}

}  // namespace mixprec::detail
