// model_parameters: the model's parameters as a precision_session trains them — what dtype each
// is stored in, its float32 gradient buffer, its float32 master copy, and how an optimizer's
// float32 update reaches it.
//
//   dtype of the parameter        master copy              the optimizer updates
//   float32 (fp32, O1, fp16,      none: the parameter      the parameter's values in place
//     bf16, fp8 recipes)          is its own master
//   working dtype, with masters   float32, here            the master; the parameter is then
//     (Apex O2)                                            rewritten from it (refresh)
//   working dtype, no masters     none                     a float32 copy of the parameter, which
//     (Apex O3, pure bf16)                                 is rounded back into it
//
// The working dtype is the recipe's (float16 or bfloat16) when the recipe casts the model
// (cast_model); a parameter registered as normalization stays float32 when the recipe keeps
// batchnorm in fp32 (Apex O2's keep_batchnorm_fp32), and one whose layer a recipe's override
// rule puts in another precision is stored in that one (float32, float16 or bfloat16).
// Rounding into the working dtype is to nearest even, or with stochastic_rounding stochastic
// (convert_stochastic_n) with a stream keyed by (seed, update count, parameter index): the same
// bits in a run and in its continuation from a checkpoint (docs/session.md;
// ../shared/reference/recipes-2026.md #9 asks for exactly this).
//
// With kahan_summation, a parameter stored in the working dtype without a master keeps a
// compensation buffer c of its dtype T (zero at first), and its update is optimi's Kahan-summed
// one (optimi/sgd.py, kahan_sum: comp += step; tmp = w; w += comp; comp += tmp - w; each a
// PyTorch operation on T tensors, so computed in float and rounded to T, nearest even):
//   u  = w32' - w32              the optimizer's float32 step (w32 = float(w), exact)
//   c1 = T(float(c) + u)
//   w' = T(float(w) + float(c1))
//   c' = T(float(c1) + float(T(float(w) - float(w'))))
// so c carries the part of the updates that rounding w has not yet applied, and updates smaller
// than half of w's spacing accumulate in c until they move w (docs/session.md).
//
// Gradients are float32 buffers of the parameter's shape: accumulate() adds a gradient of any
// dtype into one (exactly: every dtype converts exactly to float32, then one float addition per
// element, as autograd's accumulation of a .grad); the session zeroes them at the start of each
// step and unscales and checks them before the update.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "../autocast/parameter.hpp"
#include "../bulk/convert_n.hpp"
#include "../detail/fingerprint.hpp"
#include "../matrix.hpp"
#include "../scaling/state.hpp"
#include "../scaling/unscale.hpp"
#include "errors.hpp"
#include "master_weights.hpp"

namespace mixprec {

// What a registered parameter is, for the recipes that treat kinds differently.
enum class parameter_role {
  weight,         // weights and biases of linear layers, embeddings, ...
  normalization,  // batchnorm / layernorm scale and shift: float32 under keep_batchnorm_fp32
};

constexpr const char* to_string(parameter_role r) noexcept {
  return r == parameter_role::weight ? "weight" : r == parameter_role::normalization ? "normalization" : "invalid";
}

// How a recipe stores the parameters: working is float16 or bfloat16 when the model is cast, else
// float32; masters: keep float32 masters of cast parameters; keep_normalization_fp32: Apex's
// keep_batchnorm_fp32; kahan: compensate the updates of parameters without masters (above).
struct parameter_storage {
  dtype working = dtype::float32;
  bool masters = false;
  bool keep_normalization_fp32 = false;
  bool stochastic_rounding = false;
  std::uint64_t seed = 0;
  bool kahan = false;
  // Per registration index, the dtype a cast model stores the parameter in when its layer has a
  // precision override (overrides.hpp: an fp32 layer stays float32); none: its role decides.
  std::vector<std::optional<dtype>> overrides;

