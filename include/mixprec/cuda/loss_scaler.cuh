// device_loss_scaler<Policy, Agreement>: loss scaling with its state on the GPU, as PyTorch keeps
// the scale and found_inf in CUDA tensors: no host synchronisation in the training step, so the
// whole step (scale, backward, unscale, agreement, optimizer, update) can be captured in a CUDA
// graph and replayed.
//
//   mixprec::gpu::device_loss_scaler<mixprec::dynamic_scaling> scaler{mixprec::dynamic_scaling{}, {}, stream};
//   scaler.scale(loss, 1);                          // loss *= scale, on the device
//   ... backward ...
//   scaler.unscale({{grads, n}});                   // fused unscale + inf/NaN check -> found_inf
//   scaler.step([&](const float* found_inf) {       // the optimizer kernel skips on the flag:
//     sgd<<<blocks, 256, 0, stream>>>(w, grads, n, lr, found_inf);   //   if (*found_inf != 0) return;
//   });
//   scaler.update();                                // the policy's rule, one thread on the device
//
// It mirrors loss_scaler (scaling/loss_scaler.hpp): the same policies, scaler_options, order of
// calls (checked on the host: scaler_usage_error), and update rule, *the same code*: the update
// kernel runs detail::apply_update (scaling/update_rule.hpp), which loss_scaler::update() runs on
// the host.  Differences, all from running on the device:
//   - step(launch) always calls launch(found_inf): the skip is decided by the kernel it launches,
//     on the device (docs/cuda.md shows the optimizer kernel);
//   - errors the host scaler throws from update() (skip limit, floor with throw_error, the
//     policy's raise_at_min_scale, a NaN scale) are recorded on the device, the scaler freezes,
//     and check() throws the same exception type later, when the host chooses to synchronise;
//   - scaler_options::at_floor may be clamp or throw_error (a floor_handler is a host function);
//     the history of scale changes is not kept; unscale.threads is ignored;
//   - get_scale(), state(), counters(), error(), check() read device memory: they synchronise
//     the stream.  Everything else only enqueues work on it.
//
// The Agreement makes every process see the same found_inf: reduce_on_device(float* flags, n)
// reduces them in place on the scaler's stream.  local_device_agreement does nothing;
// mixprec::nccl_agreement (distributed/nccl.hpp, constructed with this scaler's stream) runs
// ncclAllReduce(ncclMax), which CUDA graphs can capture.
//
// Construction allocates the device state and copies the initial state synchronously: create
// the scaler before capturing a graph.  Policies must be trivially copyable (they are kernel
// parameters) with a MIXPREC_HOST_DEVICE update or try_update (all of the library's are).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../scaling/loss_scaler.hpp"
#include "detail/device_scaler_step.hpp"
#include "detail/elementwise.cuh"
#include "runtime.cuh"
#include "unscale.cuh"

namespace mixprec::gpu {

// One process: the flags stay as they are.
struct local_device_agreement {
  void reduce_on_device(float*, std::size_t) const noexcept {}
};

namespace detail {

// The policy's rule in device code (a __device__ twin of mixprec::detail::try_policy_update): a
// policy whose update is host-only fails to compile here, not silently.
template <class Policy>
__device__ bool try_policy_update_on_device(const Policy& policy, scale_state& state, bool found_inf) {
  if constexpr (mixprec::detail::has_try_update<Policy>::value) {
    return policy.try_update(state, found_inf);
  } else {
    policy.update(state, found_inf);
    return true;
  }
}

template <class Policy>
__global__ void scaler_update_kernel(Policy policy, device_scaler_state* d, float* found_inf, int optimizers,
                                     device_update_options options) {
  device_update_step([&policy](scale_state& s, bool f) { return try_policy_update_on_device(policy, s, f); }, *d,
                     found_inf, optimizers, options);
}

// (Templates only so that the header can define them in every translation unit.)
template <int = 0>
__global__ void scale_values_kernel(float* values, std::uint64_t n, const float* scale) {
  const float s = *scale;
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += gridDim.x * static_cast<std::uint64_t>(blockDim.x)) {
    values[i] = multiply_like_host(values[i], s);
  }
}

template <int = 0>
__global__ void record_found_inf_kernel(const float* source, float* flag) {
  if (*source != 0.0f) *flag = 1.0f;
}

template <class Agreement, class = void>
struct has_stream : std::false_type {};
template <class Agreement>
struct has_stream<Agreement, std::void_t<decltype(std::declval<const Agreement&>().stream())>> : std::true_type {};

}  // namespace detail

