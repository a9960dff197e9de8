// mixprec::optim::sgd: stochastic gradient descent with momentum, dampening, Nesterov momentum
// and weight decay, bit for bit as PyTorch 1.13's torch.optim.SGD (foreach=False) on the CPU.
//
// Per parameter, with float32 arithmetic and the roundings of detail/kernels.hpp
// (torch/optim/sgd.py, _single_tensor_sgd):
//   d = g;  if weight_decay != 0: d = d + weight_decay * w           (one fma)
//   if momentum != 0:
//     buf = first step ? d : momentum * buf + (1 - dampening) * d    (a product, then an fma)
//     d = nesterov ? d + momentum * buf : buf                         (one fma)
//   w = w - lr * d                                                    (one fma)
// The momentum buffer is created by the parameter's first step (buf = d, not (1 - dampening) d),
// as PyTorch creates it; a saved state records whether it exists yet.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../errors.hpp"
#include "../scaling/state.hpp"
#include "detail/kernels.hpp"
#include "detail/parameter_state.hpp"

namespace mixprec::optim {

struct sgd_options {
  float lr = 0.01f;
  float momentum = 0;
  float dampening = 0;
  bool nesterov = false;
  float weight_decay = 0;
};

class sgd {
 public:
  static constexpr char state_magic[8] = {'M', 'X', 'O', 'P', 'T', 'S', 'G', 'D'};
  static constexpr std::uint32_t state_version = 1;

  // Throws invalid_argument naming the value and its allowed range.
  explicit sgd(const sgd_options& o = {}) : options_(o) {
    detail::require_non_negative(who, "lr", o.lr);
    detail::require_unit_open(who, "momentum", o.momentum);
    detail::require_option(o.dampening >= 0.0f && o.dampening <= 1.0f, who, "dampening", o.dampening, "[0, 1]");
    detail::require_non_negative(who, "weight_decay", o.weight_decay);
    if (o.nesterov && (o.momentum <= 0.0f || o.dampening != 0.0f)) {  // PyTorch's rule
      throw invalid_argument(std::string(who) + ": nesterov needs momentum > 0 and dampening = 0, got momentum " +
                             detail::float_text(o.momentum) + " and dampening " + detail::float_text(o.dampening));
    }
  }

  const sgd_options& options() const noexcept { return options_; }

  void set_lr(float lr) {
    detail::require_non_negative(who, "lr", lr);
    options_.lr = lr;
  }
  float lr() const noexcept { return options_.lr; }

  // Registers a parameter of n elements; returns its index.  The momentum buffer (if any) is
  // allocated here, so that step() never allocates.
  std::size_t add(std::size_t n) {
    detail::check_parameter_size(who, n);
    parameter p;
    p.size = n;
    if (options_.momentum != 0.0f) p.buffer.assign(n, 0.0f);
    parameters_.push_back(std::move(p));
    return parameters_.size() - 1;
  }
  std::size_t size() const noexcept { return parameters_.size(); }

  // One update of parameter i: w[0, n) in place from g[0, n).
  void step(std::size_t i, float* w, const float* g, std::size_t n) {
    detail::check_step(who, i, parameters_.size(), w, g, n, i < parameters_.size() ? parameters_[i].size : 0);
    parameter& p = parameters_[i];
    const sgd_options& o = options_;
    detail::sgd_scalars s{};
    s.weight_decay = o.weight_decay;
    s.momentum = o.momentum;
    s.keep = static_cast<float>(1.0 - static_cast<double>(o.dampening));  // Python's 1 - dampening
    s.neg_lr = -o.lr;
    const detail::sgd_branches b{o.weight_decay != 0.0f, o.momentum != 0.0f, !p.has_buffer, o.nesterov};
    detail::sgd_kernel(s, b, w, g, p.buffer.data(), n);
    if (b.momentum) p.has_buffer = true;
  }

  // Bytes of optimizer state: the momentum buffers.
  std::size_t state_bytes() const noexcept {
    std::size_t bytes = 0;
    for (const parameter& p : parameters_) bytes += p.buffer.size() * sizeof(float);
    return bytes;
  }

