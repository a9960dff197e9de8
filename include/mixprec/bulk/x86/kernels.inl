// The bulk conversion algorithms, written once against a vector-operations struct `ops`
// (avx2.hpp and avx512.hpp include this file inside their own namespace and target region).
// They are the scalar fast paths of detail/convert_bits.hpp applied to `ops::width` lanes at a
// time: every lane the vector code cannot finish exactly (NaN, infinity, overflow, results
// below the normal range, ...) is redone by the scalar function, so each output equals
// convert<To>(input) bit for bit.
//
// No include guard: this file is meant to be included once per target.  Everything is a static
// member of `kernels`, so the dispatcher can pass a target around as a type.

struct kernels {
  // Rounds the magnitudes right by Shift bits, as detail::round_right_shift does for one value.
  // `x` carries the sign (directed modes).
  template <round_mode Mode, int Shift, int MantissaBits>
  static MIXPREC_SIMD_INLINE typename ops::vec round_right_shift_lanes(typename ops::vec magnitude,
                                                                       typename ops::vec x) {
    using vec = typename ops::vec;
    constexpr std::uint32_t below = (std::uint32_t{1} << Shift) - 1;
    constexpr std::uint32_t half = std::uint32_t{1} << (Shift - 1);
    const vec one = ops::set1(1);
    if constexpr (Mode == round_mode::nearest_even) {
      if constexpr (MantissaBits == 0) {
        return ops::template shift_right<Shift>(ops::add(magnitude, ops::set1(half)));
      } else {
        const vec last_bit = ops::and_(ops::template shift_right<Shift>(magnitude), one);
        return ops::template shift_right<Shift>(ops::add(magnitude, ops::add(ops::set1(half - 1), last_bit)));
      }
    } else if constexpr (Mode == round_mode::nearest_away) {
      return ops::template shift_right<Shift>(ops::add(magnitude, ops::set1(half)));
    } else if constexpr (Mode == round_mode::toward_zero) {
      return ops::template shift_right<Shift>(magnitude);
    } else if constexpr (Mode == round_mode::upward || Mode == round_mode::downward) {
      const vec negative = ops::sign_fill(x);  // all ones in negative lanes
      const vec increment =
          Mode == round_mode::upward ? ops::andnot(negative, ops::set1(below)) : ops::and_(negative, ops::set1(below));
      return ops::template shift_right<Shift>(ops::add(magnitude, increment));
    } else {
      static_assert(Mode == round_mode::to_odd, "stochastic rounding has no vector kernel");
      const vec kept = ops::template shift_right<Shift>(magnitude);
      if constexpr (MantissaBits == 0) {
        return kept;  // the hidden last bit is already odd
      } else {
        return ops::or_(kept, ops::min_u(ops::and_(magnitude, ops::set1(below)), one));  // | inexact
      }
    }
  }

  // The same with a shift count per lane (1 <= count <= 31), for results below the normal range;
  // the kept last bit is the real one there (round_pack rounds subnormals the same way).
  template <round_mode Mode>
  static MIXPREC_SIMD_INLINE typename ops::vec round_right_shift_each(typename ops::vec value, typename ops::vec count,
                                                                      typename ops::vec x) {
    using vec = typename ops::vec;
    const vec one = ops::set1(1);
    const vec half = ops::shift_left_each(one, ops::sub(count, one));
    const vec below = ops::sub(ops::shift_left_each(one, count), one);
    if constexpr (Mode == round_mode::nearest_even) {
      const vec last_bit = ops::and_(ops::shift_right_each(value, count), one);
      return ops::shift_right_each(ops::add(value, ops::add(ops::sub(half, one), last_bit)), count);
    } else if constexpr (Mode == round_mode::nearest_away) {
      return ops::shift_right_each(ops::add(value, half), count);
    } else if constexpr (Mode == round_mode::toward_zero) {
      return ops::shift_right_each(value, count);
    } else if constexpr (Mode == round_mode::upward || Mode == round_mode::downward) {
      const vec negative = ops::sign_fill(x);
      const vec increment = Mode == round_mode::upward ? ops::andnot(negative, below) : ops::and_(negative, below);
      return ops::shift_right_each(ops::add(value, increment), count);
    } else {
      static_assert(Mode == round_mode::to_odd, "stochastic rounding has no vector kernel");
      return ops::or_(ops::shift_right_each(value, count), ops::min_u(ops::and_(value, below), one));
    }
  }

