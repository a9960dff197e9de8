// session/capabilities.hpp: CUDA compute capabilities map to the tensor-core formats NVIDIA
// documents; host_capabilities() reports the detection the bulk and gemm dispatch use; recommend()
// and resolve() pick bf16 only where it is fast, keep fp8 where its gemm runs on the bf16 kernels,
// and say why when they fall back.  Every capabilities struct here is synthetic: no result depends
// on the machine the tests run on.
#include <mixprec/session/capabilities.hpp>
#include <mixprec/session/precision_session.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace mixprec;

TEST_CASE("compute capabilities: fp16 tensor cores from 7.0, bf16 from 8.0, fp8 from 8.9", "[capabilities]") {
  struct row {
    int major, minor;
    bool fp16, bf16, fp8;
  };
  const row table[] = {{6, 1, false, false, false}, {7, 0, true, false, false}, {7, 5, true, false, false},
                       {8, 0, true, true, false},   {8, 6, true, true, false},  {8, 9, true, true, true},
                       {9, 0, true, true, true},    {10, 0, true, true, true}};
  for (const row& r : table) {
    INFO(r.major << "." << r.minor);
    const cuda_features f = cuda_features_of({r.major, r.minor});
    CHECK(f.fp16_tensor_cores == r.fp16);
    CHECK(f.bf16_tensor_cores == r.bf16);
    CHECK(f.fp8_tensor_cores == r.fp8);
  }
}

TEST_CASE("host_capabilities reports the dispatch's own CPU detection", "[capabilities]") {
  const capabilities c = host_capabilities();
  const cpu_features& f = host_cpu_features();
  CHECK(c.f16c == f.f16c);
  CHECK(c.avx2 == f.avx2);
  CHECK(c.avx512f == f.avx512f);
  CHECK(c.avx512_bf16 == f.avx512_bf16);
  CHECK(c.avx512_fp16 == f.avx512_fp16);
  CHECK(c.amx_bf16 == detail::amx_bf16_usable());
  CHECK_FALSE(c.cuda.has_value());
  CHECK_FALSE(to_string(c).empty());
}

TEST_CASE("recommend: bf16 where it is fast and exact, fp16 with dynamic scaling otherwise", "[capabilities]") {
  capabilities none;
  capabilities avx512_bf16;
  avx512_bf16.avx512_bf16 = true;
  capabilities amx;
  amx.amx_bf16 = true;
  capabilities ampere;
  ampere.cuda = cuda_capability{8, 0};
  capabilities volta;
  volta.cuda = cuda_capability{7, 0};
  capabilities f16c;
  f16c.f16c = true;
  for (const capabilities& c : {avx512_bf16, amx, ampere}) CHECK(recommend(c).name == "bf16");
  for (const capabilities& c : {none, volta, f16c}) {
    const recipe r = recommend(c);
    CHECK(r.name == "fp16");
    CHECK(r.scaling == loss_scaling_mode::dynamic);
  }
}

TEST_CASE("resolve falls back to fp16 with a message where bf16 or fp8 has no fast path", "[capabilities]") {
  capabilities f16c;
  f16c.f16c = true;
  const recipe_resolution bf16_here = resolve(recipes::bf16(), f16c);
  CHECK(bf16_here.fell_back);
  CHECK(bf16_here.used.precision == precision_mode::float16);
  CHECK(bf16_here.used.scaling == loss_scaling_mode::dynamic);
  CHECK(bf16_here.used.autocast);
  CHECK(bf16_here.message.find("bf16 has no fast path on this machine (F16C); falling back to fp16 with dynamic") !=
        std::string::npos);

  capabilities hopper;
  hopper.cuda = cuda_capability{9, 0};
  const recipe_resolution fp8_there = resolve(recipes::fp8(), hopper);
  CHECK_FALSE(fp8_there.fell_back);
  CHECK(fp8_there.message.empty());
  CHECK(to_string(fp8_there.used) == to_string(recipes::fp8()));

  capabilities ampere;
  ampere.cuda = cuda_capability{8, 0};
  const recipe_resolution fp8_ampere = resolve(recipes::fp8(), ampere);
  CHECK(fp8_ampere.fell_back);
  CHECK(fp8_ampere.used.master_weights);  // the fp8 recipe's masters are kept

  const recipe_resolution nothing = resolve(recipes::O2(), capabilities{});
  CHECK_FALSE(nothing.fell_back);
  CHECK(nothing.message.find("fp16 has no fast path on this machine (no accelerated formats); it runs emulated") !=
        std::string::npos);

  std::vector<std::string> lines;
  const precision_session amp =
      precision_session::for_machine(recipes::bf16(), f16c, [&](const std::string& line) { lines.push_back(line); });
  CHECK(amp.get_recipe().precision == precision_mode::float16);
  REQUIRE(lines.size() == 2);
  CHECK(lines[0] == bf16_here.message);
  CHECK(lines[1] == "[AMP] Using FP16 mixed precision (dynamic loss scaling, initial scale 65536.0)");
}

