// The F16C conversions between float and float16 as kernels, for the x86 paths (x86/avx2.hpp
// and x86/avx512.hpp include this after kernels.inl, inside their namespace and target region):
// everything of `kernels`, plus the two kernels built on vcvtps2ph / vcvtph2ps.
//
// No include guard: included once per target.

struct half_kernels : kernels {
  template <int Imm>
  struct half_instruction_lanes {
    MIXPREC_SIMD_INLINE typename ops::vec encode(typename ops::vec x, typename ops::mask& exact) const {
      exact = ops::not_special_or_subnormal(x);
      return ops::template float_to_half_lanes<Imm>(x);
    }
  };

  // float -> float16 by the F16C instruction (vcvtps2ph), which rounds exactly in the four IEEE
  // modes and overflows as IEEE 754 §7.4 says (= overflow::non_finite).  It keeps NaN payloads
  // and may treat float subnormal inputs as zero (MXCSR.DAZ): those lanes are redone by the
  // scalar function.  The caller checks that MXCSR has neither DAZ nor FTZ set.
  template <round_mode Mode, class To>
  static void encode_half_instruction(const float* in, std::size_t n, To* out, bool stream) {
    constexpr int imm = (Mode == round_mode::nearest_even  ? _MM_FROUND_TO_NEAREST_INT
                         : Mode == round_mode::toward_zero ? _MM_FROUND_TO_ZERO
                         : Mode == round_mode::upward      ? _MM_FROUND_TO_POS_INF
                                                           : _MM_FROUND_TO_NEG_INF) |
                        _MM_FROUND_NO_EXC;
    encode_groups<To, false>(in, n, out, stream, 1.0f, half_instruction_lanes<imm>{},
                             [](float x) { return convert_value<To>(x, Mode, overflow::non_finite, 0); });
  }

  // float16 -> float by the F16C instruction (vcvtph2ps): exact, NaN payloads kept with the quiet
  // bit set, as the library's widening rule says.  The caller checks MXCSR.DAZ is clear.
  template <class From>
  static void decode_half_instruction(const From* in, std::size_t n, float* out, bool stream) {
    constexpr std::size_t width = ops::width;
    std::size_t i = 0;
    for (; i + width <= n; i += width) ops::store(out + i, ops::load_half_as_float(in + i), stream);
    for (; i < n; ++i) out[i] = static_cast<float>(in[i]);
  }
};  // struct half_kernels