template <class Policy, class Agreement = local_device_agreement>
class device_loss_scaler {
  static_assert(std::is_trivially_copyable<Policy>::value, "the policy is a kernel parameter: trivially copyable");

 public:
  using policy_type = Policy;
  using agreement_type = Agreement;
  static constexpr std::size_t max_optimizers = loss_scaler<Policy>::max_optimizers;

  explicit device_loss_scaler(Policy policy = Policy{}, scaler_options options = {}, cudaStream_t stream = nullptr,
                              std::size_t optimizers = 1, Agreement agreement = Agreement{})
      : policy_(std::move(policy)),
        options_(std::move(options)),
        stream_(stream),
        agreement_(std::move(agreement)),
        records_(optimizers) {
    validate_policy(policy_);
    mixprec::detail::validate_scaler_options(options_);
    if (options_.at_floor == floor_action::call_handler) {
      throw invalid_argument(
          "device_loss_scaler: scaler_options::at_floor is call_handler, but a floor handler is a host function; "
          "the device scaler supports clamp and throw_error");
    }
    if (optimizers == 0 || optimizers > max_optimizers) {
      throw invalid_argument("device_loss_scaler: optimizers is " + std::to_string(optimizers) +
                             ", it must be in [1, " + std::to_string(max_optimizers) + "]");
    }
    if constexpr (detail::has_stream<Agreement>::value) {
      if (agreement_.stream() != stream_) {
        throw invalid_argument(
            "device_loss_scaler: the agreement runs on another stream than the scaler; construct it with the "
            "scaler's stream so that the reduction is ordered between unscale and update");
      }
    }
    update_options_.limits = mixprec::detail::update_limits_of(options_);
    update_options_.throw_at_floor = options_.at_floor == floor_action::throw_error;
    detail::device_scaler_state initial{};
    initial.state = policy_.initial_state();
    initial.counters = scaler_counters{};
    initial.error = device_scaler_error::none;
    initial.error_iteration = 0;
    require_in_bounds(initial.state.scale, "the policy's initial scale");
    detail::publish_scale(initial);
    void* memory = nullptr;
    detail::check(cudaMalloc(&memory, sizeof(detail::device_scaler_state) + optimizers * sizeof(float)),
                  "device_loss_scaler", "cudaMalloc");
    memory_ = static_cast<detail::device_scaler_state*>(memory);
    try {
      write_state(initial);
      detail::check(cudaMemsetAsync(found_inf_array(), 0, optimizers * sizeof(float), stream_), "device_loss_scaler",
                    "cudaMemsetAsync(found_inf)");
      detail::check(cudaStreamSynchronize(stream_), "device_loss_scaler", "cudaStreamSynchronize");
    } catch (...) {
      static_cast<void>(cudaFree(memory_));
      throw;
    }
  }

  device_loss_scaler(const device_loss_scaler&) = delete;
  device_loss_scaler& operator=(const device_loss_scaler&) = delete;
  device_loss_scaler(device_loss_scaler&& other) noexcept { *this = std::move(other); }
  device_loss_scaler& operator=(device_loss_scaler&& other) noexcept {
    if (this != &other) {
      release();
      policy_ = std::move(other.policy_);
      options_ = std::move(other.options_);
      update_options_ = other.update_options_;
      stream_ = other.stream_;
      agreement_ = std::move(other.agreement_);
      records_ = std::move(other.records_);
      memory_ = std::exchange(other.memory_, nullptr);
    }
    return *this;
  }
  ~device_loss_scaler() { release(); }

  // Device memory the training step's own kernels read (valid as long as the scaler lives).
  const float* scale_on_device() const noexcept { return &memory_->scale; }
  const float* inv_scale_on_device() const noexcept { return &memory_->inv_scale; }
  const scale_state* state_on_device() const noexcept { return &memory_->state; }
  // Non-zero when the optimizer's check (agreed across processes) found inf/NaN in this iteration.
  const float* found_inf_on_device(std::size_t optimizer = 0) const {
    return found_inf_array() + record_index("found_inf_on_device()", optimizer);
  }