  // Payload: str "sgd"; f32 lr, momentum, dampening; u8 nesterov; f32 weight_decay; u64 count;
  // per parameter: u64 size, u8 buffer exists, then size f32 if it does.
  void write(::mixprec::detail::state_writer& out) const {
    out.str(kind);
    out.f32(options_.lr);
    out.f32(options_.momentum);
    out.f32(options_.dampening);
    out.u8(options_.nesterov ? 1 : 0);
    out.f32(options_.weight_decay);
    out.put_unsigned(parameters_.size(), 8);
    for (const parameter& p : parameters_) {
      out.put_unsigned(p.size, 8);
      out.u8(p.has_buffer ? 1 : 0);
      if (p.has_buffer) detail::write_floats(out, p.buffer);
    }
  }

  // Everything a state holds, checked against this optimizer.
  struct decoded {
    float lr = 0;
    std::vector<unsigned char> has_buffer;    // per parameter
    std::vector<std::vector<float>> buffers;  // empty where has_buffer is 0
  };

  // Reads a payload written by write(); throws scaler_state_error (state_reader::fail) if it is
  // another optimizer's, has other options (lr aside), another parameter count or size, or
  // values that are not finite.  Changes nothing.
  decoded decode(::mixprec::detail::state_reader& in) const {
    using ::mixprec::detail::state_reader;
    detail::read_kind(in, kind);
    decoded d;
    d.lr = detail::read_lr(in, who);
    detail::read_same_option(in, who, "momentum", options_.momentum);
    detail::read_same_option(in, who, "dampening", options_.dampening);
    if (in.boolean("nesterov") != options_.nesterov) {
      state_reader::fail(std::string(who) + ": saved with nesterov = " + (options_.nesterov ? "false" : "true") +
                         ", this optimizer has " + (options_.nesterov ? "true" : "false"));
    }
    detail::read_same_option(in, who, "weight_decay", options_.weight_decay);
    detail::read_parameter_count(in, who, parameters_.size());
    d.has_buffer.resize(parameters_.size());
    d.buffers.resize(parameters_.size());
    for (std::size_t i = 0; i < parameters_.size(); ++i) {
      detail::read_parameter_size(in, who, i, parameters_[i].size);
      const bool exists = in.boolean("momentum buffer exists");
      if (exists && options_.momentum == 0.0f) {
        state_reader::fail(std::string(who) + ": parameter " + std::to_string(i) +
                           " has a momentum buffer, this optimizer has momentum 0");
      }
      d.has_buffer[i] = exists ? 1 : 0;
      if (exists) {
        d.buffers[i] = detail::read_floats(in, parameters_[i].size,
                                           std::string(who) + ": momentum buffer " + std::to_string(i), false);
      }
    }
    return d;
  }

  // Applies a decoded state.  Copies into the buffers add() allocated: nothing allocates.
  // Throws invalid_argument (and changes nothing) if parameters were added since decode().
  void commit(const decoded& d) {
    if (d.has_buffer.size() != parameters_.size()) {
      throw invalid_argument(std::string(who) + ": decoded state of " + std::to_string(d.has_buffer.size()) +
                             " parameters, " + std::to_string(parameters_.size()) + " are registered now");
    }
    options_.lr = d.lr;
    for (std::size_t i = 0; i < parameters_.size(); ++i) {
      parameter& p = parameters_[i];
      p.has_buffer = d.has_buffer[i] != 0;
      if (p.has_buffer) {
        std::copy(d.buffers[i].begin(), d.buffers[i].end(), p.buffer.begin());
      } else {
        std::fill(p.buffer.begin(), p.buffer.end(), 0.0f);
      }
    }
  }

  // The standalone saved form: the library's frame (magic "MXOPTSGD", version 1, CRC-32) around
  // write()'s payload.
  std::vector<std::uint8_t> save_state() const { return detail::framed_state(*this); }

  // All or nothing: throws scaler_state_error and changes nothing unless the whole state loads.
  void load_state(const std::uint8_t* data, std::size_t size) { detail::load_framed_state(*this, data, size, kind); }

 private:
  static constexpr const char* who = "mixprec::optim::sgd";
  static constexpr const char* kind = "sgd";

  struct parameter {
    std::size_t size = 0;
    bool has_buffer = false;
    std::vector<float> buffer;  // n floats when momentum != 0, else empty
  };

  sgd_options options_;
  std::vector<parameter> parameters_;
};

}  // namespace mixprec::optim