  // float -> To for one rounding mode.
  template <class To, round_mode Mode>
  static void encode_from_float(const float* in, std::size_t n, To* out, overflow o) {
    using format = typename To::format;
    using to = format_traits<format>;
    using window = narrowing_window<ieee_binary32, format>;
    using vec = typename ops::vec;
    using mask = typename ops::mask;
    constexpr std::size_t width = ops::width;
    const vec absolute = ops::set1(0x7FFFFFFFu);
    const vec low = ops::set1(static_cast<std::uint32_t>(window::low));
    const vec high = ops::set1(static_cast<std::uint32_t>(window::high));
    const vec rebias = ops::set1(static_cast<std::uint32_t>(window::rebias));
    const vec max_finite = ops::set1(static_cast<std::uint32_t>(to::max_finite_magnitude));
    const vec sign_mask = ops::set1(static_cast<std::uint32_t>(to::sign_mask));
    const vec zero = ops::set1(0);
    const vec one = ops::set1(1);
    std::size_t i = 0;
    for (; i + width <= n; i += width) {
      const vec x = ops::load(in + i);
      const vec magnitude = ops::and_(x, absolute);
      mask exact = ops::but_not(ops::less(magnitude, high), ops::less(magnitude, low));
      const vec result =
          ops::sub(round_right_shift_lanes<Mode, window::shift, to::mantissa_bits>(magnitude, x), rebias);
      exact = ops::both(exact, ops::less_equal(result, max_finite));
      vec code = result;
      if constexpr (to::has_subnormals) {
        // Below To's smallest normal: the float's significand (hidden bit included for a normal
        // float) shifted right by shift + (low field - field), at most 31 (that already leaves
        // only the rounding of a non-zero remainder).  The result is To's subnormal code, or its
        // smallest normal when it rounds up.
        const mask small = ops::less(magnitude, low);
        if constexpr ((Mode == round_mode::nearest_even || Mode == round_mode::toward_zero) &&
                      to::min_quantum_exponent >= -126) {
          // The subnormal code is |x| / 2^(min quantum) rounded to an integer: an exact float
          // product and one explicitly rounded conversion.  (DAZ could only zero a float
          // subnormal input, whose result is 0 in these two modes anyway.)
          const float scale = static_cast<float>(detail::power_of_two(-to::min_quantum_exponent));
          code = ops::select(
              small, ops::template round_scaled_to_int<Mode == round_mode::toward_zero>(magnitude, scale), code);
          exact = ops::either(exact, small);
        } else if (ops::lanes(small) != 0) {
          const vec field = ops::template shift_right<23>(magnitude);
          const vec hidden = ops::select(ops::equal(field, zero), zero, ops::set1(0x800000u));
          const vec significand = ops::or_(ops::and_(magnitude, ops::set1(0x7FFFFFu)), hidden);
          const vec count =
              ops::min_i(ops::sub(ops::set1(window::shift + window::low_field), ops::max_i(field, one)), ops::set1(31));
          code = ops::select(small, round_right_shift_each<Mode>(significand, count, x), code);
          exact = ops::either(exact, small);
        }
      }
      if constexpr (to::is_signed) {
        vec sign = ops::and_(ops::template shift_right<32 - to::total_bits>(x), sign_mask);
        if constexpr (!to::has_negative_zero) sign = ops::select(ops::equal(code, zero), zero, sign);  // fnuz: +0
        code = ops::or_(code, sign);
      } else {
        exact = ops::but_not(exact, ops::less(x, zero));
      }
      ops::template store_codes<to::storage_bits>(out + i, code);
      const unsigned done = ops::lanes(exact);
      if (done != ops::all_lanes) {
        for (std::size_t lane = 0; lane < width; ++lane) {
          if ((done >> lane & 1u) == 0) out[i + lane] = convert_value<To>(in[i + lane], Mode, o, 0);
        }
      }
    }
    for (; i < n; ++i) out[i] = convert_value<To>(in[i], Mode, o, 0);
  }

  template <class To>
  static void encode_from_float(const float* in, std::size_t n, To* out, rounding r, overflow o) {
    switch (r) {
      case rounding::nearest_even:
        return encode_from_float<To, round_mode::nearest_even>(in, n, out, o);
      case rounding::nearest_away:
        return encode_from_float<To, round_mode::nearest_away>(in, n, out, o);
      case rounding::toward_zero:
        return encode_from_float<To, round_mode::toward_zero>(in, n, out, o);
      case rounding::upward:
        return encode_from_float<To, round_mode::upward>(in, n, out, o);
      case rounding::downward:
        return encode_from_float<To, round_mode::downward>(in, n, out, o);
      case rounding::to_odd:
        return encode_from_float<To, round_mode::to_odd>(in, n, out, o);
    }
  }

