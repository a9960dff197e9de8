// The NCCL all-reduce on a one-rank communicator (nccl_all_reduce_runs.hpp).
#include <mixprec/distributed/nccl_all_reduce.cuh>
#include <mixprec/distributed/nccl_process_group.cuh>
#include <mixprec/session/session.hpp>

#include <cstring>
#include <memory>
#include <string>

#include "device_memory.cuh"
#include "nccl_all_reduce_runs.hpp"

namespace gpu_runs {

namespace {

// Device 0's one-rank communicator, made once (never destroyed: the process ends with it).
ncclComm_t one_rank_communicator() {
  static const ncclComm_t comm = [] {
    int device = 0;
    check(cudaSetDevice(device), "cudaSetDevice");
    ncclComm_t c = nullptr;
    mixprec::detail::nccl_all_reduce_check(ncclCommInitAll(&c, 1, &device), "gpu test", "ncclCommInitAll");
    return c;
  }();
  return comm;
}

}  // namespace

nccl_reduction nccl_all_reduce(const std::vector<std::vector<float>>& arrays,
                               const mixprec::all_reduce_options& options, int calls) {
  mixprec::nccl_gradient_all_reducer reducer(options, one_rank_communicator());
  nccl_reduction out;
  for (int call = 0; call < calls; ++call) {
    std::vector<std::unique_ptr<device_array<float>>> device;
    std::vector<mixprec::gradient_view> views;
    for (std::size_t a = 0; a < arrays.size(); ++a) {
      device.push_back(std::make_unique<device_array<float>>(arrays[a], a % 4));
      views.emplace_back(device.back()->get(), arrays[a].size());
    }
    out.result = reducer.reduce(views);
    out.arrays.clear();
    for (const auto& d : device) out.arrays.push_back(d->download());
  }
  return out;
}

mixprec::all_reduce_result nccl_process_group_all_reduce(std::vector<std::vector<float>>& arrays,
                                                         const mixprec::all_reduce_options& options) {
  mixprec::nccl_process_group group(one_rank_communicator());
  std::vector<mixprec::gradient_view> views;
  for (auto& a : arrays) views.emplace_back(a.data(), a.size());
  return group.all_reduce(views.data(), views.size(), options);
}

std::size_t nccl_first_difference(const std::vector<std::uint64_t>& fingerprints) {
  mixprec::nccl_process_group group(one_rank_communicator());
  return group.first_difference(fingerprints.data(), fingerprints.size());
}

std::vector<std::uint32_t> nccl_session_weights(bool with_group, int steps) {
  using namespace mixprec;
  constexpr std::size_t n = 300;
  parameter w{matrix(dtype::float32, 1, n), "fc.weight"};
  precision_session amp(parse_recipe("recipe=fp32, reduce_dtype=fp32, weight_check_interval=2"));
  amp.add_parameter(w);
  optim::sgd_options o;
  o.lr = 0.125f;
  o.momentum = 0.5f;
  amp.use_optimizer(optim::sgd(o));
  if (with_group) amp.use_process_group(std::make_shared<nccl_process_group>(one_rank_communicator()));
  for (int t = 0; t < steps; ++t) {
    amp.train_step([] { return 1.0f; },
                   [&](const backward_context& c) {
                     matrix g(dtype::float32, 1, n);
                     for (std::size_t i = 0; i < n; ++i) {
                       const float target = std::ldexp(1.0f + static_cast<float>((i * 37 + t * 11) % 64) / 64.0f,
                                                       static_cast<int>((i + t) % 7) - 3);
                       g.data<float>()[i] = (w.value().data<float>()[i] - target) * c.loss_gradient;
                     }
                     amp.accumulate_gradient(w, g);
                   },
                   1);
  }
  std::vector<std::uint32_t> bits(n);
  std::memcpy(bits.data(), w.value().raw_data(), n * sizeof(float));
  return bits;
}

}  // namespace gpu_runs
