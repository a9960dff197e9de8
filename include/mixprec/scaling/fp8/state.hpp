// The state of delayed scaling (scaling/fp8/delayed_scaler.hpp) and its saved form: the same
// frame as the loss scaler's state (scaling/state.hpp: magic, version, payload size, CRC-32),
// with the same guarantees: every field is checked, a bad state throws scaler_state_error naming
// what is wrong, and only a state that passes every check is returned.
//
// Format, version 1 (integers and IEEE floats little-endian):
//
//   offset 0   8 bytes  magic "MXFP8DLY"
//          8   u32      format version (1)
//         12   u32      payload size P
//         16   P bytes  payload:
//                str    recipe name "delayed_scaling"         (str = u16 length, then bytes)
//                u16    option count, then per option: str key, u8 tag, value, as the loss
//                       scaler's state writes policy options (margin i32, format enum,
//                       amax_history_len i32, amax_compute_algo enum)
//                u8     pass (0 forward, 1 backward)
//                u32    tensor count N
//                i64    iteration (updates applied)
//                N × f32 scale
//                N × L × f32 amax history, tensor by tensor, slot 0 first (L = amax_history_len)
//     16 + P   u32      CRC-32 of bytes [0, 16 + P)
//
// scale_inv is not saved: it is 1 / scale, recomputed.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "../errors.hpp"
#include "../state.hpp"
#include "delayed_scaling.hpp"

namespace mixprec {

constexpr std::uint32_t delayed_scaling_state_version = 1;
// The most amax history slots (tensors × amax_history_len) one state may hold: 1 GiB of floats.
constexpr std::size_t delayed_scaling_slot_limit = std::size_t{1} << 28;

struct delayed_scaling_state {
  fp8_pass pass = fp8_pass::forward;
  std::size_t tensors = 0;
  std::size_t history_length = 0;
  std::int64_t iteration = 0;
  std::vector<float> scale;         // per tensor
  std::vector<float> amax_history;  // tensors × history_length, tensor by tensor, slot 0 first

