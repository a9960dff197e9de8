// A choice between implementations (the SIMD path of bulk conversion, the kernel path of gemm)
// that is detected by default and can be forced from code (tests, benchmarks) or by an
// environment variable: written once, so that every such switch parses, checks and reports
// errors the same way.  (gemm/detail/environment.hpp is another thing: the float environment,
// MXCSR, that a product runs in.)
//
// A switch is described by a struct:
//   using value_type = E;                           an enum with a to_string(E) found by ADL
//   static constexpr const char* variable = ...;    "MIXPREC_SIMD_PATH"
//   static constexpr const char* noun = ...;        "SIMD path", for messages
//   static constexpr const char* where = ...;       "this CPU or build", for messages
//   static constexpr E values[] = {...};            every value, in the order messages list them
//   static bool available(E);                       whether this machine and build can run it
//
//   parse_choice<S>(name)      the value whose to_string is `name`, else invalid_argument
//                              "unknown SIMD path 'x' (expected a, b or c)"
//   check_available<S>(v)      invalid_argument "SIMD path 'x' is not available on this CPU ..."
//   force_choice<S>(v)         later chosen<S>() calls give v; invalid_argument if unavailable
//   reset_choice<S>()          back to the variable's value, or the caller's default
//   chosen<S>()                the forced value, else the variable's (read once, on the first
//                              call; unknown or unavailable values throw invalid_argument naming
//                              the variable, on every call), else nullopt
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <iterator>
#include <optional>
#include <string>

#include "../errors.hpp"

namespace mixprec::detail {

// "a, b or c": the names of every value of the switch.
template <class Switch>
std::string choice_names() {
  std::string names;
  const std::size_t count = std::size(Switch::values);
  for (std::size_t i = 0; i < count; ++i) {
    if (i > 0) names += i + 1 == count ? " or " : ", ";
    names += to_string(Switch::values[i]);
  }
  return names;
}

template <class Switch>
typename Switch::value_type parse_choice(const std::string& name) {
  for (const auto value : Switch::values) {
    if (name == to_string(value)) return value;
  }
  throw invalid_argument(std::string("unknown ") + Switch::noun + " '" + name + "' (expected " +
                         choice_names<Switch>() + ")");
}

// The forced value as an int, -1 when none: an atomic, so that forcing from one thread while
// another converts is not a data race (which value the other call sees is unspecified).
template <class Switch>
std::atomic<int>& forced_choice_slot() noexcept {
  static std::atomic<int> forced{-1};
  return forced;
}

template <class Switch>
void check_available(typename Switch::value_type value) {
  if (!Switch::available(value)) {
    throw invalid_argument(std::string(Switch::noun) + " '" + to_string(value) + "' is not available on " +
                           Switch::where);
  }
}

template <class Switch>
void force_choice(typename Switch::value_type value) {
  check_available<Switch>(value);
  forced_choice_slot<Switch>().store(static_cast<int>(value), std::memory_order_relaxed);
}

template <class Switch>
void reset_choice() noexcept {
  forced_choice_slot<Switch>().store(-1, std::memory_order_relaxed);
}

// The environment variable's value: nullopt when unset or empty.
template <class Switch>
std::optional<typename Switch::value_type> choice_from_environment() {
  const char* text = std::getenv(Switch::variable);
  if (text == nullptr || *text == '\0') return std::nullopt;
  const std::string setting = std::string(Switch::variable) + "=" + text;
  typename Switch::value_type value{};
  try {
    value = parse_choice<Switch>(text);
  } catch (const invalid_argument& e) {
    throw invalid_argument(setting + ": " + e.what());
  }
  if (!Switch::available(value)) throw invalid_argument(setting + " is not available on " + Switch::where);
  return value;
}

template <class Switch>
std::optional<typename Switch::value_type> chosen() {
  const int forced = forced_choice_slot<Switch>().load(std::memory_order_relaxed);
  if (forced >= 0) return static_cast<typename Switch::value_type>(forced);
  // A throwing initialiser leaves the static uninitialised: the next call reads and throws again.
  static const std::optional<typename Switch::value_type> from_environment = choice_from_environment<Switch>();
  return from_environment;
}

}  // namespace mixprec::detail
