// fp32 master weights: each parameter is registered once, with a float master copy that the
// optimizer updates and a working copy in the low-precision dtype (float16 or bfloat16) that the
// model computes with, held here or in a buffer the caller owns.
//
//   mixprec::master_weights weights{mixprec::dtype::bfloat16};
//   std::size_t w = weights.add(initial, n);            // master = initial, working = convert(initial)
//   float* m = weights.master(w);                       // the optimizer updates this...
//   weights.refresh();                                  // ...then every working copy is rewritten
//   const bfloat16* wk = weights.working<bfloat16>(w);
//
// refresh() runs the bulk conversion (convert_n, round to nearest even), or with stochastic
// rounding convert_stochastic_n seeded from (seed, refresh count, parameter index), so that a
// run and its continuation after save/load round identically.  The registration itself rounds
// to nearest.  precision_session calls refresh() after each step that was taken and never after
// a skipped one.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../bulk/convert_n.hpp"
#include "../dtype.hpp"
#include "../errors.hpp"
#include "../scaling/state.hpp"
#include "../types.hpp"

namespace mixprec {
namespace detail {

// splitmix64 of (seed, counter, parameter): the seed of a stochastic-rounding stream distinct for
// every parameter and every refresh or update, the same after a checkpoint is loaded.
inline std::uint64_t rounding_stream_seed(std::uint64_t seed, std::uint64_t counter, std::size_t parameter) noexcept {
  std::uint64_t z = seed ^ (counter * 0x9E37'79B9'7F4A'7C15u) ^ (static_cast<std::uint64_t>(parameter) << 1);
  z = (z ^ (z >> 30)) * 0xBF58'476D'1CE4'E5B9u;
  z = (z ^ (z >> 27)) * 0x94D0'49BB'1331'11EBu;
  return z ^ (z >> 31);
}

}  // namespace detail

// master_weights is basic_master_weights<void>: a class template only so that a file compiles
// the members it calls and no others (docs/design.md, "Compiled where called").
template <class = void>
class basic_master_weights;
using master_weights = basic_master_weights<>;

template <class>
class basic_master_weights {
 public:
  explicit basic_master_weights(dtype working, bool stochastic_rounding = false, std::uint64_t seed = 0)
      : working_(working), stochastic_(stochastic_rounding), seed_(seed) {
    if (working != dtype::float16 && working != dtype::bfloat16) {
      throw invalid_argument(std::string("master_weights: working copies in ") + to_string(working) +
                             "; allowed: float16, bfloat16");
    }
  }

  // Registers a parameter whose working copy lives here; returns its index.
  std::size_t add(const float* initial, std::size_t n) { return add_parameter(initial, n, nullptr); }
  // Registers a parameter whose working copy is the caller's buffer of n values (its model's
  // parameter), which must outlive this object and be of the working dtype.
  std::size_t add(const float* initial, std::size_t n, float16* working) { return add_user(initial, n, working); }
  std::size_t add(const float* initial, std::size_t n, bfloat16* working) { return add_user(initial, n, working); }

  std::size_t size() const noexcept { return parameters_.size(); }
  std::size_t parameter_size(std::size_t i) const { return at(i).master.size(); }
  dtype working_dtype() const noexcept { return working_; }
  bool stochastic_rounding() const noexcept { return stochastic_; }
  std::uint64_t refreshes() const noexcept { return refreshes_; }

  float* master(std::size_t i) { return at(i).master.data(); }
  const float* master(std::size_t i) const { return at(i).master.data(); }

  template <class T>
  T* working(std::size_t i) {
    require_type(dtype_of<T>);
    return static_cast<T*>(at(i).working);
  }
  template <class T>
  const T* working(std::size_t i) const {
    require_type(dtype_of<T>);
    return static_cast<const T*>(at(i).working);
  }

  // Bytes of the fp32 masters, and of the working copies (wherever they live).
  std::size_t master_bytes() const noexcept { return elements() * sizeof(float); }
  std::size_t working_bytes() const noexcept { return elements() * sizeof(bfloat16); }  // float16: the same 2

  // Every working copy from its master.
  void refresh() {
    for (std::size_t i = 0; i < parameters_.size(); ++i) {
      if (working_ == dtype::float16) {
        refresh_one(i, static_cast<float16*>(parameters_[i].working));
      } else {
        refresh_one(i, static_cast<bfloat16*>(parameters_[i].working));
      }
    }
    ++refreshes_;
  }