  dtype stored_dtype(parameter_role role, std::size_t index) const noexcept {
    if (working == dtype::float32) return dtype::float32;
    if (index < overrides.size() && overrides[index]) return *overrides[index];
    return role == parameter_role::normalization && keep_normalization_fp32 ? dtype::float32 : working;
  }
  bool has_master(dtype stored) const noexcept { return stored != dtype::float32 && masters; }
  bool has_compensation(dtype stored) const noexcept { return stored != dtype::float32 && kahan && !masters; }
};

// model_parameters is basic_model_parameters<void>: a class template only so that a file compiles
// the members it calls and no others (docs/design.md, "Compiled where called").
template <class = void>
class basic_model_parameters;
using model_parameters = basic_model_parameters<>;

template <class>
class basic_model_parameters {
 public:
  explicit basic_model_parameters(const parameter_storage& storage) : storage_(storage) {}
  basic_model_parameters(dtype working, bool masters, bool keep_normalization_fp32, bool stochastic_rounding,
                         std::uint64_t seed, bool kahan_summation = false)
      : basic_model_parameters(parameter_storage{
            working, masters, keep_normalization_fp32, stochastic_rounding, seed, kahan_summation, {}}) {}
  const parameter_storage& storage() const noexcept { return storage_; }

  // Registers p (float32 values: the initial weights) and casts it to the dtype the recipe
  // stores it in.  Returns its index, which is also its index in the optimizer.  p is held by
  // address: it must stay where it is (not be moved) while the session trains it.
  std::size_t add(parameter& p, parameter_role role) {
    const std::string who = "precision_session::add_parameter: parameter '" + p.name() + "'";
    for (const entry& e : entries_) {
      if (e.value->id() == p.id()) throw invalid_argument(who + " is registered already (index " + index_text(e) + ")");
    }
    if (p.value().type() != dtype::float32) {
      throw invalid_argument(who + " holds " + to_string(p.value().type()) +
                             " values; register the float32 initial values, the session casts them to the recipe's "
                             "dtype");
    }
    if (role != parameter_role::weight && role != parameter_role::normalization) {
      throw invalid_argument(who + ": role " + std::to_string(static_cast<int>(role)) +
                             " is not weight or normalization");
    }
    entry e;
    e.value = &p;
    e.role = role;
    e.index = entries_.size();
    e.gradient.assign(p.value().size(), 0.0f);
    store(e, p.value().data<float>(), storage_);
    entries_.push_back(std::move(e));
    return entries_.size() - 1;
  }

  // Stores every parameter as `next` says (a recipe switch, precision_session::switch_recipe),
  // from its float32 value: the master where it has one, else the stored value widened (exact),
  // plus its Kahan compensation where it has one (the part of the updates not yet applied: one
  // float addition).  Gradient buffers, indices and the update count carry over.
  void restore_as(const parameter_storage& next) {
    std::vector<float> values;
    for (entry& e : entries_) {
      values.resize(e.gradient.size());
      float32_values(e, values.data());
      store(e, values.data(), next);
    }
    storage_ = next;
  }

  // The same storage with other per-parameter overrides (precision_session::apply_overrides):
  // re-stores, as restore_as does, only the parameters whose stored dtype changes.
  void set_overrides(std::vector<std::optional<dtype>> overrides) {
    parameter_storage next = storage_;
    next.overrides = std::move(overrides);
    std::vector<float> values;
    for (entry& e : entries_) {
      if (next.stored_dtype(e.role, e.index) == e.stored) continue;
      values.resize(e.gradient.size());
      float32_values(e, values.data());
      store(e, values.data(), next);
    }
    storage_ = std::move(next);
  }

  std::size_t size() const noexcept { return entries_.size(); }
  dtype stored_dtype(std::size_t i) const { return checked(i).stored; }
  std::uint64_t updates() const noexcept { return updates_; }