  // values[i] *= scale on the device (loss_scaler::scale: loss × get_scale(), in float).
  void scale(float* values, std::size_t n) {
    if (n == 0) return;
    if (values == nullptr) {
      throw invalid_argument("device_loss_scaler::scale: null pointer with n = " + std::to_string(n));
    }
    const detail::launch_shape shape = detail::grid_for(n, current_device("device_loss_scaler::scale").multiprocessors);
    detail::scale_values_kernel<><<<shape.blocks, shape.threads, 0, stream_>>>(values, n, scale_on_device());
    detail::check_launch("device_loss_scaler::scale");
  }

  // Unscales device gradients and records the check for this optimizer (agreed across processes).
  void unscale(const gradient_view* arrays, std::size_t count, std::size_t optimizer = 0) {
    mixprec::detail::check_gradient_views("device_loss_scaler::unscale", arrays, count);
    float* flag = begin_check("unscale()", optimizer);
    unscale_and_check(arrays, count, inv_scale_on_device(), flag, stream_, options_.unscale);
    finish_check(flag);
  }
  void unscale(std::initializer_list<gradient_view> arrays, std::size_t optimizer = 0) {
    unscale(arrays.begin(), arrays.size(), optimizer);
  }
  void unscale(const std::vector<gradient_view>& arrays, std::size_t optimizer = 0) {
    unscale(arrays.data(), arrays.size(), optimizer);
  }

  // Records a check made elsewhere: a device float, non-zero when inf/NaN was found.
  void record_found_inf(const float* found_inf, std::size_t optimizer = 0) {
    if (found_inf == nullptr) throw invalid_argument("device_loss_scaler::record_found_inf: null found_inf pointer");
    float* flag = begin_check("record_found_inf()", optimizer);
    detail::record_found_inf_kernel<><<<1, 1, 0, stream_>>>(found_inf, flag);
    detail::check_launch("device_loss_scaler::record_found_inf");
    finish_check(flag);
  }

  // Calls launch(found_inf) to enqueue the optimizer's kernel, which must do nothing when
  // *found_inf != 0.
  template <class Launch>
  void step(Launch&& launch, std::size_t optimizer = 0) {
    const std::size_t i = record_index("step()", optimizer);
    if (records_[i] == phase::stepped) {
      throw scaler_usage_error("step() has already been called for optimizer " + std::to_string(optimizer) +
                               " in this iteration; update() starts the next one");
    }
    if (records_[i] != phase::checked) {
      throw scaler_usage_error("step() for optimizer " + std::to_string(optimizer) +
                               " with no inf check recorded in this iteration: call unscale() or record_found_inf() "
                               "first");
    }
    std::forward<Launch>(launch)(static_cast<const float*>(found_inf_array() + i));
    records_[i] = phase::stepped;
  }

  // Enqueues the update: the policy's rule and the rails, on one device thread.
  void update() {
    bool any = false;
    for (const phase p : records_) any = any || p != phase::ready;
    if (!any) {
      throw scaler_usage_error(
          "update() with no inf check recorded in this iteration: call unscale() or record_found_inf() first");
    }
    detail::scaler_update_kernel<Policy>
        <<<1, 1, 0, stream_>>>(policy_, memory_, found_inf_array(), static_cast<int>(records_.size()), update_options_);
    detail::check_launch("device_loss_scaler::update");
    for (phase& p : records_) p = phase::ready;
  }

  // Host reads: each synchronises the stream.
  float get_scale() const { return read_state().scale; }
  float get_inv_scale() const { return read_state().inv_scale; }
  scale_state state() const { return read_state().state; }
  scaler_counters counters() const { return read_state().counters; }
  device_scaler_error error() const { return read_state().error; }
  // Throws what loss_scaler::update() would have thrown, if the device recorded an error.
  void check() const { detail::throw_device_scaler_error(read_state(), update_options_, Policy::name); }

