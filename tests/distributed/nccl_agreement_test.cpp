// distributed/nccl.hpp: compiled and linked against the CUDA runtime and NCCL in every CUDA
// build.  On a machine with a GPU it also runs: a one-rank communicator (ncclCommInitAll over
// device 0), where any(x) must return x, a scaler loop through it, and reduce_amax.  Without a GPU it checks
// the NCCL library's version against the header and that a missing communicator is an error.
#include <mixprec/distributed/nccl.hpp>
#include <mixprec/scaling/scaling.hpp>

#include <cstdio>
#include <limits>
#include <vector>

#include "expect_checks.hpp"

using namespace mixprec;
using namespace expect_checks;

int main() {
  int version = 0;
  expect(ncclGetVersion(&version) == ncclSuccess && version == NCCL_VERSION_CODE,
         "libnccl's version is the header's (NCCL_VERSION_CODE)");
  std::printf("NCCL %d (header %d)\n", version, NCCL_VERSION_CODE);

  bool threw = false;
  try {
    nccl_agreement().any(false);
  } catch (const agreement_error&) {
    threw = true;
  }
  expect(threw, "nccl_agreement without a communicator throws agreement_error");

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: nccl.hpp compiled and linked; the collective is not run\n");
  } else {
    int device = 0;
    ncclComm_t comm = nullptr;
    expect(cudaSetDevice(0) == cudaSuccess, "cudaSetDevice(0)");
    expect(ncclCommInitAll(&comm, 1, &device) == ncclSuccess, "ncclCommInitAll over device 0");
    {
      loss_scaler<dynamic_scaling, nccl_agreement> scaler{dynamic_scaling{}, {}, nccl_agreement(comm)};
      std::vector<float> g(1000, scaler.scale(1.f));
      expect(scaler.unscale(g.data(), g.size()), "a finite check through NCCL is finite");
      scaler.step([] {});
      scaler.update();
      g.back() = std::numeric_limits<float>::infinity();
      expect(!scaler.unscale(g.data(), g.size()), "an overflow through NCCL is found");
      expect(!scaler.step([] {}), "the step is skipped");
      scaler.update();
      expect(scaler.get_scale() == 32768.f, "the scale backs off");
      // The fp8 amax reduction: on one rank, the magnitudes themselves (NaN stays NaN).
      float amax[4] = {2.f, -3.f, std::numeric_limits<float>::quiet_NaN(), 0.f};
      nccl_agreement fp8_agreement(comm);
      fp8_agreement.reduce_amax(amax, 4);
      expect(amax[0] == 2.f && amax[1] == 3.f && amax[2] != amax[2] && amax[3] == 0.f,
             "reduce_amax on one rank gives the magnitudes back");
      std::printf("one-rank NCCL communicator on device 0: checked\n");
    }
    ncclCommDestroy(comm);
  }
  std::printf("nccl agreement: %s\n", failures == 0 ? "OK" : "FAILED");
  return failures == 0 ? 0 : 1;
}
