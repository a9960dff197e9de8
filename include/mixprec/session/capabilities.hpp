// What this machine accelerates, and which recipe to train with on it.
//
//   capabilities caps = host_capabilities();        // the CPU (bulk/simd_path.hpp's detection,
//                                                   // detail/amx_support.hpp's AMX check)
//   caps.cuda = cuda_capability{8, 9};              // a GPU, if the program uses one
//   recipe r = recommend(caps);                     // bf16 where it is fast, else fp16 + dynamic
//   recipe_resolution used = resolve(requested, caps);   // the recipe to use, and why
//
// bf16 is "fast and exact" where the hardware multiplies bf16 with float accumulation:
// AVX-512 BF16 (VDPBF16PS), AMX-BF16 (TDPBF16PS, with the OS permission Linux asks for), or a
// CUDA GPU of compute capability 8.0 or later (Ampere bf16 tensor cores).  fp16 has a fast path
// with F16C conversions on the CPU (AVX2 path), AVX-512 FP16, or CUDA 7.0+ tensor cores.
//
// fp8 is fast where its matrix products run at the bf16 rate.  On a GPU that takes fp8 tensor
// cores (compute capability 8.9: Ada, Hopper); the CUDA gemm takes no fp8 below that.  A CPU has
// no fp8 instructions, but every e4m3 and e5m2 value is a bfloat16 value, so mixprec::gemm
// (what ops::fp8_linear calls) feeds fp8 codes straight to its bf16 kernels (vdpbf16ps,
// TDPBF16PS: gemm/detail/driver.hpp), exactly; the rest of an fp8 recipe autocasts to bf16.  So
// without a GPU, fp8 is fast where bf16 is: AVX-512 BF16 or AMX-BF16, and resolve() keeps it
// there rather than trading it for fp16.  With caps.cuda set the GPU decides (the products run
// there; the CPU's bf16 kernels do not help them).
//
// Functions written `template <int = 0>` are compiled only in a file that calls them
// (docs/design.md, "Compiled where called").
#pragma once

#include <optional>
#include <string>

#include "../bulk/simd_path.hpp"
#include "../detail/amx_support.hpp"
#include "recipe.hpp"

namespace mixprec {

struct cuda_capability {
  int major = 0, minor = 0;
};

// What a CUDA GPU of this compute capability runs on tensor cores.
struct cuda_features {
  bool fp16_tensor_cores = false;  // sm_70 (Volta) and later
  bool bf16_tensor_cores = false;  // sm_80 (Ampere) and later
  bool fp8_tensor_cores = false;   // sm_89 (Ada) and sm_90 (Hopper) and later
};

constexpr cuda_features cuda_features_of(cuda_capability cc) noexcept {
  const int version = cc.major * 10 + cc.minor;
  return {version >= 70, version >= 80, version >= 89};
}

struct capabilities {
  bool f16c = false, avx2 = false, avx512f = false, avx512_bf16 = false, avx512_fp16 = false;
  bool amx_bf16 = false;  // CPU support, OS tile state and this process's permission
  std::optional<cuda_capability> cuda;

  bool fast_bf16() const noexcept {
    return avx512_bf16 || amx_bf16 || (cuda && cuda_features_of(*cuda).bf16_tensor_cores);
  }
  bool fast_fp16() const noexcept { return f16c || avx512_fp16 || (cuda && cuda_features_of(*cuda).fp16_tensor_cores); }
  // See the top of this file: a GPU's fp8 tensor cores, or else the CPU's bf16 gemm kernels.
  bool fast_fp8() const noexcept { return cuda ? cuda_features_of(*cuda).fp8_tensor_cores : avx512_bf16 || amx_bf16; }
};

// This CPU, read once by the detection the bulk and gemm dispatch use.  No GPU: set cuda from
// the device the program runs on (cudaGetDeviceProperties gives major and minor).
template <int = 0>
capabilities host_capabilities() {
  const cpu_features& f = host_cpu_features();
  capabilities c;
  c.f16c = f.f16c;
  c.avx2 = f.avx2;
  c.avx512f = f.avx512f;
  c.avx512_bf16 = f.avx512_bf16;
  c.avx512_fp16 = f.avx512_fp16;
  c.amx_bf16 = detail::amx_bf16_usable();
  return c;
}

template <int = 0>
std::string to_string(const capabilities& c) {
  std::string out;
  const auto add = [&](bool has, const char* name) {
    if (has) out.append(out.empty() ? "" : ", ").append(name);
  };
  add(c.f16c, "F16C");
  add(c.avx2, "AVX2");
  add(c.avx512f, "AVX-512F");
  add(c.avx512_bf16, "AVX-512 BF16");
  add(c.avx512_fp16, "AVX-512 FP16");
  add(c.amx_bf16, "AMX-BF16");
  if (c.cuda)
    out.append(out.empty() ? "" : ", ").append("CUDA sm_" + std::to_string(c.cuda->major * 10 + c.cuda->minor));
  return out.empty() ? "no accelerated formats" : out;
}

// bf16 (no loss scaling) where it is fast and exact, else fp16 with dynamic loss scaling.
inline recipe recommend(const capabilities& c) { return c.fast_bf16() ? recipes::bf16() : recipes::fp16(); }

struct recipe_resolution {
  recipe used;
  bool fell_back = false;
  std::string message;  // why `used` differs from the request, or that the request runs emulated
};

// The recipe to train with: the request where its format has a fast path here (fp8: fast_fp8(),
// so on an AVX-512 BF16 or AMX-BF16 CPU it stays fp8); bf16 or fp8 without one become fp16 with
// dynamic loss scaling when fp16 is fast (every other option kept); otherwise the request stands,
// emulated, and the message says so.
template <int = 0>
recipe_resolution resolve(const recipe& requested, const capabilities& c) {
  recipe_resolution out{requested, false, ""};
  const char* format = to_string(requested.precision);
  const bool fast = requested.precision == precision_mode::float32 ||
                    (requested.precision == precision_mode::float16 && c.fast_fp16()) ||
                    (requested.precision == precision_mode::bfloat16 && c.fast_bf16()) ||
                    (requested.precision == precision_mode::float8 && c.fast_fp8());
  if (fast) return out;
  // The block-scaled recipes are emulated on every CPU (no MX, block-fp8 or NVFP4 instructions);
  // fp16 would be another recipe altogether, so they stand.
  const bool to_fp16 =
      requested.precision != precision_mode::float16 && !is_block_scaled(requested.precision) && c.fast_fp16();
  if (!to_fp16) {
    out.message = std::string("[AMP] ") + format + " has no fast path on this machine (" + to_string(c) +
                  "); it runs emulated, exactly, through float";
    return out;
  }
  recipe r = requested;
  r.name = requested.name + "->fp16";
  r.precision = precision_mode::float16;
  if (r.scaling == loss_scaling_mode::none) r.scaling = loss_scaling_mode::dynamic;
  validate(r);
  out.used = r;
  out.fell_back = true;
  out.message = std::string("[AMP] ") + format + " has no fast path on this machine (" + to_string(c) +
                "); falling back to fp16 with " + to_string(r.scaling) + " loss scaling";
  return out;
}

}  // namespace mixprec
