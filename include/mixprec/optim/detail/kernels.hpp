// The element loops of mixprec::optim: one SGD step and one AdamW step over a float32 array,
// operation by operation as PyTorch 1.13's single-tensor optimizers run them on the CPU
// (torch/optim/sgd.py _single_tensor_sgd, torch/optim/adamw.py _single_tensor_adamw).
//
// What each PyTorch call computes there (ATen's AVX2/AVX-512 kernels, what x86-64 CPUs since
// 2013 run; checked against PyTorch itself by tests/optim/optim_parity_test.cpp):
//   t.mul_(s)                   t * float(s)                        one rounding
//   t.add_(u, alpha=a)          fma(float(a), u, t)                 vec::fmadd (ufunc/add.h)
//   t.addcmul_(u, v, value=c)   fma(float(c) * u, v, t)             the Vectorized * + contracts
//   t.addcdiv_(u, v, value=c)   t + (float(c) * u) / v              no fusion through a division
//   t / s, t + s, t.sqrt()      one rounding each, s rounded to float first
// (ATEN_CPU_CAPABILITY=default, the kernels without FMA, rounds add and addcmul twice: those
// differ from these by an ulp now and then, and are not what mixprec reproduces.)
//
// Each loop is written so that no compiler may fuse what PyTorch rounds twice: every product
// is either an fma operand or feeds a division, except AdamW's weight decay (w * (1 - lr wd))
// whose product PyTorch stores before the addcdiv adds to it; that multiplication is a loop of
// its own.  Work goes in blocks of 64 elements whose loops have a constant trip count, which
// GCC 12 vectorises at -O2 (its very-cheap cost model takes no loop that needs an epilogue); on
// x86-64 a second copy of the loops is compiled for AVX2 + FMA and picked at run time (std::fma
// is the instruction there and a libm call on a baseline build: the same bits either way).
#pragma once

#include <cmath>
#include <cstddef>

#include "../../bulk/simd_path.hpp"
#include "../../bulk/x86/target.hpp"
#include "../../config.hpp"

#if MIXPREC_X86_SIMD
#include <immintrin.h>
#endif

