// parameter: a model weight with an identity and a version, so that autocast can convert it
// once per outermost scope and never hand out a stale copy (autocast/weight_cache.hpp).
//
//   mixprec::parameter w(mixprec::matrix(mixprec::dtype::float32, 128, 64), "fc1.weight");
//   ops::linear(x, w, b);                 // inside autocast_scope<bfloat16>: w's bf16 copy is cached
//   w.modify([&](mixprec::matrix& m) {    // every change goes through modify() or a writer:
//     sgd_step(m.data<float>(), ...);     // the version moves before and after, so no copy made
//   });                                   // before or during the change is used after it
//
// Identity: each parameter gets an id that no other parameter in the process ever gets (a
// counter, not an address: a new parameter at a freed address is not mistaken for the old one,
// the bug PyTorch's cache avoids with a weak reference).  A copy is a new parameter with a new
// id; a move keeps the id and leaves the source empty with a fresh one.  alive() hands out a
// token that expires when the parameter is destroyed, so caches drop copies of dead weights.
//
// Precision override: set_precision_override(d) makes every operation of mixprec::ops that
// takes the parameter compute as inside an autocast scope of d (float32: matrix products in
// float32), whatever scope is active (ops/operand.hpp, result_dtype); precision_session sets it
// from a recipe's override rules (session/overrides.hpp).  A copy keeps it; a move takes it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "../errors.hpp"
#include "../matrix.hpp"

namespace mixprec {

class parameter {
 public:
  explicit parameter(matrix value, std::string name = {}) : value_(std::move(value)), name_(std::move(name)) {}

  parameter(const parameter& other) : value_(other.value_), name_(other.name_), override_(other.override_) {}
  parameter& operator=(const parameter& other) {
    if (this != &other) {
      begin_write();
      value_ = other.value_;
      name_ = other.name_;
      override_ = other.override_;
      end_write();
    }
    return *this;
  }
  parameter(parameter&& other) noexcept
      : value_(std::move(other.value_)),
        name_(std::move(other.name_)),
        override_(std::exchange(other.override_, std::nullopt)),
        id_(std::exchange(other.id_, next_id())),
        version_(other.version_.load()),
        token_(std::exchange(other.token_, std::make_shared<char>())) {}
  parameter& operator=(parameter&& other) noexcept {
    if (this != &other) {
      begin_write();
      value_ = std::move(other.value_);
      name_ = std::move(other.name_);
      override_ = std::exchange(other.override_, std::nullopt);
      end_write();
      other.id_ = next_id();
      other.token_ = std::make_shared<char>();
    }
    return *this;
  }
  ~parameter() = default;

  const matrix& value() const noexcept { return value_; }
  matrix_view view() const noexcept { return value_.view(); }
  const std::string& name() const noexcept { return name_; }
  std::uint64_t id() const noexcept { return id_; }
  // Moves on every change; a cached copy is valid only for the version it was made from.
  std::uint64_t version() const noexcept { return version_.load(std::memory_order_acquire); }
  // True while a writer is open: caches neither use nor make copies then.
  bool being_written() const noexcept { return writers_.load(std::memory_order_acquire) != 0; }
  std::weak_ptr<const char> alive() const noexcept { return token_; }

  // The dtype the operations taking this parameter compute in (float32, float16 or bfloat16),
  // or nothing: the autocast state decides (header comment).
  const std::optional<dtype>& precision_override() const noexcept { return override_; }
  void set_precision_override(std::optional<dtype> d) {
    if (d && *d != dtype::float32 && *d != dtype::float16 && *d != dtype::bfloat16) {
      throw invalid_argument("parameter '" + name_ + "': precision override " + to_string(*d) +
                             " is not float32, float16 or bfloat16 (the dtypes an autocast scope computes in)");
    }
    override_ = d;
  }

  // Runs f(matrix&) on the value; the version moves before and after.
  template <class F>
  void modify(F&& f) {
    writer w = write();
    std::forward<F>(f)(w.value());
  }

  // Scoped write access, for changes that do not fit in one call.
  class writer {
   public:
    explicit writer(parameter& p) : p_(&p) { p_->begin_write(); }
    writer(const writer&) = delete;
    writer& operator=(const writer&) = delete;
    writer(writer&& other) noexcept : p_(std::exchange(other.p_, nullptr)) {}
    writer& operator=(writer&&) = delete;
    ~writer() {
      if (p_ != nullptr) p_->end_write();
    }
    matrix& value() noexcept { return p_->value_; }

   private:
    parameter* p_;
  };
  writer write() { return writer(*this); }

  // Replaces the value (any shape and dtype).
  void assign(matrix value) {
    modify([&](matrix& m) { m = std::move(value); });
  }

 private:
  static std::uint64_t next_id() noexcept {
    static std::atomic<std::uint64_t> counter{1};
    return counter.fetch_add(1, std::memory_order_relaxed);
  }
  void begin_write() noexcept {
    writers_.fetch_add(1, std::memory_order_acq_rel);
    version_.fetch_add(1, std::memory_order_acq_rel);
  }
  void end_write() noexcept {
    version_.fetch_add(1, std::memory_order_acq_rel);
    writers_.fetch_sub(1, std::memory_order_acq_rel);
  }

  matrix value_;
  std::string name_;
  std::optional<dtype> override_;
  std::uint64_t id_ = next_id();
  std::atomic<std::uint64_t> version_{0};
  std::atomic<int> writers_{0};
  std::shared_ptr<char> token_ = std::make_shared<char>();
};

}  // namespace mixprec