  float* history_of(std::size_t tensor) noexcept { return amax_history.data() + tensor * history_length; }
  const float* history_of(std::size_t tensor) const noexcept { return amax_history.data() + tensor * history_length; }
};

namespace detail {

constexpr char delayed_state_magic[8] = {'M', 'X', 'F', 'P', '8', 'D', 'L', 'Y'};
constexpr const char* delayed_state_subject = "fp8 delayed scaling state";

// Everything a state must satisfy beyond its framing: one scale and one history per tensor,
// scales whose inverse is finite, amaxes that are magnitudes (sign bit clear: 0, positive,
// +inf or NaN).
inline void check_delayed_state(const delayed_scaling_state& s) {
  const auto fail = [](const std::string& what) {
    throw scaler_state_error(std::string(delayed_state_subject) + ": " + what);
  };
  if (s.iteration < 0 || s.iteration >= (std::int64_t{1} << 62)) {
    fail("iteration " + std::to_string(s.iteration) + " out of range");
  }
  for (std::size_t t = 0; t < s.tensors; ++t) {
    const float scale = s.scale[t];
    if (!(scale > 0.0f) || !std::isfinite(scale) || !std::isfinite(1.0f / scale)) {
      fail("scale of tensor " + std::to_string(t) + " is " + number_text(scale) +
           ", it must be finite, > 0, with a finite inverse");
    }
    for (std::size_t slot = 0; slot < s.history_length; ++slot) {
      const float amax = s.history_of(t)[slot];
      if (std::signbit(amax)) {
        fail("amax history of tensor " + std::to_string(t) + ", slot " + std::to_string(slot) + " is " +
             number_text(amax) + ": amaxes are magnitudes (sign bit clear)");
      }
    }
  }
}

}  // namespace detail

inline std::vector<std::uint8_t> encode_delayed_scaling_state(const delayed_scaling& recipe,
                                                              const delayed_scaling_state& s) {
  detail::state_writer w;
  detail::begin_state_frame(w, detail::delayed_state_magic, delayed_scaling_state_version);
  w.str(delayed_scaling::name);
  delayed_scaling options = recipe;
  detail::option_counter counter;
  options.visit_options(counter);
  w.u16(counter.count);
  options.visit_options(detail::option_writer{w});
  w.u8(static_cast<unsigned>(s.pass));
  w.u32(static_cast<std::uint32_t>(s.tensors));
  w.i64(s.iteration);
  for (const float scale : s.scale) w.f32(scale);
  for (const float amax : s.amax_history) w.f32(amax);
  detail::end_state_frame(w);
  return w.bytes;
}

// Reads a saved state for a scaler of `pass` with `tensors` tensors; the options come from the
// state, the amax function (code, not saved) from `current`.  Throws scaler_state_error.
inline std::pair<delayed_scaling, delayed_scaling_state> decode_delayed_scaling_state(
    const std::uint8_t* data, std::size_t size, const delayed_scaling& current, fp8_pass pass, std::size_t tensors) {
  const std::string subject = detail::delayed_state_subject;
  const auto fail = [&](const std::string& what) { throw scaler_state_error(subject + ": " + what); };
  try {
    const std::uint32_t payload =
        detail::check_state_frame(data, size, detail::delayed_state_magic, delayed_scaling_state_version, subject);
    detail::state_reader in(data + detail::state_header_size, payload);
    const std::string name = in.str("recipe name", detail::state_name_limit);
    if (name != delayed_scaling::name) fail("saved by recipe '" + name + "', not delayed_scaling");
    delayed_scaling recipe = current;
    detail::option_counter counter;
    recipe.visit_options(counter);
    const unsigned options = in.u16("option count");
    if (options != counter.count) {
      fail(std::to_string(options) + " recipe options, delayed_scaling has " + std::to_string(counter.count));
    }
    recipe.visit_options(detail::option_reader{in, delayed_scaling::name});
    try {
      recipe.validate();
    } catch (const invalid_argument& e) {
      fail(std::string("holds options this scaler cannot run: ") + e.what());
    }
    delayed_scaling_state s;
    const unsigned saved_pass = in.u8("pass");
    if (saved_pass > 1) fail("pass is " + std::to_string(saved_pass) + ", not 0 (forward) or 1 (backward)");
    s.pass = static_cast<fp8_pass>(saved_pass);
    if (s.pass != pass) {
      fail(std::string("saved for the ") + to_string(s.pass) + " pass, this scaler quantises the " + to_string(pass) +
           " pass");
    }
    s.tensors = in.u32("tensor count");
    if (s.tensors != tensors) {
      fail("holds " + std::to_string(s.tensors) + " tensors, this scaler has " + std::to_string(tensors));
    }
    s.history_length = static_cast<std::size_t>(recipe.amax_history_len);
    s.iteration = in.i64("iteration");
    // Sizes are checked against the bytes left before anything is allocated.
    const std::size_t floats = s.tensors * (s.history_length + 1);
    if (in.remaining() != floats * 4) {
      fail("payload holds " + std::to_string(in.remaining()) + " bytes of scales and amax history, " +
           std::to_string(s.tensors) + " tensors with histories of " + std::to_string(s.history_length) + " need " +
           std::to_string(floats * 4));
    }
    s.scale.resize(s.tensors);
    for (float& scale : s.scale) scale = in.f32("scale");
    s.amax_history.resize(s.tensors * s.history_length);
    for (float& amax : s.amax_history) amax = in.f32("amax history");
    detail::check_delayed_state(s);
    return {std::move(recipe), std::move(s)};
  } catch (const scaler_state_error& e) {
    // The byte reader shared with the loss scaler's state names its subject "scaler state".
    const std::string message = e.what();
    const std::string shared_prefix = "scaler state: ";
    if (message.compare(0, shared_prefix.size(), shared_prefix) == 0) {
      throw scaler_state_error(subject + ": " + message.substr(shared_prefix.size()));
    }
    throw;
  }
}

}  // namespace mixprec