  std::size_t index_of(const parameter& p) const {
    for (const entry& e : entries_) {
      if (e.value->id() == p.id()) return e.index;
    }
    throw invalid_argument("precision_session: parameter '" + p.name() +
                           "' is not registered; register it with add_parameter() before training");
  }
  const parameter& at(std::size_t i) const { return *checked(i).value; }
  parameter& at(std::size_t i) { return *checked(i).value; }
  std::size_t parameter_size(std::size_t i) const { return checked(i).gradient.size(); }
  float* gradient(std::size_t i) { return checked(i).gradient.data(); }
  const float* gradient(std::size_t i) const { return checked(i).gradient.data(); }
  // The float32 master of parameter i, or nullptr when the parameter is its own master or has none.
  const float* master(std::size_t i) const {
    const entry& e = checked(i);
    return e.master.empty() ? nullptr : e.master.data();
  }
  // A fingerprint of everything that parameter i's next updates start from: its stored values,
  // its master and its Kahan compensation (process_group.hpp; replicas compare them).
  std::uint64_t fingerprint(std::size_t i) const {
    const entry& e = checked(i);
    const matrix& v = e.value->value();
    std::uint64_t h = detail::fingerprint_bytes(v.raw_data(), v.bytes());
    h = detail::fingerprint_bytes(e.master.data(), e.master.size() * sizeof(float), h);
    return detail::fingerprint_bytes(e.compensation.data(), e.compensation.size() * sizeof(std::uint16_t), h);
  }
  // The Kahan compensation of parameter i as floats (exact), or nothing when it has none.
  std::vector<float> compensation(std::size_t i) const {
    const entry& e = checked(i);
    std::vector<float> out(e.compensation.size());
    for (std::size_t k = 0; k < out.size(); ++k) out[k] = compensation_value(e, k);
    return out;
  }

  // gradient(i) += g, for g of the parameter's shape in any dtype.
  void accumulate(std::size_t i, const matrix_view& g) {
    entry& e = checked(i);
    const matrix& v = e.value->value();
    if (g.rows() != v.rows() || g.cols() != v.cols()) {
      throw invalid_argument("precision_session::accumulate_gradient: the gradient of '" + e.value->name() + "' is " +
                             std::to_string(g.rows()) + "×" + std::to_string(g.cols()) + ", the parameter is " +
                             std::to_string(v.rows()) + "×" + std::to_string(v.cols()));
    }
    float* out = e.gradient.data();
    std::vector<float>& row = scratch_;
    row.resize(g.cols());
    for (std::size_t r = 0; r < g.rows(); ++r) {
      detail::read_row_as_float(g, r, row.data());
      float* o = out + r * g.cols();
      for (std::size_t c = 0; c < g.cols(); ++c) o[c] += row[c];
    }
  }

  void zero_gradients() {
    for (entry& e : entries_) std::fill(e.gradient.begin(), e.gradient.end(), 0.0f);
  }
  std::vector<gradient_view> gradient_views() {
    std::vector<gradient_view> views;
    views.reserve(entries_.size());
    for (entry& e : entries_) views.emplace_back(e.gradient.data(), e.gradient.size());
    return views;
  }

  // One optimizer update of every parameter: step(index, float* values, const float* gradient,
  // n) changes float32 values in place (optim::sgd::step, optim::adamw::step).
  template <class Step>
  void update(Step&& step) {
    for (entry& e : entries_) {
      const std::size_t n = e.gradient.size();
      if (e.stored == dtype::float32) {
        e.value->modify([&](matrix& m) { step(e.index, m.data<float>(), e.gradient.data(), n); });
      } else if (!e.master.empty()) {
        step(e.index, e.master.data(), e.gradient.data(), n);
        e.value->modify([&](matrix& m) { round_into(e, e.master.data(), m); });
      } else {
        scratch_.resize(n);
        const matrix& v = e.value->value();
        visit_dtype(v.type(), [&](auto tag) {
          using T = typename decltype(tag)::type;
          convert_n(v.data<T>(), n, scratch_.data());  // exact
        });
        step(e.index, scratch_.data(), e.gradient.data(), n);
        e.value->modify([&](matrix& m) {
          if (e.compensation.empty()) {
            round_into(e, scratch_.data(), m);
          } else if (m.type() == dtype::float16) {
            kahan_update(e, scratch_.data(), m.data<float16>());
          } else {
            kahan_update(e, scratch_.data(), m.data<bfloat16>());
          }
        });
      }
    }
    ++updates_;
  }