  // From -> float, exact.  Normal numbers re-bias their exponent; subnormals are
  // integer × 2^(min quantum), computed in float (exact, and a normal float, so the FTZ/DAZ
  // modes cannot touch it); when From has float's exponent range (bfloat16) the shift alone is
  // exact for subnormals too.
  template <class From>
  static void decode_to_float(const From* in, std::size_t n, float* out) {
    using format = typename From::format;
    using from = format_traits<format>;
    using vec = typename ops::vec;
    using mask = typename ops::mask;
    constexpr std::size_t width = ops::width;
    constexpr bool float_range = from::exponent_bits == 8 && from::bias == 127 && from::has_subnormals;
    // Smallest code whose exponent field is a normal float exponent (field - bias + 127 >= 1).
    constexpr int first_float_normal_field =
        from::bias - 126 > from::min_normal_field ? from::bias - 126 : from::min_normal_field;
    constexpr bool subnormals_in_vector = from::has_subnormals && !float_range && from::min_quantum_exponent >= -126;
    const vec magnitude_mask = ops::set1(static_cast<std::uint32_t>(from::magnitude_mask));
    const vec normal_low =
        ops::set1(float_range ? 0u : static_cast<std::uint32_t>(first_float_normal_field) << from::mantissa_bits);
    const vec finite_high = ops::set1(static_cast<std::uint32_t>(from::first_special_magnitude));
    const vec rebias = ops::set1(static_cast<std::uint32_t>(127 - from::bias) << 23);
    const vec min_normal = ops::set1(std::uint32_t{1} << from::mantissa_bits);
    const vec sign_mask = ops::set1(static_cast<std::uint32_t>(from::sign_mask));
    const float quantum = static_cast<float>(detail::power_of_two(from::min_quantum_exponent));
    std::size_t i = 0;
    for (; i + width <= n; i += width) {
      const vec code = ops::template load_codes<from::storage_bits>(in + i);
      const vec magnitude = ops::and_(code, magnitude_mask);
      vec value =
          ops::add(ops::template shift_left<23 - from::mantissa_bits>(magnitude), float_range ? ops::set1(0) : rebias);
      mask exact = ops::but_not(ops::less(magnitude, finite_high), ops::less(magnitude, normal_low));
      if constexpr (subnormals_in_vector) {
        const mask subnormal = ops::less(magnitude, min_normal);
        value = ops::select(subnormal, ops::int_to_float_bits_scaled(magnitude, quantum), value);
        exact = ops::either(exact, subnormal);
      }
      if constexpr (from::specials == special_encoding::nan_negative_zero) {
        exact = ops::but_not(exact, ops::equal(code, sign_mask));  // 0x80 is the NaN, not -0
      }
      if constexpr (from::is_signed) {
        value = ops::or_(value, ops::template shift_left<32 - from::total_bits>(ops::and_(code, sign_mask)));
      }
      ops::store(out + i, value);
      const unsigned done = ops::lanes(exact);
      if (done != ops::all_lanes) {
        for (std::size_t lane = 0; lane < width; ++lane) {
          if ((done >> lane & 1u) == 0) out[i + lane] = static_cast<float>(in[i + lane]);
        }
      }
    }
    for (; i < n; ++i) out[i] = static_cast<float>(in[i]);
  }

  // float -> float16 by the F16C instruction (vcvtps2ph), which rounds exactly in the four IEEE
  // modes and overflows as IEEE 754 §7.4 says (= overflow::non_finite).  It keeps NaN payloads
  // and may treat float subnormal inputs as zero (MXCSR.DAZ): those lanes are redone by the
  // scalar function.  The caller checks that MXCSR has neither DAZ nor FTZ set.
  template <round_mode Mode, class To>
  static void encode_half_instruction(const float* in, std::size_t n, To* out) {
    using vec = typename ops::vec;
    constexpr int imm = (Mode == round_mode::nearest_even  ? _MM_FROUND_TO_NEAREST_INT
                         : Mode == round_mode::toward_zero ? _MM_FROUND_TO_ZERO
                         : Mode == round_mode::upward      ? _MM_FROUND_TO_POS_INF
                                                           : _MM_FROUND_TO_NEG_INF) |
                        _MM_FROUND_NO_EXC;
    constexpr std::size_t width = ops::width;
    const vec absolute = ops::set1(0x7FFFFFFFu), infinity = ops::set1(0x7F800000u), min_normal = ops::set1(0x00800000u);
    const vec zero = ops::set1(0);
    std::size_t i = 0;
    for (; i + width <= n; i += width) {
      const vec x = ops::load(in + i);
      const vec magnitude = ops::and_(x, absolute);
      ops::template store_float_as_half<imm>(out + i, x);
      const typename ops::mask redo = ops::either(
          ops::less(infinity, magnitude), ops::but_not(ops::less(magnitude, min_normal), ops::equal(magnitude, zero)));
      const unsigned lanes = ops::lanes(redo);
      if (lanes != 0) {
        for (std::size_t lane = 0; lane < width; ++lane) {
          if ((lanes >> lane & 1u) != 0) out[i + lane] = convert_value<To>(in[i + lane], Mode, overflow::non_finite, 0);
        }
      }
    }
    for (; i < n; ++i) out[i] = convert_value<To>(in[i], Mode, overflow::non_finite, 0);
  }

  // float16 -> float by the F16C instruction (vcvtph2ps): exact, NaN payloads kept with the quiet
  // bit set, as the library's widening rule says.  The caller checks MXCSR.DAZ is clear.
  template <class From>
  static void decode_half_instruction(const From* in, std::size_t n, float* out) {
    constexpr std::size_t width = ops::width;
    std::size_t i = 0;
    for (; i + width <= n; i += width) ops::store(out + i, ops::load_half_as_float(in + i));
    for (; i < n; ++i) out[i] = static_cast<float>(in[i]);
  }
};  // struct kernels