  // Replaces the policy and the rule's state (as loss_scaler::restore); counters start afresh and
  // a recorded error is cleared.  Synchronises; only between iterations.
  void restore(const Policy& policy, const scale_state& state) {
    require_between_iterations("restore()");
    validate_policy(policy);
    validate_scale_state(policy, state);
    require_in_bounds(state.scale, "restore(): the scale");
    detail::device_scaler_state next{};
    next.state = state;
    next.counters = scaler_counters{};
    next.error = device_scaler_error::none;
    detail::publish_scale(next);
    write_state(next);
    detail::check(cudaMemsetAsync(found_inf_array(), 0, records_.size() * sizeof(float), stream_),
                  "device_loss_scaler::restore", "cudaMemsetAsync(found_inf)");
    detail::check(cudaStreamSynchronize(stream_), "device_loss_scaler::restore", "cudaStreamSynchronize");
    policy_ = policy;
  }

  const Policy& policy() const noexcept { return policy_; }
  const scaler_options& options() const noexcept { return options_; }
  cudaStream_t stream() const noexcept { return stream_; }
  Agreement& agreement() noexcept { return agreement_; }

 private:
  enum class phase : unsigned char { ready, checked, stepped };

  float* found_inf_array() const noexcept { return reinterpret_cast<float*>(memory_ + 1); }

  std::size_t record_index(const char* what, std::size_t optimizer) const {
    if (optimizer >= records_.size()) {
      throw invalid_argument(std::string("device_loss_scaler::") + what + ": optimizer index " +
                             std::to_string(optimizer) + ", this scaler has " + std::to_string(records_.size()) +
                             " (the constructor's `optimizers`)");
    }
    return optimizer;
  }

  float* begin_check(const char* what, std::size_t optimizer) {
    const std::size_t i = record_index(what, optimizer);
    if (records_[i] == phase::checked) {
      throw scaler_usage_error(std::string(what) + ": an inf check has already been recorded for optimizer " +
                               std::to_string(optimizer) + " in this iteration; update() starts the next one");
    }
    if (records_[i] == phase::stepped) {
      throw scaler_usage_error(std::string(what) + " for optimizer " + std::to_string(optimizer) +
                               " after its step() in this iteration");
    }
    records_[i] = phase::checked;
    return found_inf_array() + i;
  }

  void finish_check(float* flag) { agreement_.reduce_on_device(flag, 1); }

  void require_between_iterations(const char* what) const {
    for (const phase p : records_) {
      if (p != phase::ready) {
        throw scaler_usage_error(
            std::string(what) + " in the middle of an iteration; call it before the first unscale() or after update()");
      }
    }
  }

  void require_in_bounds(double scale, const char* what) const {
    if (!mixprec::detail::within_bounds(scale, options_)) {
      throw invalid_argument(std::string("device_loss_scaler: ") + what + " " + mixprec::detail::number_text(scale) +
                             " is outside " + mixprec::detail::bounds_text(options_));
    }
  }

  void write_state(const detail::device_scaler_state& s) {
    detail::check(cudaMemcpyAsync(memory_, &s, sizeof s, cudaMemcpyHostToDevice, stream_), "device_loss_scaler",
                  "cudaMemcpyAsync (state to the device)");
    detail::check(cudaStreamSynchronize(stream_), "device_loss_scaler", "cudaStreamSynchronize");
  }

  detail::device_scaler_state read_state() const {
    detail::device_scaler_state s{};
    detail::check(cudaMemcpyAsync(&s, memory_, sizeof s, cudaMemcpyDeviceToHost, stream_), "device_loss_scaler",
                  "cudaMemcpyAsync (state to the host)");
    detail::check(cudaStreamSynchronize(stream_), "device_loss_scaler", "cudaStreamSynchronize");
    return s;
  }

  void release() noexcept {
    if (memory_ != nullptr) static_cast<void>(cudaFree(memory_));
    memory_ = nullptr;
  }

  Policy policy_;
  scaler_options options_;
  detail::device_update_options update_options_{};
  cudaStream_t stream_ = nullptr;
  Agreement agreement_;
  std::vector<phase> records_;
  detail::device_scaler_state* memory_ = nullptr;
};

}  // namespace mixprec::gpu