namespace mixprec::optim::detail {

constexpr std::size_t kernel_block = 64;

// The scalars of one SGD step, each rounded to float as PyTorch's kernels round it.
struct sgd_scalars {
  float weight_decay;  // alpha of d_p.add(param, alpha=weight_decay)
  float momentum;      // buf.mul_(momentum); alpha of d_p.add(buf, alpha=momentum) (nesterov)
  float keep;          // alpha of buf.add_(d_p, alpha=1 - dampening): 1 - dampening in double, then float
  float neg_lr;        // alpha of param.add_(d_p, alpha=-lr)
};

// Which of _single_tensor_sgd's branches a step takes.
struct sgd_branches {
  bool decay, momentum, first, nesterov;  // first: the momentum buffer is created (buf = d_p)
};

// The scalars of one AdamW step.
struct adamw_scalars {
  float decay;                   // param.mul_(1 - lr * weight_decay)
  float beta1, one_minus_beta1;  // exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
  float beta2, one_minus_beta2;  // exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
  float bias_correction2_sqrt;   // exp_avg_sq.sqrt() / bias_correction2_sqrt
  float eps;                     // .add_(eps)
  float neg_step_size;           // param.addcdiv_(exp_avg, denom, value=-step_size)
};

template <bool Decay, bool Momentum, bool First, bool Nesterov>
MIXPREC_FORCE_INLINE void sgd_block(const sgd_scalars& s, float* __restrict w, const float* __restrict g,
                                    float* __restrict buf, std::size_t len) noexcept {
  for (std::size_t j = 0; j < len; ++j) {
    float d = g[j];
    if constexpr (Decay) d = std::fma(s.weight_decay, w[j], d);
    if constexpr (Momentum) {
      float b = d;
      if constexpr (!First) b = std::fma(s.keep, d, buf[j] * s.momentum);
      buf[j] = b;
      d = Nesterov ? std::fma(s.momentum, b, d) : b;
    }
    w[j] = std::fma(s.neg_lr, d, w[j]);
  }
}

template <bool Decay, bool Momentum, bool First, bool Nesterov>
MIXPREC_FORCE_INLINE void sgd_loop(const sgd_scalars& s, float* w, const float* g, float* buf, std::size_t n) noexcept {
  std::size_t i = 0;
  for (; i + kernel_block <= n; i += kernel_block) {
    sgd_block<Decay, Momentum, First, Nesterov>(s, w + i, g + i, Momentum ? buf + i : buf, kernel_block);
  }
  sgd_block<Decay, Momentum, First, Nesterov>(s, w + i, g + i, Momentum ? buf + i : buf, n - i);
}

// One of the ten loops, chosen once per call (a branch inside the loop would stop
// vectorisation).  No lambdas here: a lambda's body would be compiled for the baseline target
// even when called from the AVX2 copy.
template <bool Decay>
MIXPREC_FORCE_INLINE void sgd_dispatch(const sgd_scalars& s, sgd_branches b, float* w, const float* g, float* buf,
                                       std::size_t n) noexcept {
  if (!b.momentum) {
    sgd_loop<Decay, false, false, false>(s, w, g, buf, n);
  } else if (b.first) {
    if (b.nesterov) {
      sgd_loop<Decay, true, true, true>(s, w, g, buf, n);
    } else {
      sgd_loop<Decay, true, true, false>(s, w, g, buf, n);
    }
  } else if (b.nesterov) {
    sgd_loop<Decay, true, false, true>(s, w, g, buf, n);
  } else {
    sgd_loop<Decay, true, false, false>(s, w, g, buf, n);
  }
}

MIXPREC_FORCE_INLINE void sgd_dispatch(const sgd_scalars& s, sgd_branches b, float* w, const float* g, float* buf,
                                       std::size_t n) noexcept {
  if (b.decay) {
    sgd_dispatch<true>(s, b, w, g, buf, n);
  } else {
    sgd_dispatch<false>(s, b, w, g, buf, n);
  }
}

struct baseline_sqrt {
  static MIXPREC_FORCE_INLINE void run(const float* in, float* out, std::size_t len) noexcept {
    for (std::size_t j = 0; j < len; ++j) out[j] = std::sqrt(in[j]);
  }
};

// One AdamW block.  Sqrt is the target's square root loop: std::sqrt keeps a branch (errno for
// negative inputs, unless -fno-math-errno) that no compiler vectorises.
template <class Sqrt>
MIXPREC_FORCE_INLINE void adamw_block(const adamw_scalars& s, float* __restrict w, const float* __restrict g,
                                      float* __restrict m, float* __restrict v, std::size_t len) noexcept {
  // param.mul_(1 - lr * weight_decay): rounded and stored before anything adds to it.
  if (s.decay != 1.0f) {
    for (std::size_t j = 0; j < len; ++j) w[j] = w[j] * s.decay;
  }
  for (std::size_t j = 0; j < len; ++j) {
    const float gj = g[j];
    m[j] = std::fma(s.one_minus_beta1, gj, m[j] * s.beta1);
    v[j] = std::fma(s.one_minus_beta2 * gj, gj, v[j] * s.beta2);
  }
  float root[kernel_block];
  Sqrt::run(v, root, len);
  for (std::size_t j = 0; j < len; ++j) {
    const float denom = root[j] / s.bias_correction2_sqrt + s.eps;
    w[j] = w[j] + (s.neg_step_size * m[j]) / denom;
  }
}

template <class Sqrt>
MIXPREC_FORCE_INLINE void adamw_loop(const adamw_scalars& s, float* w, const float* g, float* m, float* v,
                                     std::size_t n) noexcept {
  std::size_t i = 0;
  for (; i + kernel_block <= n; i += kernel_block) adamw_block<Sqrt>(s, w + i, g + i, m + i, v + i, kernel_block);
  adamw_block<Sqrt>(s, w + i, g + i, m + i, v + i, n - i);
}

#if MIXPREC_X86_SIMD
MIXPREC_TARGET_BEGIN("avx2,fma")
// Called once per block, not inlined: the block that calls it is compiled for the baseline
// until it is inlined into adamw_avx2.
struct avx2_sqrt {
  static void run(const float* in, float* out, std::size_t len) noexcept {
    if (len != kernel_block) return baseline_sqrt::run(in, out, len);  // the last, partial block
    for (std::size_t j = 0; j < kernel_block; j += 8)
      _mm256_storeu_ps(out + j, _mm256_sqrt_ps(_mm256_loadu_ps(in + j)));
  }
};
inline void sgd_avx2(const sgd_scalars& s, sgd_branches b, float* w, const float* g, float* buf,
                     std::size_t n) noexcept {
  sgd_dispatch(s, b, w, g, buf, n);
}
inline void adamw_avx2(const adamw_scalars& s, float* w, const float* g, float* m, float* v, std::size_t n) noexcept {
  adamw_loop<avx2_sqrt>(s, w, g, m, v, n);
}
MIXPREC_TARGET_END
#endif

inline void sgd_baseline(const sgd_scalars& s, sgd_branches b, float* w, const float* g, float* buf,
                         std::size_t n) noexcept {
  sgd_dispatch(s, b, w, g, buf, n);
}
inline void adamw_baseline(const adamw_scalars& s, float* w, const float* g, float* m, float* v,
                           std::size_t n) noexcept {
  adamw_loop<baseline_sqrt>(s, w, g, m, v, n);
}

// The AVX2 + FMA copy where the CPU has it and the bulk layer's path (force_simd_path,
// MIXPREC_SIMD_PATH) is not `portable`.
inline bool use_avx2_kernels() {
#if MIXPREC_X86_SIMD
  return active_simd_path() != simd_path::portable;
#else
  return false;
#endif
}

inline void sgd_kernel(const sgd_scalars& s, sgd_branches b, float* w, const float* g, float* buf, std::size_t n) {
#if MIXPREC_X86_SIMD
  if (use_avx2_kernels()) return sgd_avx2(s, b, w, g, buf, n);
#endif
  sgd_baseline(s, b, w, g, buf, n);
}

inline void adamw_kernel(const adamw_scalars& s, float* w, const float* g, float* m, float* v, std::size_t n) {
#if MIXPREC_X86_SIMD
  if (use_avx2_kernels()) return adamw_avx2(s, w, g, m, v, n);
#endif
  adamw_baseline(s, w, g, m, v, n);
}

}  // namespace mixprec::optim::detail
