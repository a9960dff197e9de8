// Device side of the kernel tests: gpu::convert_n (subnormal policies included),
// gpu::convert_stochastic_n, gpu::quantize_n / dequantize_n and
// gpu::unscale_and_check on host data.
#include <mixprec/cuda/convert_n.cuh>
#include <mixprec/cuda/quantize.cuh>
#include <mixprec/cuda/unscale.cuh>

#include <memory>
#include <stdexcept>

#include "device_memory.cuh"
#include "gpu_runs.hpp"

using namespace mixprec;

namespace gpu_runs {

template <class From, class To>
std::vector<To> convert_n(const std::vector<From>& in, std::size_t in_offset, std::size_t out_offset, rounding r,
                          overflow o) {
  device_array<From> d_in(in, in_offset);
  device_array<To> d_out(in.size(), out_offset);
  gpu::convert_n(d_in.get(), in.size(), d_out.get(), r, o);
  return d_out.download();
}

template <class From, class To>
std::vector<To> convert_n(const std::vector<From>& in, std::size_t in_offset, std::size_t out_offset, rounding r,
                          overflow o, subnormals s) {
  device_array<From> d_in(in, in_offset);
  device_array<To> d_out(in.size(), out_offset);
  gpu::convert_n(d_in.get(), in.size(), d_out.get(), r, o, s);
  return d_out.download();
}

template <class To>
std::vector<To> convert_stochastic_n(const std::vector<float>& in, std::size_t in_offset, std::size_t out_offset,
                                     std::uint64_t seed, overflow o, stochastic_rule rule, subnormals s) {
  device_array<float> d_in(in, in_offset);
  device_array<To> d_out(in.size(), out_offset);
  gpu::convert_stochastic_n(d_in.get(), in.size(), d_out.get(), seed, o, rule, s);
  return d_out.download();
}

template <class To>
float quantize_n(const std::vector<float>& in, std::size_t offset, std::vector<To>& q, float scale,
                 bool scale_on_device, rounding r, overflow o) {
  device_array<float> d_in(in, offset), amax(1), d_scale(std::vector<float>{scale});
  device_array<To> d_q(in.size(), offset);
  if (scale_on_device) {
    gpu::quantize_n(d_in.get(), in.size(), d_q.get(), static_cast<const float*>(d_scale.get()), amax.get(), r, o);
  } else {
    gpu::quantize_n(d_in.get(), in.size(), d_q.get(), scale, amax.get(), r, o);
  }
  q = d_q.download();
  return amax.download()[0];
}

template <class From>
std::vector<float> dequantize_n(const std::vector<From>& q, std::size_t offset, float scale, bool scale_on_device) {
  device_array<From> d_q(q, offset);
  device_array<float> out(q.size(), offset), d_scale(std::vector<float>{scale});
  if (scale_on_device) {
    gpu::dequantize_n(d_q.get(), q.size(), out.get(), static_cast<const float*>(d_scale.get()));
  } else {
    gpu::dequantize_n(d_q.get(), q.size(), out.get(), scale);
  }
  return out.download();
}

float unscale_and_check(std::vector<gradient_array>& arrays, float inv_scale, rounding r) {
  std::vector<std::unique_ptr<device_array<unsigned char>>> buffers;
  std::vector<gradient_view> views;
  for (const gradient_array& a : arrays) {
    const std::size_t element = a.type == dtype::float32 ? 4 : 2;
    buffers.push_back(std::make_unique<device_array<unsigned char>>(a.bytes, a.offset * element));
    void* data = buffers.back()->get();
    switch (a.type) {
      case dtype::float32:
        views.emplace_back(static_cast<float*>(data), a.size);
        break;
      case dtype::bfloat16:
        views.emplace_back(static_cast<bfloat16*>(data), a.size);
        break;
      case dtype::float16:
        views.emplace_back(static_cast<float16*>(data), a.size);
        break;
      default:
        throw std::logic_error("gradient arrays are float32, bfloat16 or float16");
    }
  }
  device_array<float> d_inv(std::vector<float>{inv_scale}), found(std::vector<float>{0.0f});
  unscale_options options;
  options.gradient_rounding = r;
  gpu::unscale_and_check(views, d_inv.get(), found.get(), nullptr, options);
  for (std::size_t i = 0; i < arrays.size(); ++i) arrays[i].bytes = buffers[i]->download();
  return found.download()[0];
}

#define GPU_RUNS_CONVERT(From, To)                                                                                     \
  template std::vector<To> convert_n<From, To>(const std::vector<From>&, std::size_t, std::size_t, rounding,           \
                                               overflow);                                                              \
  template std::vector<To> convert_n<From, To>(const std::vector<From>&, std::size_t, std::size_t, rounding, overflow, \
                                               subnormals);
#define GPU_RUNS_FORMAT(T)                                                                                            \
  GPU_RUNS_CONVERT(float, T)                                                                                          \
  GPU_RUNS_CONVERT(T, float)                                                                                          \
  GPU_RUNS_CONVERT(T, float16)                                                                                        \
  template float quantize_n<T>(const std::vector<float>&, std::size_t, std::vector<T>&, float, bool, rounding,        \
                               overflow);                                                                             \
  template std::vector<float> dequantize_n<T>(const std::vector<T>&, std::size_t, float, bool);                       \
  template std::vector<T> convert_stochastic_n<T>(const std::vector<float>&, std::size_t, std::size_t, std::uint64_t, \
                                                  overflow, stochastic_rule, subnormals);
GPU_RUNS_FORMAT(float16)
GPU_RUNS_FORMAT(bfloat16)
GPU_RUNS_FORMAT(float8_e4m3fn)
GPU_RUNS_FORMAT(float8_e5m2)
GPU_RUNS_FORMAT(float8_e4m3fnuz)
GPU_RUNS_FORMAT(float8_e5m2fnuz)
GPU_RUNS_FORMAT(float6_e3m2fn)
GPU_RUNS_FORMAT(float6_e2m3fn)
GPU_RUNS_FORMAT(float4_e2m1fn)
GPU_RUNS_FORMAT(float8_e8m0fnu)
GPU_RUNS_FORMAT(float8_ue4m3)
GPU_RUNS_FORMAT(float8_e4m3)
GPU_RUNS_FORMAT(float8_e3m4)
GPU_RUNS_FORMAT(float8_e4m3b11fnuz)
GPU_RUNS_FORMAT(tfloat32)
GPU_RUNS_CONVERT(float, float)

}  // namespace gpu_runs