TEST_CASE("fp8 is fast where its gemm runs at the bf16 rate: fp8 tensor cores, else the CPU's bf16 kernels",
          "[capabilities]") {
  // A Zen 4/5 or Sapphire Rapids CPU without a GPU: mixprec::gemm runs fp8 codes (all bf16
  // values) on vdpbf16ps or TDPBF16PS, so an fp8 recipe stays fp8 instead of becoming fp16.
  capabilities zen;
  zen.f16c = zen.avx2 = zen.avx512f = zen.avx512_bf16 = true;
  capabilities sapphire = zen;
  sapphire.amx_bf16 = true;
  capabilities amx_only;
  amx_only.amx_bf16 = true;
  for (const capabilities& c : {zen, sapphire, amx_only}) {
    INFO(to_string(c));
    CHECK(c.fast_fp8());
    const recipe_resolution used = resolve(recipes::fp8(), c);
    CHECK_FALSE(used.fell_back);
    CHECK(used.message.empty());
    CHECK(used.used.name == "fp8");
    CHECK(to_string(used.used) == to_string(recipes::fp8()));
  }

  // A CPU whose gemm has float kernels only (AVX2, AVX-512 F without BF16): fp8 falls back to
  // fp16, which F16C makes fast.
  capabilities skylake;
  skylake.f16c = skylake.avx2 = skylake.avx512f = true;
  CHECK_FALSE(skylake.fast_fp8());
  const recipe_resolution on_skylake = resolve(recipes::fp8(), skylake);
  CHECK(on_skylake.fell_back);
  CHECK(on_skylake.used.precision == precision_mode::float16);
  CHECK(on_skylake.message.find("fp8 has no fast path on this machine (F16C, AVX2, AVX-512F); falling back") !=
        std::string::npos);
  // Nothing fast at all: the request stands, emulated.
  const recipe_resolution bare = resolve(recipes::fp8(), capabilities{});
  CHECK_FALSE(bare.fell_back);
  CHECK(bare.used.precision == precision_mode::float8);
  CHECK(bare.message.find("fp8 has no fast path on this machine (no accelerated formats); it runs emulated") !=
        std::string::npos);

  // With a GPU the GPU decides: an Ampere has no fp8 tensor cores (and the CUDA gemm takes no fp8
  // there), whatever the host CPU has; a Hopper has them on any host.
  capabilities ampere_on_zen = zen;
  ampere_on_zen.cuda = cuda_capability{8, 0};
  CHECK_FALSE(ampere_on_zen.fast_fp8());
  CHECK(resolve(recipes::fp8(), ampere_on_zen).fell_back);
  capabilities hopper_on_skylake = skylake;
  hopper_on_skylake.cuda = cuda_capability{9, 0};
  CHECK(hopper_on_skylake.fast_fp8());
  CHECK_FALSE(resolve(recipes::fp8(), hopper_on_skylake).fell_back);

  // The other formats' rules are unchanged on these machines.
  CHECK_FALSE(resolve(recipes::bf16(), zen).fell_back);
  CHECK(resolve(recipes::bf16(), skylake).fell_back);
  CHECK_FALSE(resolve(recipes::fp16(), zen).fell_back);
}
