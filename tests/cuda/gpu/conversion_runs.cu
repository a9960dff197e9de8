// Device side of the conversion tests: gpu::convert, gpu::convert_pair, gpu::to_float and
// to_float_pair on every input the host side asks for.
#include <mixprec/cuda/convert.cuh>

#include "device_memory.cuh"
#include "format_dispatch.hpp"
#include "gpu_runs.hpp"

using namespace mixprec;

namespace gpu_runs {
namespace {

template <class T>
__global__ void encode_range_kernel(std::uint64_t first, std::size_t count, rounding r, overflow o,
                                    std::uint16_t* out) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += gridDim.x * static_cast<std::size_t>(blockDim.x)) {
    const float x = detail::bit_cast<float>(static_cast<std::uint32_t>(first + i));
    out[i] = gpu::convert<T>(x, r, o).bits();
  }
}

template <class T>
__global__ void encode_list_kernel(const std::uint32_t* in, std::size_t count, rounding r, overflow o, bool pairs,
                                   std::uint16_t* out) {
  const std::size_t step = pairs ? 2 : 1;
  for (std::size_t i = (blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x) * step; i < count;
       i += gridDim.x * static_cast<std::size_t>(blockDim.x) * step) {
    if (pairs) {
      T y0, y1;
      gpu::convert_pair(detail::bit_cast<float>(in[i]), detail::bit_cast<float>(in[i + 1]), y0, y1, r, o);
      out[i] = y0.bits();
      out[i + 1] = y1.bits();
    } else {
      out[i] = gpu::convert<T>(detail::bit_cast<float>(in[i]), r, o).bits();
    }
  }
}

template <class T>
__global__ void decode_kernel(std::uint32_t codes, bool pairs, std::uint32_t* out) {
  using storage = typename T::storage_type;
  for (std::uint32_t c = blockIdx.x * blockDim.x + threadIdx.x; c < codes; c += gridDim.x * blockDim.x) {
    const T v = T::from_bits(static_cast<storage>(c));
    if (pairs) {
      float y0 = 0, y1 = 0;
      const T other = T::from_bits(static_cast<storage>(codes - 1 - c));
      gpu::to_float_pair(v, other, y0, y1);
      out[c] = detail::bit_cast<std::uint32_t>(y0);                        // the low lane, code c
      out[codes + (codes - 1 - c)] = detail::bit_cast<std::uint32_t>(y1);  // the high lane, its partner
    } else {
      out[c] = detail::bit_cast<std::uint32_t>(gpu::to_float(v));
    }
  }
}

}  // namespace

device_info current_device() {
  device_info info;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    static_cast<void>(cudaGetLastError());
    return info;
  }
  cudaDeviceProp properties{};
  check(cudaGetDeviceProperties(&properties, 0), "cudaGetDeviceProperties");
  info.name = properties.name;
  info.capability = properties.major * 10 + properties.minor;
  return info;
}

const char* name(format_id f) {
  const char* result = "";
  with_format(f, [&](auto t) { result = decltype(t)::type::format::name; });
  return result;
}

void encode_range(format_id f, std::uint64_t first, std::size_t count, rounding r, overflow o, std::uint16_t* codes) {
  device_array<std::uint16_t> out(count);
  with_format(f, [&](auto t) {
    encode_range_kernel<typename decltype(t)::type><<<1024, 256>>>(first, count, r, o, out.get());
  });
  check(cudaGetLastError(), "encode_range_kernel");
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  check(cudaMemcpy(codes, out.get(), count * sizeof(std::uint16_t), cudaMemcpyDeviceToHost), "cudaMemcpy");
}

std::vector<std::uint16_t> encode_list(format_id f, const std::vector<std::uint32_t>& inputs, rounding r, overflow o,
                                       bool pairs) {
  device_array<std::uint32_t> in(inputs);
  device_array<std::uint16_t> out(inputs.size());
  with_format(f, [&](auto t) {
    encode_list_kernel<typename decltype(t)::type><<<1024, 256>>>(in.get(), inputs.size(), r, o, pairs, out.get());
  });
  check(cudaGetLastError(), "encode_list_kernel");
  return out.download();
}

std::vector<std::uint32_t> decode_all(format_id f, bool pairs) {
  std::uint32_t codes = 0;
  with_format(f, [&](auto t) { codes = 1u << format_traits<typename decltype(t)::type::format>::total_bits; });
  device_array<std::uint32_t> out(pairs ? 2 * codes : codes);
  with_format(f, [&](auto t) { decode_kernel<typename decltype(t)::type><<<256, 256>>>(codes, pairs, out.get()); });
  check(cudaGetLastError(), "decode_kernel");
  return out.download();
}

}  // namespace gpu_runs
