// autocast_scope<T> (DESIGN.md, "Autocast"): while one is alive on a thread, the operations of
// mixprec/ops run each in the precision its category asks for (policy.hpp): matrix products in
// T, precision-sensitive operations in float32, mixed inputs promoted to the widest.
//
//   {
//     mixprec::autocast_scope<mixprec::bfloat16> amp;      // bf16 autocast on this thread
//     mixprec::matrix h = ops::linear(x, w1, b1);          // bfloat16 result
//     mixprec::matrix p = ops::softmax(h);                 // float32 result
//     {
//       mixprec::autocast_scope<float> off;                // disabled inside (or options.enabled = false)
//       ops::matmul(a, b);                                 // float32 inputs: a float32 product
//     }
//   }                                                      // previous state back, cache cleared
//
// The state is thread-local: scopes on different threads never see each other.  Scopes nest;
// each restores on destruction exactly the state it found (also when an exception unwinds
// through it), and the outermost one owns the weight-cast cache (weight_cache.hpp).  The dtype
// may also be chosen at run time: dynamic_autocast_scope(dtype::float16), the form the
// training session of a config file uses; current_autocast() captures the state so that a
// backward pass can re-enter it with dynamic_autocast_scope(state).
//
// Lower-precision dtypes: float16 and bfloat16, as PyTorch's autocast allows.  fp8 needs a
// scale per tensor chosen from the data (scaling/fp8 recipes), which an autocast cast cannot
// provide, so an fp8 autocast is refused with that explanation.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>

#include "../dtype.hpp"
#include "../errors.hpp"
#include "op_precisions.hpp"
#include "parameter.hpp"
#include "policy.hpp"
#include "weight_cache.hpp"

namespace mixprec {

struct autocast_options {
  bool enabled = true;                                   // false: a scope that switches autocast off
  bool cache_enabled = true;                             // keep casts of parameters (torch's cache_enabled)
  std::size_t cache_limit_bytes = std::size_t{1} << 30;  // bound of the cache (outermost scope's applies)
  std::shared_ptr<const autocast_policy> policy;         // null: the enclosing scope's, else standard()
};

// What a scope sets: captured by current_autocast(), re-entered by dynamic_autocast_scope(state).
struct autocast_state {
  bool enabled = false;
  dtype lower_precision = dtype::float32;  // the dtype of lower_precision operations when enabled
  bool cache_enabled = true;
  std::shared_ptr<const autocast_policy> policy;  // null outside every scope: standard()
  // Operations pinned to a dtype (op_precisions.hpp; null: none); a nested scope keeps its
  // enclosing scope's.
  std::shared_ptr<const op_precision_list> op_precisions;
};

namespace detail {

struct autocast_thread_state {
  autocast_state state;
  int depth = 0;
  std::unique_ptr<weight_cast_cache> cache;
};

inline autocast_thread_state& autocast_tls() noexcept {
  thread_local autocast_thread_state tls;
  return tls;
}

inline void check_autocast_dtype(dtype d) {
  if (d == dtype::float16 || d == dtype::bfloat16 || d == dtype::float32) return;
  throw invalid_argument(std::string("autocast to ") + to_string(d) +
                         " is not supported: autocast runs matrix products in float16 or bfloat16 (float32 "
                         "switches it off); fp8 needs per-tensor scales chosen from the data, which the fp8 "
                         "scaling recipes provide");
}

}  // namespace detail

inline autocast_state current_autocast() noexcept { return detail::autocast_tls().state; }
inline bool is_autocast_enabled() noexcept { return detail::autocast_tls().state.enabled; }

// The policy in force on this thread (standard() outside any scope that set one).
inline std::shared_ptr<const autocast_policy> current_autocast_policy() {
  const auto& policy = detail::autocast_tls().state.policy;
  return policy ? policy : autocast_policy::standard();
}

// Statistics of this thread's weight-cast cache (all zero outside every scope).
inline autocast_cache_stats autocast_cache_statistics() noexcept {
  const auto& tls = detail::autocast_tls();
  return tls.cache ? tls.cache->stats() : autocast_cache_stats{};
}

// The dtype an operation computes and returns under the current state, for inputs of the
// given dtypes:
//   autocast off            the widest input (promote_types), as without autocast
//   lower_precision         the scope's dtype
//   fp32                    float32
//   promote, fallthrough    the widest input
// and, before all of these, an operation the state pins (op_precisions) returns its dtype.
// autocast_result_dtype_as(op, ..., d) is the same rule as inside an enabled scope of d (with
// the current policy): what an operation on a parameter with a precision override d computes
// in (parameter.hpp).
namespace detail {
template <class Iterator>
dtype widest_of(Iterator first, Iterator last) {
  dtype widest = first == last ? dtype::float32 : *first;
  for (; first != last; ++first) widest = promote_types(widest, *first);
  return widest;
}
}  // namespace detail
template <class Iterator>
dtype autocast_result_dtype_as(const std::string& op, Iterator first, Iterator last, dtype lower_precision) {
  const dtype widest = detail::widest_of(first, last);
  switch (current_autocast_policy()->category(op)) {
    case op_category::lower_precision:
      return lower_precision;
    case op_category::fp32:
      return dtype::float32;
    case op_category::promote:
    case op_category::fallthrough:
      return widest;
  }
  return widest;
}
template <class Iterator>
dtype autocast_result_dtype(const std::string& op, Iterator first, Iterator last) {
  const autocast_state& state = detail::autocast_tls().state;
  if (state.op_precisions) {
    for (const auto& pinned : *state.op_precisions) {
      if (pinned.first == op) return pinned.second;
    }
  }
  if (state.enabled) return autocast_result_dtype_as(op, first, last, state.lower_precision);
  return detail::widest_of(first, last);
}
inline dtype autocast_result_dtype(const std::string& op, std::initializer_list<dtype> inputs) {
  return autocast_result_dtype(op, inputs.begin(), inputs.end());
}

namespace detail {
// p cast to `to` through this thread's cache (a fresh conversion outside every scope, or when
// caching is off).  The shared_ptr keeps the copy alive even if the cache evicts it.  A template
// only to be compiled where called (docs/design.md, "Compiled where called").
template <int = 0>
std::shared_ptr<const matrix> autocast_cast(const parameter& p, dtype to) {
  autocast_thread_state& tls = autocast_tls();
  if (!tls.cache) return std::make_shared<const matrix>(p.value().to(to));
  return tls.cache->get(p, to, tls.state.enabled && tls.state.cache_enabled);
}
}  // namespace detail

class dynamic_autocast_scope {
 public:
  // Autocast to `lower_precision` (float16 or bfloat16; float32 switches autocast off).
  explicit dynamic_autocast_scope(dtype lower_precision, const autocast_options& options = {})
      : dynamic_autocast_scope(make_state(lower_precision, options), options.cache_limit_bytes) {}

