// callable_ref<R(Args...)>: a non-owning reference to anything callable as R(Args...), as C++26's
// std::function_ref.  precision_session::train_step wraps its callbacks in it, so that the step's
// body (the scalers, unscale, clipping, the optimizer) is one function compiled once, whatever
// lambdas a program passes, and can live in mixprec::compiled (docs/design.md, "Compiled mode").
// The referenced callable must outlive the reference; nothing is allocated.
#pragma once

#include <memory>       // std::addressof
#include <type_traits>  // std::decay_t, std::enable_if_t, std::is_same
#include <utility>      // std::forward

namespace mixprec::detail {

template <class Signature>
class callable_ref;

template <class R, class... Args>
class callable_ref<R(Args...)> {
 public:
  template <class F, class = std::enable_if_t<!std::is_same<std::decay_t<F>, callable_ref>::value>>
  callable_ref(F& f) noexcept  // NOLINT(google-explicit-constructor): a reference, as function_ref
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))), call_(&call<F>) {}

  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  template <class F>
  static R call(void* object, Args... args) {
    return (*static_cast<F*>(object))(std::forward<Args>(args)...);
  }

  void* object_;
  R (*call_)(void*, Args...);
};

}  // namespace mixprec::detail