  // Saved form inside a session state (session/precision_session.hpp): parameter count, refresh
  // count, then per parameter its size, masters (f32) and working copy (u16 bits).
  void write(detail::state_writer& w) const {
    w.u32(static_cast<std::uint32_t>(parameters_.size()));
    w.i64(static_cast<std::int64_t>(refreshes_));
    for (const parameter& p : parameters_) {
      w.i64(static_cast<std::int64_t>(p.master.size()));
      for (const float x : p.master) w.f32(x);
      for (std::size_t k = 0; k < p.master.size(); ++k) w.u16(working_bits(p, k));
    }
  }
  // What write() wrote, read and checked against the registered shapes; commit() applies it.
  struct decoded {
    std::uint64_t refreshes = 0;
    std::vector<std::vector<float>> masters;
    std::vector<std::vector<std::uint16_t>> working;  // bits of the working copies
  };
  decoded decode(detail::state_reader& in) const {
    const std::uint32_t count = in.u32("master weight count");
    if (count != parameters_.size()) {
      detail::state_reader::fail("holds " + std::to_string(count) + " master weight parameters, this session has " +
                                 std::to_string(parameters_.size()) + " registered");
    }
    const std::int64_t refreshes = in.i64("refresh count");
    if (refreshes < 0) detail::state_reader::fail("refresh count " + std::to_string(refreshes));
    decoded d;
    d.refreshes = static_cast<std::uint64_t>(refreshes);
    d.masters.resize(count);
    d.working.resize(count);
    for (std::size_t i = 0; i < count; ++i) {
      const std::int64_t n = in.i64("parameter size");
      const std::size_t expected = parameters_[i].master.size();
      if (n < 0 || static_cast<std::uint64_t>(n) != expected) {
        detail::state_reader::fail("parameter " + std::to_string(i) + " has " + std::to_string(n) +
                                   " values, the registered one has " + std::to_string(expected));
      }
      if (in.remaining() / 6 < expected) detail::state_reader::fail("truncated: parameter " + std::to_string(i));
      d.masters[i].resize(expected);
      d.working[i].resize(expected);
      for (float& x : d.masters[i]) x = in.f32("master weight");
      for (std::uint16_t& b : d.working[i]) b = static_cast<std::uint16_t>(in.u16("working weight"));
    }
    return d;
  }
  // Applies a decoded state in place: pointers to masters and working copies stay valid.
  void commit(const decoded& d) {
    for (std::size_t i = 0; i < parameters_.size(); ++i) {
      parameter& p = parameters_[i];
      std::copy(d.masters[i].begin(), d.masters[i].end(), p.master.begin());
      for (std::size_t k = 0; k < d.working[i].size(); ++k) {
        if (working_ == dtype::float16) {
          static_cast<float16*>(p.working)[k] = float16::from_bits(d.working[i][k]);
        } else {
          static_cast<bfloat16*>(p.working)[k] = bfloat16::from_bits(d.working[i][k]);
        }
      }
    }
    refreshes_ = d.refreshes;
  }

 private:
  struct parameter {
    std::vector<float> master;
    std::vector<float16> own_float16;  // the working copy when it lives here (one of the two)
    std::vector<bfloat16> own_bfloat16;
    void* working = nullptr;
  };

  const parameter& at(std::size_t i) const {
    if (i >= parameters_.size()) {
      throw invalid_argument("master_weights: parameter " + std::to_string(i) + " out of range, there are " +
                             std::to_string(parameters_.size()));
    }
    return parameters_[i];
  }
  parameter& at(std::size_t i) { return const_cast<parameter&>(static_cast<const master_weights&>(*this).at(i)); }

  std::uint16_t working_bits(const parameter& p, std::size_t k) const {
    return working_ == dtype::float16 ? static_cast<const float16*>(p.working)[k].bits()
                                      : static_cast<const bfloat16*>(p.working)[k].bits();
  }

  void require_type(dtype requested) const {
    if (requested != working_) {
      throw invalid_argument(std::string("master_weights: working copies are ") + to_string(working_) + ", not " +
                             to_string(requested));
    }
  }

  std::size_t elements() const noexcept {
    std::size_t n = 0;
    for (const parameter& p : parameters_) n += p.master.size();
    return n;
  }

  std::uint64_t stream_seed(std::size_t i) const noexcept { return detail::rounding_stream_seed(seed_, refreshes_, i); }

  template <class T>
  void refresh_one(std::size_t i, T* out) {
    const std::vector<float>& m = parameters_[i].master;
    if (stochastic_) {
      convert_stochastic_n(m.data(), m.size(), out, stream_seed(i));
    } else {
      convert_n(m.data(), m.size(), out);
    }
  }

  std::size_t add_parameter(const float* initial, std::size_t n, void* user_working) {
    if (initial == nullptr && n > 0) throw invalid_argument("master_weights::add: null initial values with n > 0");
    parameter p;
    p.master.assign(initial, initial + n);
    if (user_working != nullptr) {
      p.working = user_working;
    } else if (working_ == dtype::float16) {
      p.own_float16.resize(n);
      p.working = p.own_float16.data();
    } else {
      p.own_bfloat16.resize(n);
      p.working = p.own_bfloat16.data();
    }
    parameters_.push_back(std::move(p));  // vector storage moves with the parameter: working stays valid
    parameter& added = parameters_.back();
    if (working_ == dtype::float16) {
      convert_n(added.master.data(), n, static_cast<float16*>(added.working));
    } else {
      convert_n(added.master.data(), n, static_cast<bfloat16*>(added.working));
    }
    return parameters_.size() - 1;
  }

  template <class T>
  std::size_t add_user(const float* initial, std::size_t n, T* working) {
    require_type(dtype_of<T>);
    if (working == nullptr && n > 0) throw invalid_argument("master_weights::add: null working buffer with n > 0");
    return add_parameter(initial, n, working);
  }

  dtype working_;
  bool stochastic_;
  std::uint64_t seed_;
  std::uint64_t refreshes_ = 0;
  std::vector<parameter> parameters_;
};

}  // namespace mixprec
