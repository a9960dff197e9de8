// The element-wise kernel behind convert_n, quantize_n and dequantize_n on the GPU: a
// grid-stride loop over the 16-byte aligned middle of the arrays (detail/launch_geometry.hpp) in
// warp-contiguous chunks, each converted by an operation object, with an optional NaN-aware
// abs-max reduction of the inputs.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../../detail/philox.hpp"
#include "../convert.cuh"
#include "../runtime.cuh"
#include "instruction_fixups.hpp"
#include "launch_geometry.hpp"

namespace mixprec::gpu::detail {

// a × b in float, rounded to nearest, subnormals kept (no .ftz whatever the compiler flags).
MIXPREC_HOST_DEVICE MIXPREC_FORCE_INLINE float multiply_nearest(float a, float b) noexcept {
  float product = 0;
  NV_IF_ELSE_TARGET(NV_IS_DEVICE, (asm("mul.rn.f32 %0, %1, %2;" : "=f"(product) : "f"(a), "f"(b));), (product = a * b;))
  return product;
}

// multiply_nearest with the host's NaN results (fix_product_nan); a product of finite operands is
// never NaN, so the fix-up changes nothing there.
MIXPREC_HOST_DEVICE MIXPREC_FORCE_INLINE float multiply_like_host(float a, float b) noexcept {
  return bit_cast<float>(fix_product_nan(bit_cast<std::uint32_t>(a), bit_cast<std::uint32_t>(b),
                                         bit_cast<std::uint32_t>(multiply_nearest(a, b))));
}

// |x| as bits, every NaN as float's canonical quiet NaN: the maximum of these is quantize_n's
// amax (the largest magnitude, or NaN if any input was NaN), and compares as an unsigned integer.
MIXPREC_HOST_DEVICE MIXPREC_FORCE_INLINE std::uint32_t magnitude_bits(float x) noexcept {
  const std::uint32_t m = bit_cast<std::uint32_t>(x) & float_magnitude_bits;
  return m > float_infinity_bits ? 0x7FC0'0000u : m;
}

// A scale given as a value or as a pointer to device memory (read once per thread, so that a
// scale computed on the device by an earlier kernel needs no host round trip).
struct scale_source {
  const float* device = nullptr;
  float value = 1.0f;
  __device__ float read() const { return device != nullptr ? *device : value; }
};

template <class T>
struct is_float : std::is_same<T, float> {};

// The operations.  Each has `bind()` (run once per thread, e.g. to read the scale), and on the
// bound object `one(x)` and `pair(x0, x1, y0, y1)`.
template <class From, class To>
struct convert_op {
  static constexpr bool has_finite_path = false;  // (quantize_op's, below)
  rounding r;
  overflow o;
  // subnormals::flush: every element through the scalar conversion, which is __host__
  // __device__ (convert.hpp): no instruction flushes to the smallest normal as CPFloat's rule does.
  subnormals s = subnormals::keep;
  __device__ convert_op bind() const { return *this; }
  __device__ To one(From x) const {
    if (s == subnormals::flush) return mixprec::convert<To>(x, r, o, s);
    if constexpr (is_float<From>::value) {
      return gpu::convert<To>(x, r, o);
    } else if constexpr (is_float<To>::value) {
      return gpu::to_float(x);
    } else {
      return generic_convert<To>(x, r, o);  // minifloat -> minifloat: the generic conversion
    }
  }
  __device__ void pair(From x0, From x1, To& y0, To& y1) const {
    if (s == subnormals::flush) {
      y0 = one(x0);
      y1 = one(x1);
    } else if constexpr (is_float<From>::value) {
      gpu::convert_pair(x0, x1, y0, y1, r, o);
    } else if constexpr (is_float<To>::value) {
      gpu::to_float_pair(x0, x1, y0, y1);
    } else {
      y0 = one(x0);
      y1 = one(x1);
    }
  }
};

// Stochastic rounding of floats, element i with the word philox_bits(seed, i) as the host's
// convert_stochastic_n takes it: an indexed operation (one_at), whose result depends only on
// (seed, i, x) whatever the launch geometry.
template <class To>
struct stochastic_convert_op {
  static constexpr bool has_finite_path = false;
  static constexpr bool indexed = true;
  std::uint64_t seed;
  overflow o;
  stochastic_rule rule;
  subnormals s;
  __device__ stochastic_convert_op bind() const { return *this; }
  __device__ To one_at(float x, std::uint64_t index) const {
    return mixprec::convert_stochastic<To>(x, mixprec::detail::philox_bits(seed, index), o, rule, s);
  }
};

// Whether an operation takes each element's index (one_at) instead of one and pair.
template <class Op, class = void>
struct indexed_op : std::false_type {};
template <class Op>
struct indexed_op<Op, std::void_t<decltype(Op::indexed)>> : std::integral_constant<bool, Op::indexed> {};

// The scaled operations read their scale once per thread (bind()).
template <class Derived>
struct scaled_op {
  scale_source scale;
  float bound_scale = 1.0f;
  __device__ Derived bind() const {
    Derived bound = static_cast<const Derived&>(*this);
    bound.bound_scale = scale.read();
    return bound;
  }
};

// quantize_n: To(x × scale), as the host's quantize_n (bulk/quantize.hpp).
template <class To>
struct quantize_op : scaled_op<quantize_op<To>> {
  rounding r;
  overflow o;
  __device__ To one(float x) const { return gpu::convert<To>(multiply_like_host(x, this->bound_scale), r, o); }
  __device__ void pair(float x0, float x1, To& y0, To& y1) const {
    gpu::convert_pair(multiply_like_host(x0, this->bound_scale), multiply_like_host(x1, this->bound_scale), y0, y1, r,
                      o);
  }
  // The kernel's short path for a chunk of finite inputs with a finite scale: the products are
  // never NaN there, so their fix-up is skipped (the same bits as pair()).
  static constexpr bool has_finite_path = true;
  __device__ bool finite_path() const {
    return (bit_cast<std::uint32_t>(this->bound_scale) & float_infinity_bits) != float_infinity_bits;
  }
  __device__ void pair_finite(float x0, float x1, To& y0, To& y1) const {
    gpu::convert_pair(multiply_nearest(x0, this->bound_scale), multiply_nearest(x1, this->bound_scale), y0, y1, r, o);
  }
};

// dequantize_n: float(q) × scale.
template <class From>
struct dequantize_op : scaled_op<dequantize_op<From>> {
  static constexpr bool has_finite_path = false;
  __device__ float one(From q) const { return multiply_like_host(gpu::to_float(q), this->bound_scale); }
  __device__ void pair(From q0, From q1, float& y0, float& y1) const {
    gpu::to_float_pair(q0, q1, y0, y1);
    y0 = multiply_like_host(y0, this->bound_scale);
    y1 = multiply_like_host(y1, this->bound_scale);
  }
};

// The block's largest magnitude bits into *amax_bits (atomicMax on the float's bits, which order
// as unsigned integers for non-negative floats, the canonical NaN above infinity).
__device__ inline void reduce_amax(std::uint32_t largest, unsigned* amax_bits) {
  __shared__ unsigned warp_largest[elementwise_block_threads / 32];
  NV_IF_ELSE_TARGET(NV_PROVIDES_SM_80, (largest = __reduce_max_sync(0xFFFF'FFFFu, largest);),
                    (for (int offset = 16; offset > 0; offset /= 2) {
                      const std::uint32_t other = __shfl_down_sync(0xFFFF'FFFFu, largest, offset);
                      largest = other > largest ? other : largest;
                    } largest = __shfl_sync(0xFFFF'FFFFu, largest, 0);))
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) warp_largest[warp] = largest;
  __syncthreads();
  if (threadIdx.x == 0) {
    std::uint32_t block_largest = 0;
    for (unsigned w = 0; w < blockDim.x / 32; ++w)
      block_largest = warp_largest[w] > block_largest ? warp_largest[w] : block_largest;
    if (block_largest != 0) atomicMax(amax_bits, block_largest);
  }
}

// Unsigned vectors of 2, 4, 8 and 16 bytes: one thread's share of a chunk (below) on either side.
template <unsigned Bytes>
struct raw_vector;
template <>
struct raw_vector<2> {
  using type = unsigned short;
};
template <>
struct raw_vector<4> {
  using type = unsigned;
};
template <>
struct raw_vector<8> {
  using type = ::uint2;
};
template <>
struct raw_vector<16> {
  using type = ::uint4;
};

// Chunks each thread loads before it converts any (bytes in flight hide the memory's latency).
constexpr unsigned chunks_in_flight = 4;

template <class From, class To, class Op, bool TrackAmax>
__global__ void __launch_bounds__(elementwise_block_threads)
    elementwise_kernel(const From* __restrict__ in, To* __restrict__ out, elementwise_plan plan, Op op,
                       unsigned* amax_bits) {
  // The aligned middle goes in chunks of 16 bytes of the wider type, consecutive threads on
  // consecutive chunks, so that every load and store of a warp is one contiguous span on both
  // sides.  (A thread that took 16 bytes of the narrower type wrote its 32 or 64 bytes of the
  // wider one as 16-byte pieces 32 or 64 bytes apart across the warp: e4m3 -> float ran at 0.50
  // of a copy's bandwidth on an H100, docs/performance.md.)
  constexpr unsigned chunk = vector_bytes / (sizeof(From) > sizeof(To) ? sizeof(From) : sizeof(To));
  using in_vector = typename raw_vector<chunk * sizeof(From)>::type;
  using out_vector = typename raw_vector<chunk * sizeof(To)>::type;
  static_assert(chunk % 2 == 0, "a chunk is whole pairs");
  static_assert(!(indexed_op<Op>::value && TrackAmax), "no abs-max beside an indexed operation (none needs one)");

  const Op bound = op.bind();
  const std::uint64_t first = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x;
  const std::uint64_t stride = gridDim.x * static_cast<std::uint64_t>(blockDim.x);
  std::uint32_t largest = 0;

  const std::uint64_t singles = plan.single_count();
  for (std::uint64_t i = first; i < singles; i += stride) {
    const std::uint64_t index = plan.single_index(i);
    const From x = in[index];
    if constexpr (TrackAmax) largest = max(largest, magnitude_bits(x));
    if constexpr (indexed_op<Op>::value) {
      out[index] = bound.one_at(x, index);
    } else {
      out[index] = bound.one(x);
    }
  }

  // The plan's groups (16 bytes of the narrower type) are whole chunks; both sides are 16-byte
  // aligned at the head, so every chunk is aligned to its vector on both sides.
  const std::uint64_t chunks = plan.groups * (plan.group / chunk);
  const auto* source = reinterpret_cast<const in_vector*>(in + plan.head);
  auto* target = reinterpret_cast<out_vector*>(out + plan.head);
  for (std::uint64_t c = first; c < chunks; c += chunks_in_flight * stride) {
    in_vector raw_in[chunks_in_flight] = {};
#pragma unroll
    for (unsigned u = 0; u < chunks_in_flight; ++u) {
      if (c + u * stride < chunks) raw_in[u] = source[c + u * stride];
    }
#pragma unroll
    for (unsigned u = 0; u < chunks_in_flight; ++u) {
      if (c + u * stride >= chunks) break;
      From x[chunk];
      std::memcpy(x, &raw_in[u], sizeof x);
      To y[chunk];
      if constexpr (indexed_op<Op>::value) {  // chunk c's elements start at head + c · chunk
        const std::uint64_t base = plan.head + (c + u * stride) * chunk;
#pragma unroll
        for (unsigned e = 0; e < chunk; ++e) y[e] = bound.one_at(x[e], base + e);
      } else {
        bool done = false;
        if constexpr (Op::has_finite_path) {
          // quantize: a chunk of finite inputs skips the NaN fix-ups of the product and of the
          // abs-max (compute-bound otherwise: ncu, docs/performance.md).
          bool finite = true;
          std::uint32_t chunk_largest = 0;
#pragma unroll
          for (unsigned e = 0; e < chunk; ++e) {
            const std::uint32_t m = bit_cast<std::uint32_t>(x[e]) & float_magnitude_bits;
            finite &= m < float_infinity_bits;
            chunk_largest = max(chunk_largest, m);
          }
          if (finite && bound.finite_path()) {
#pragma unroll
            for (unsigned e = 0; e < chunk; e += 2) bound.pair_finite(x[e], x[e + 1], y[e], y[e + 1]);
            if constexpr (TrackAmax) largest = max(largest, chunk_largest);
            done = true;
          }
        }
        if (!done) {
#pragma unroll
          for (unsigned e = 0; e < chunk; e += 2) bound.pair(x[e], x[e + 1], y[e], y[e + 1]);
          if constexpr (TrackAmax) {
#pragma unroll
            for (unsigned e = 0; e < chunk; ++e) largest = max(largest, magnitude_bits(x[e]));
          }
        }
      }
      out_vector raw_out;
      std::memcpy(&raw_out, y, sizeof y);
      target[c + u * stride] = raw_out;
    }
  }

  if constexpr (TrackAmax) reduce_amax(largest, amax_bits);
}

// Validates the arrays (null pointers, overlap: invalid_argument, as the host's convert_n), plans
// the split and launches on the stream.  amax_bits: nullptr, or device memory that the kernel
// max-reduces into.
template <bool TrackAmax, class From, class To, class Op>
void launch_elementwise(const char* function, const From* in, std::size_t n, To* out, Op op, unsigned* amax_bits,
                        cudaStream_t stream) {
  if (n == 0) return;
  const elementwise_plan plan = plan_elementwise(reinterpret_cast<std::uintptr_t>(in), sizeof(From),
                                                 reinterpret_cast<std::uintptr_t>(out), sizeof(To), n);
  const launch_shape shape = grid_for(plan, current_device(function).multiprocessors);
  elementwise_kernel<From, To, Op, TrackAmax><<<shape.blocks, shape.threads, 0, stream>>>(in, out, plan, op, amax_bits);
  check_launch(function);
}

}  // namespace mixprec::gpu::detail
