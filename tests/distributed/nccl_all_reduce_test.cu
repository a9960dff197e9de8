// distributed/nccl_all_reduce.cuh and nccl_process_group.cuh: compiled by nvcc and linked against
// the CUDA runtime and NCCL in every CUDA build with NCCL.  Without a GPU it checks what needs
// none: a missing communicator is an agreement_error before any CUDA call.  On a machine with a
// GPU it also runs a one-rank communicator over device 0: bad arguments are invalid_argument, a
// small reduction equals emulate_all_reduce bit for bit, and first_difference of one rank finds
// none.  (tests/cuda/gpu/nccl_all_reduce_gpu_test.cpp compares every dtype and layout.)
#include <mixprec/distributed/nccl_all_reduce.cuh>
#include <mixprec/distributed/nccl_process_group.cuh>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "expect_checks.hpp"

using namespace mixprec;
using namespace expect_checks;

namespace {

template <class Exception, class F>
bool throws(F&& f, const char* needle = "") {
  try {
    f();
  } catch (const Exception& e) {
    if (std::string(e.what()).find(needle) != std::string::npos) return true;
    std::printf("  message without \"%s\": %s\n", needle, e.what());
    return false;
  } catch (const std::exception& e) {
    std::printf("  other exception: %s\n", e.what());
  }
  return false;
}

void one_rank_checks(ncclComm_t comm) {
  std::vector<float> host(3000);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i % 97) * 0.37f - 11.0f;
  float* device = nullptr;
  expect(cudaMalloc(&device, host.size() * sizeof(float)) == cudaSuccess, "cudaMalloc");
  expect(cudaMemcpy(device, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess,
         "cudaMemcpy");

  all_reduce_options bad;
  bad.communication = dtype::float8_e8m0fnu;
  expect(throws<invalid_argument>(
             [&] {
               nccl_gradient_all_reducer(bad, comm).reduce({{device, 10}});
             },
             "float8_e8m0fnu"),
         "an e8m0 communication dtype is invalid_argument naming it");
  bad = {};
  bad.bucket_bytes = 2;
  expect(throws<invalid_argument>(
             [&] {
               nccl_gradient_all_reducer(bad, comm).reduce({{device, 10}});
             },
             "2"),
         "a bucket below one float per rank is invalid_argument");
  expect(throws<invalid_argument>(
             [&] {
               nccl_gradient_all_reducer({}, comm).reduce({{static_cast<float*>(nullptr), 5}});
             },
             "null pointer"),
         "a null array with elements is invalid_argument");
  expect(throws<invalid_argument>(
             [&] {
               nccl_gradient_all_reducer({}, comm).reduce({{reinterpret_cast<bfloat16*>(device), 4}});
             },
             "bfloat16"),
         "a bfloat16 gradient array is invalid_argument");

  for (dtype d : {dtype::float32, dtype::bfloat16, dtype::float8_e4m3fn}) {
    all_reduce_options options;
    options.communication = d;
    options.bucket_bytes = 1000 * sizeof(float);
    expect(cudaMemcpy(device, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess,
           "cudaMemcpy");
    nccl_gradient_all_reducer reducer(options, comm);
    const all_reduce_result r = reducer.reduce({{device, 1234}, {device + 1234, host.size() - 1234}});
    std::vector<float> got(host.size()), want(host.size());
    expect(cudaMemcpy(got.data(), device, got.size() * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess,
           "cudaMemcpy back");
    const float* ranks[1] = {host.data()};
    const bool found_inf = emulate_all_reduce(ranks, 1, host.size(), options, want.data());
    expect(r.found_inf == found_inf && !found_inf, "found_inf as the emulation's (none)");
    expect(r.buckets == 3, "three buckets of 1000 floats");
    expect(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0,
           "one rank: the device all-reduce equals emulate_all_reduce bit for bit");
  }
  static_cast<void>(cudaFree(device));

  nccl_process_group group(comm);
  expect(group.rank() == 0 && group.size() == 1, "a one-rank group is rank 0 of 1");
  const std::uint64_t fingerprints[3] = {1, 2, 3};
  expect(group.first_difference(fingerprints, 3) == 3, "one rank: every fingerprint agrees");
  std::vector<float> g(host.begin(), host.begin() + 100), want(100);
  const float* ranks[1] = {g.data()};
  all_reduce_options options;
  emulate_all_reduce(ranks, 1, g.size(), options, want.data());
  const gradient_view view(g.data(), g.size());
  group.all_reduce(&view, 1, options);
  expect(std::memcmp(g.data(), want.data(), g.size() * sizeof(float)) == 0,
         "nccl_process_group stages host gradients and gives the emulation's bits");
}

}  // namespace

int main() {
  expect(throws<agreement_error>([] { nccl_gradient_all_reducer().reduce({}); }, "no NCCL communicator"),
         "a reducer without a communicator throws agreement_error");
  expect(throws<agreement_error>([] { nccl_process_group group(nullptr); }, "no NCCL communicator"),
         "a process group without a communicator throws agreement_error");
  expect(
      throws<agreement_error>([] { all_reduce_gradients({}, all_reduce_options{}, nullptr); }, "no NCCL communicator"),
      "all_reduce_gradients without a communicator throws agreement_error");

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: nccl_all_reduce.cuh compiled and linked; the collectives are not run\n");
  } else {
    int device = 0;
    ncclComm_t comm = nullptr;
    expect(cudaSetDevice(0) == cudaSuccess, "cudaSetDevice(0)");
    expect(ncclCommInitAll(&comm, 1, &device) == ncclSuccess, "ncclCommInitAll over device 0");
    one_rank_checks(comm);
    std::printf("one-rank NCCL communicator on device 0: checked\n");
    ncclCommDestroy(comm);
  }
  std::printf("nccl all-reduce: %s\n", failures == 0 ? "OK" : "FAILED");
  return failures == 0 ? 0 : 1;
}