  // Bytes of the float32 masters, of the parameters as stored, and of the gradient buffers.
  std::size_t master_bytes() const noexcept {
    std::size_t b = 0;
    for (const entry& e : entries_) b += e.master.size() * sizeof(float);
    return b;
  }
  std::size_t stored_bytes() const {
    std::size_t b = 0;
    for (const entry& e : entries_) b += e.value->value().bytes();
    return b;
  }
  std::size_t gradient_bytes() const noexcept {
    std::size_t b = 0;
    for (const entry& e : entries_) b += e.gradient.size() * sizeof(float);
    return b;
  }
  // Bytes of the Kahan compensation buffers (2 a value).
  std::size_t compensation_bytes() const noexcept {
    std::size_t b = 0;
    for (const entry& e : entries_) b += e.compensation.size() * sizeof(std::uint16_t);
    return b;
  }

  // Saved form inside a session state: count, update count, then per parameter its name, role,
  // stored dtype, rows, cols, the stored values' bytes, the master (present flag + floats) and the
  // Kahan compensation (present flag + u16 codes of the stored dtype).
  void write(detail::state_writer& w) const {
    w.u32(static_cast<std::uint32_t>(entries_.size()));
    w.i64(static_cast<std::int64_t>(updates_));
    for (const entry& e : entries_) {
      const matrix& v = e.value->value();
      w.str(e.value->name());
      w.u8(static_cast<unsigned>(e.role));
      w.u8(static_cast<unsigned>(v.type()));
      w.i64(static_cast<std::int64_t>(v.rows()));
      w.i64(static_cast<std::int64_t>(v.cols()));
      const auto* bytes = static_cast<const std::uint8_t*>(v.raw_data());
      w.bytes.insert(w.bytes.end(), bytes, bytes + v.bytes());
      w.u8(e.master.empty() ? 0u : 1u);
      for (const float x : e.master) w.f32(x);
      w.u8(e.compensation.empty() ? 0u : 1u);
      for (const std::uint16_t code : e.compensation) w.u16(code);
    }
  }
  struct decoded {
    std::uint64_t updates = 0;
    std::vector<std::vector<std::uint8_t>> values;
    std::vector<std::vector<float>> masters;
    std::vector<std::vector<std::uint16_t>> compensations;
  };
  // What write() wrote, checked against the registered parameters stored as `as` says (this
  // model's own storage, or the one a checkpoint's recipe gives); commit(d, as) applies it.
  decoded decode(detail::state_reader& in) const { return decode(in, storage_); }
  decoded decode(detail::state_reader& in, const parameter_storage& as) const {
    using detail::state_reader;
    const std::uint32_t count = in.u32("parameter count");
    if (count != entries_.size()) {
      state_reader::fail("holds " + std::to_string(count) + " model parameters, this session has " +
                         std::to_string(entries_.size()) + " registered");
    }
    const std::int64_t updates = in.i64("update count");
    if (updates < 0) state_reader::fail("update count " + std::to_string(updates));
    decoded d;
    d.updates = static_cast<std::uint64_t>(updates);
    for (const entry& e : entries_) {
      const matrix& current = e.value->value();
      const dtype stored = as.stored_dtype(e.role, e.index);
      const std::size_t value_bytes = current.size() * size_of(stored);
      const std::size_t master_size = as.has_master(stored) ? current.size() : 0;
      const std::size_t compensation_size = as.has_compensation(stored) ? current.size() : 0;
      const std::string name = in.str("parameter name", name_limit);
      std::string which = "parameter " + index_text(e);
      which += " ('" + e.value->name() + "')";
      if (name != e.value->name()) {
        which += " was saved as '";
        which += name;
        state_reader::fail(which + "'");
      }
      const unsigned role = in.u8("parameter role");
      if (role != static_cast<unsigned>(e.role)) {
        state_reader::fail(which + " was saved with role " + std::to_string(role) + ", it is registered as " +
                           to_string(e.role));
      }
      const unsigned type = in.u8("parameter dtype");
      if (type != static_cast<unsigned>(stored)) {
        state_reader::fail(which + " was saved in dtype " + std::to_string(type) + ", it is " + to_string(stored));
      }
      const std::int64_t rows = in.i64("parameter rows"), cols = in.i64("parameter cols");
      if (rows < 0 || cols < 0 || static_cast<std::uint64_t>(rows) != current.rows() ||
          static_cast<std::uint64_t>(cols) != current.cols()) {
        state_reader::fail(which + " was saved as " + std::to_string(rows) + "×" + std::to_string(cols) + ", it is " +
                           std::to_string(current.rows()) + "×" + std::to_string(current.cols()));
      }
      if (in.remaining() < value_bytes) state_reader::fail("truncated: the values of " + which);
      std::vector<std::uint8_t> bytes(value_bytes);
      for (std::uint8_t& b : bytes) b = static_cast<std::uint8_t>(in.u8("parameter values"));
      const bool has_master = in.boolean("master present");
      if (has_master != (master_size != 0)) {
        state_reader::fail(which + (has_master ? " has a master copy saved, this session keeps none"
                                               : " has no master copy saved, this session keeps one"));
      }
      std::vector<float> master(master_size);
      if (in.remaining() / sizeof(float) < master.size()) state_reader::fail("truncated: the master of " + which);
      for (float& x : master) x = in.f32("master value");
      const bool has_compensation = in.boolean("compensation present");
      if (has_compensation != (compensation_size != 0)) {
        state_reader::fail(which + (has_compensation ? " has a Kahan compensation saved, this session keeps none"
                                                     : " has no Kahan compensation saved, this session keeps one"));
      }
      std::vector<std::uint16_t> compensation(compensation_size);
      if (in.remaining() / sizeof(std::uint16_t) < compensation.size()) {
        state_reader::fail("truncated: the compensation of " + which);
      }
      for (std::uint16_t& code : compensation) code = static_cast<std::uint16_t>(in.u16("compensation value"));
      d.values.push_back(std::move(bytes));
      d.masters.push_back(std::move(master));
      d.compensations.push_back(std::move(compensation));
    }
    return d;
  }
  void commit(const decoded& d) { commit(d, storage_); }
  void commit(const decoded& d, const parameter_storage& as) {
    for (std::size_t i = 0; i < entries_.size(); ++i) {
      entry& e = entries_[i];
      e.stored = as.stored_dtype(e.role, e.index);
      if (e.value->value().type() != e.stored) {
        e.value->assign(matrix(e.stored, e.value->value().rows(), e.value->value().cols()));
      }
      e.value->modify([&](matrix& m) {
        std::copy(d.values[i].begin(), d.values[i].end(), static_cast<std::uint8_t*>(m.raw_data()));
      });
      e.master = d.masters[i];
      e.compensation = d.compensations[i];
    }
    updates_ = d.updates;
    storage_ = as;
  }
  // The largest saved form of the registered parameters under any storage (a state saved after a
  // recipe switch stores them as the other recipe does): per value at most 4 bytes, float32
  // stored, or 2 stored + 4 master, or 2 stored + 2 compensation.
  std::size_t saved_bytes_limit() const {
    std::size_t b = 16;
    for (const entry& e : entries_) b += 64 + name_limit + 6 * e.gradient.size();
    return b;
  }