  // Re-enters a state captured with current_autocast() (e.g. for the backward pass).
  explicit dynamic_autocast_scope(const autocast_state& state)
      : dynamic_autocast_scope(checked(state), std::size_t{1} << 30) {}

  dynamic_autocast_scope(const dynamic_autocast_scope&) = delete;
  dynamic_autocast_scope& operator=(const dynamic_autocast_scope&) = delete;
  dynamic_autocast_scope(dynamic_autocast_scope&&) = delete;
  dynamic_autocast_scope& operator=(dynamic_autocast_scope&&) = delete;

  ~dynamic_autocast_scope() {
    detail::autocast_thread_state& tls = detail::autocast_tls();
    tls.state = std::move(saved_);
    if (--tls.depth == 0) tls.cache.reset();
  }

 private:
  static autocast_state make_state(dtype lower_precision, const autocast_options& options) {
    detail::check_autocast_dtype(lower_precision);
    autocast_state s;
    s.enabled = options.enabled && lower_precision != dtype::float32;
    s.lower_precision = s.enabled ? lower_precision : dtype::float32;
    s.cache_enabled = options.cache_enabled;
    s.policy = options.policy ? options.policy : detail::autocast_tls().state.policy;
    s.op_precisions = detail::autocast_tls().state.op_precisions;
    return s;
  }
  static autocast_state checked(const autocast_state& state) {
    detail::check_autocast_dtype(state.lower_precision);
    if (state.enabled && state.lower_precision == dtype::float32) {
      throw invalid_argument("autocast_state: enabled with float32 as the lower precision");
    }
    if (state.op_precisions) {
      for (const auto& pinned : *state.op_precisions) detail::check_autocast_dtype(pinned.second);
    }
    return state;
  }
  dynamic_autocast_scope(autocast_state state, std::size_t cache_limit_bytes) {
    detail::autocast_thread_state& tls = detail::autocast_tls();
    if (tls.depth == 0) tls.cache = std::make_unique<detail::weight_cast_cache>(cache_limit_bytes);
    saved_ = std::exchange(tls.state, std::move(state));
    ++tls.depth;
  }

  autocast_state saved_;
};

// The scope with its dtype in the type: autocast_scope<bfloat16>, autocast_scope<float16>;
// autocast_scope<float> switches autocast off inside.
template <class T>
class autocast_scope : public dynamic_autocast_scope {
  static_assert(std::is_same<T, float>::value || std::is_same<T, float16>::value || std::is_same<T, bfloat16>::value,
                "autocast_scope<T>: T is float16 or bfloat16 (float switches autocast off); fp8 goes through the "
                "fp8 scaling recipes");

 public:
  explicit autocast_scope(const autocast_options& options = {}) : dynamic_autocast_scope(dtype_of<T>, options) {}
};

using autocast_disabled = autocast_scope<float>;

}  // namespace mixprec
