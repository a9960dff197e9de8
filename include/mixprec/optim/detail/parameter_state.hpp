// What sgd and adamw share: option checks whose messages name the value and the allowed range,
// the checks of step()'s arguments, and the reading and writing of per-parameter buffers inside
// a saved state (scaling/state.hpp's state_writer / state_reader).
#pragma once

#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "../../detail/bits.hpp"
#include "../../errors.hpp"
#include "../../scaling/state.hpp"

namespace mixprec::optim::detail {

// The shortest decimal that reads back to the same float ("0.1", "1e-08", "inf").
inline std::string float_text(float x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, x);
  return std::string(buffer, result.ptr);
}

// Throws invalid_argument "<who>: <name> is <value>, allowed range is <range>" unless ok.
inline void require_option(bool ok, const char* who, const char* name, float value, const char* range) {
  if (!ok) {
    throw invalid_argument(std::string(who) + ": " + name + " is " + float_text(value) + ", allowed range is " + range);
  }
}

inline void require_non_negative(const char* who, const char* name, float value) {
  require_option(std::isfinite(value) && value >= 0.0f, who, name, value, "[0, inf) (finite)");
}

// [0, 1): betas, momentum.
inline void require_unit_open(const char* who, const char* name, float value) {
  require_option(value >= 0.0f && value < 1.0f, who, name, value, "[0, 1)");
}

// Parameter i of `count` exists, w and g hold n = `size` elements and do not overlap.
inline void check_step(const char* who, std::size_t i, std::size_t count, const float* w, const float* g, std::size_t n,
                       std::size_t size) {
  if (i >= count) {
    throw invalid_argument(std::string(who) + ": parameter index " + std::to_string(i) + " is out of range, " +
                           std::to_string(count) + " parameters are registered");
  }
  if (n != size) {
    throw invalid_argument(std::string(who) + ": step of parameter " + std::to_string(i) + " with " +
                           std::to_string(n) + " elements, it was registered with " + std::to_string(size));
  }
  if (n > 0 && (w == nullptr || g == nullptr)) {
    throw invalid_argument(std::string(who) + ": null " + (w == nullptr ? "weights" : "gradient") +
                           " pointer for parameter " + std::to_string(i) + " of " + std::to_string(n) + " elements");
  }
  const std::less<const float*> before;
  if (n > 0 && before(w, g + n) && before(g, w + n)) {
    throw invalid_argument(std::string(who) + ": weights and gradient of parameter " + std::to_string(i) + " overlap");
  }
}

// The registered size of a parameter, checked against the limit of a saved state.
inline std::size_t check_parameter_size(const char* who, std::size_t n) {
  constexpr std::size_t limit = std::size_t{1} << 40;  // 4 TiB of floats: beyond any real tensor
  if (n > limit) {
    throw invalid_argument(std::string(who) + ": parameter of " + std::to_string(n) + " elements, the limit is " +
                           std::to_string(limit));
  }
  return n;
}

using ::mixprec::detail::state_reader;
using ::mixprec::detail::state_writer;

inline void write_floats(state_writer& out, const std::vector<float>& values) {
  out.bytes.reserve(out.bytes.size() + 4 * values.size());
  for (const float x : values) out.f32(x);
}

// Reads n floats; every one must be finite (and >= 0 where non_negative).  Checks the bytes are
// there before it allocates.
inline std::vector<float> read_floats(state_reader& in, std::size_t n, const std::string& what, bool non_negative) {
  if (in.remaining() / 4 < n) {
    state_reader::fail(what + " needs " + std::to_string(n) + " floats, " + std::to_string(in.remaining()) +
                       " bytes are left");
  }
  std::vector<float> values(n);
  for (std::size_t k = 0; k < n; ++k) {
    const float x = in.f32(what.c_str());
    if (!std::isfinite(x) || (non_negative && !(x >= 0.0f))) {
      state_reader::fail(what + " element " + std::to_string(k) + " is " + float_text(x) + ", not " +
                         (non_negative ? "finite and >= 0" : "finite"));
    }
    values[k] = x;
  }
  return values;
}

// The header every optimizer payload starts with: its kind, then its parameter count.
inline void read_kind(state_reader& in, const char* kind) {
  const std::string saved = in.str("optimizer kind", 16);
  if (saved != kind) state_reader::fail("saved by optimizer '" + saved + "', this one is '" + kind + "'");
}

inline void read_parameter_count(state_reader& in, const char* who, std::size_t count) {
  const std::uint64_t saved = in.get_unsigned(8, "parameter count");
  if (saved != count) {
    state_reader::fail(std::string(who) + ": the state holds " + std::to_string(saved) + " parameters, " +
                       std::to_string(count) + " are registered");
  }
}

inline void read_parameter_size(state_reader& in, const char* who, std::size_t i, std::size_t size) {
  const std::uint64_t saved = in.get_unsigned(8, "parameter size");
  if (saved != size) {
    state_reader::fail(std::string(who) + ": parameter " + std::to_string(i) + " has " + std::to_string(saved) +
                       " elements in the state, " + std::to_string(size) + " registered");
  }
}

// An option other than lr: the saved one must be this optimizer's, bit for bit.
inline void read_same_option(state_reader& in, const char* who, const char* name, float current) {
  const float saved = in.f32(name);
  if (::mixprec::detail::bit_cast<std::uint32_t>(saved) != ::mixprec::detail::bit_cast<std::uint32_t>(current)) {
    state_reader::fail(std::string(who) + ": saved with " + name + " = " + float_text(saved) + ", this optimizer has " +
                       float_text(current));
  }
}

// The saved learning rate (restored by load, as PyTorch's load_state_dict restores lr).
inline float read_lr(state_reader& in, const char* who) {
  const float lr = in.f32("lr");
  if (!std::isfinite(lr) || lr < 0.0f) state_reader::fail(std::string(who) + ": saved lr is " + float_text(lr));
  return lr;
}

// The standalone saved form of an optimizer: the library's frame (its state_magic and
// state_version, CRC-32) around write()'s payload; and its loading, all or nothing.
template <class Optimizer>
std::vector<std::uint8_t> framed_state(const Optimizer& o) {
  state_writer out;
  ::mixprec::detail::begin_state_frame(out, Optimizer::state_magic, Optimizer::state_version);
  o.write(out);
  ::mixprec::detail::end_state_frame(out);
  return out.bytes;
}
template <class Optimizer>
void load_framed_state(Optimizer& o, const std::uint8_t* data, std::size_t size, const char* kind) {
  const std::uint32_t payload = ::mixprec::detail::check_state_frame(
      data, size, Optimizer::state_magic, Optimizer::state_version, std::string(kind) + " optimizer state");
  state_reader in(data + ::mixprec::detail::state_header_size, payload);
  const typename Optimizer::decoded d = o.decode(in);
  if (in.remaining() != 0) {
    state_reader::fail(std::to_string(in.remaining()) + " unread bytes after the " + kind + " state");
  }
  o.commit(d);
}

}  // namespace mixprec::optim::detail