 private:
  static constexpr std::size_t name_limit = 4096;

  struct entry {
    parameter* value = nullptr;
    parameter_role role = parameter_role::weight;
    dtype stored = dtype::float32;
    std::size_t index = 0;
    std::vector<float> gradient;
    std::vector<float> master;
    std::vector<std::uint16_t> compensation;  // codes of the stored dtype (kahan_summation)
  };

  static std::string index_text(const entry& e) { return std::to_string(e.index); }

  // Stores e's parameter from float32 values as `as` says: in its stored dtype (nearest even, as
  // Apex's model.half()), with a master copy of the values or a zero compensation (+0 in float16
  // and bfloat16) where `as` keeps one.
  static void store(entry& e, const float* values, const parameter_storage& as) {
    const matrix& v = e.value->value();
    const std::size_t n = v.size();
    e.stored = as.stored_dtype(e.role, e.index);
    e.master = as.has_master(e.stored) ? std::vector<float>(values, values + n) : std::vector<float>{};
    e.compensation = std::vector<std::uint16_t>(as.has_compensation(e.stored) ? n : 0, 0);
    if (e.stored != dtype::float32) {
      e.value->assign(convert(matrix_view(values, v.rows(), v.cols()), e.stored));
    } else if (v.type() != dtype::float32 || v.data<float>() != values) {  // add() passes the parameter's own
      matrix copy(dtype::float32, v.rows(), v.cols());
      std::copy(values, values + n, copy.data<float>());
      e.value->assign(std::move(copy));
    }
  }

