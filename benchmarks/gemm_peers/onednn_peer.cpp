// oneDNN's matmul with bf16 source and weights and a float destination (what mixprec::gemm
// computes for bf16 operands), plain row-major layouts, primitive created outside the timed
// loop.  oneDNN chooses its kernel for the CPU at run time (ONEDNN_VERBOSE=1 names it); its
// threads are OpenMP's.
#include <oneapi/dnnl/dnnl.hpp>
#include <omp.h>

#include <cstdint>
#include <cstring>

#include "peer_support.hpp"

namespace {

// float -> bf16 by rounding to nearest even (the values are finite).
std::vector<std::uint16_t> to_bf16(const std::vector<float>& values) {
  std::vector<std::uint16_t> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, &values[i], 4);
    bits += 0x7FFFu + ((bits >> 16) & 1u);
    out[i] = static_cast<std::uint16_t>(bits >> 16);
  }
  return out;
}

void onednn_bf16_matmul(benchmark::State& state) {
  using tag = dnnl::memory::format_tag;
  using dt = dnnl::memory::data_type;
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto size = static_cast<dnnl::memory::dim>(n);
  std::vector<std::uint16_t> A = to_bf16(gemm_bench::random_matrix(n, 1)), B = to_bf16(gemm_bench::random_matrix(n, 2));
  std::vector<float> C(n * n);
  omp_set_num_threads(static_cast<int>(state.range(1)));
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const dnnl::memory::desc a_desc({size, size}, dt::bf16, tag::ab), b_desc({size, size}, dt::bf16, tag::ab),
      c_desc({size, size}, dt::f32, tag::ab);
  dnnl::memory a_memory(a_desc, engine, A.data()), b_memory(b_desc, engine, B.data()),
      c_memory(c_desc, engine, C.data());
  const dnnl::matmul product(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_desc, b_desc, c_desc), engine));
  for (auto _ : state) {
    product.execute(stream, {{DNNL_ARG_SRC, a_memory}, {DNNL_ARG_WEIGHTS, b_memory}, {DNNL_ARG_DST, c_memory}});
    stream.wait();
    benchmark::DoNotOptimize(C.data());
    benchmark::ClobberMemory();
  }
  gemm_bench::count_flops(state, n);
}

BENCHMARK(onednn_bf16_matmul)->Apply(gemm_bench::sizes_and_threads)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