  // e's float32 value: its master, else its stored value widened plus its compensation.
  static void float32_values(const entry& e, float* out) {
    if (!e.master.empty()) {
      std::copy(e.master.begin(), e.master.end(), out);
      return;
    }
    const matrix& v = e.value->value();
    visit_dtype(v.type(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      convert_n(v.data<T>(), v.size(), out);  // exact
    });
    for (std::size_t k = 0; k < e.compensation.size(); ++k) out[k] += compensation_value(e, k);
  }

  entry& checked(std::size_t i) { return const_cast<entry&>(static_cast<const model_parameters&>(*this).checked(i)); }
  const entry& checked(std::size_t i) const {
    if (i >= entries_.size()) {
      throw invalid_argument("precision_session: parameter index " + std::to_string(i) + " out of range, " +
                             std::to_string(entries_.size()) + " registered");
    }
    return entries_[i];
  }

  // A stream of its own per update and parameter, apart from master_weights' streams of the same seed.
  std::uint64_t stream_seed(std::size_t i) const noexcept {
    return detail::rounding_stream_seed(storage_.seed ^ 0xD1B5'4A32'D192'ED03u, updates_, i);
  }

  void round_into(const entry& e, const float* values, matrix& m) const {
    const std::size_t n = e.gradient.size();
    const auto write = [&](auto* out) {
      if (storage_.stochastic_rounding) {
        convert_stochastic_n(values, n, out, stream_seed(e.index));
      } else {
        convert_n(values, n, out);
      }
    };
    if (m.type() == dtype::float16) {
      write(m.data<float16>());
    } else {
      write(m.data<bfloat16>());
    }
  }

  // The compensation's element k as a float (exact).
  static float compensation_value(const entry& e, std::size_t k) {
    const std::uint16_t code = e.compensation[k];
    return e.stored == dtype::float16 ? static_cast<float>(float16::from_bits(code))
                                      : static_cast<float>(bfloat16::from_bits(code));
  }

  // The rule in the header comment, element by element: `updated` holds w32' (the optimizer's
  // result), w the parameter as stored (still w32 until written here).
  template <class T>
  static void kahan_update(entry& e, const float* updated, T* w) {
    for (std::size_t k = 0; k < e.compensation.size(); ++k) {
      const float before = static_cast<float>(w[k]);
      const float step = updated[k] - before;
      const T c1(static_cast<float>(T::from_bits(e.compensation[k])) + step);
      const T after(before + static_cast<float>(c1));
      const T old_minus_new(before - static_cast<float>(after));  // minus what w took of c1
      e.compensation[k] = T(static_cast<float>(c1) + static_cast<float>(old_minus_new)).bits();
      w[k] = after;
    }
  }

  parameter_storage storage_;
  std::uint64_t updates_ = 0;
  std::vector<entry> entries_;
  std::vector<float> scratch_;
};

}  // namespace mixprec
