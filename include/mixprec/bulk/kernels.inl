// The bulk conversion algorithms, written once against a vector-operations struct `ops`
// (x86/avx2.hpp and x86/avx512.hpp include this file inside their own namespace and target
// region, portable.hpp with plain arrays that the compiler vectorises for any target).
// They are the scalar fast paths of detail/convert_bits.hpp applied to `ops::width` lanes at a
// time: every lane the vector code cannot finish exactly (NaN, infinity, overflow, results
// below the normal range, ...) is redone by the scalar function, so each output equals
// convert<To>(input) bit for bit.
//
// Every kernel takes `stream`: use non-temporal stores, for which the caller has aligned `out`
// to the vector store's size (width × sizeof(output element)) and will issue the fence.
//
// No include guard: this file is meant to be included once per target.  Everything is a static
// member of `kernels`, so the dispatcher can pass a target around as a type.

struct kernels {
  using operations = ops;

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
    } else if constexpr (Mode == round_mode::nearest_zero) {
      return ops::template shift_right<Shift>(ops::add(magnitude, ops::set1(half - 1)));
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
    } else if constexpr (Mode == round_mode::nearest_zero) {
      return ops::shift_right_each(ops::add(value, ops::sub(half, one)), count);
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

  // A rounding mode other than nearest-even, chosen at run time: one kernel per format and target
  // serves all five, where a kernel per mode made every file that reaches the run-time dispatch
  // compile five more copies of every format's kernels on every target (issue 14).  Nearest-even,
  // the mode that is hot, keeps kernels of its own.  Each field is all ones or zero:
  //   away: add half of the last kept place (nearest_away);
  //   tie_down: add half of the last kept place less one lost place (nearest_zero: only a
  //             remainder above half carries);
  //   up / down: add all the lost places' ones on positive / negative lanes (upward / downward);
  //   odd: or the sticky bit into the last kept bit (to_odd).
  // toward_zero is all zeros: truncation.
  struct runtime_rounding {
    std::uint32_t away, tie_down, up, down, odd;  // no initialisers: {} zeroes them (and GCC rejects them here)
    static runtime_rounding of(rounding r) noexcept {
      runtime_rounding rule{};
      if (r == rounding::nearest_away) rule.away = ~0u;
      if (r == rounding::nearest_zero) rule.tie_down = ~0u;
      if (r == rounding::upward) rule.up = ~0u;
      if (r == rounding::downward) rule.down = ~0u;
      if (r == rounding::to_odd) rule.odd = ~0u;
      return rule;
    }
  };

  // round_right_shift_lanes and round_right_shift_each under a runtime_rounding: the increment
  // is (half & away) | ((half - 1) & tie_down) | (below & the direction's lanes), which is what
  // each mode's branch above adds; to_odd adds nothing and ors in the sticky bit (not for
  // MantissaBits == 0, as above).
  template <int Shift, int MantissaBits>
  static MIXPREC_SIMD_INLINE typename ops::vec round_right_shift_lanes(typename ops::vec magnitude, typename ops::vec x,
                                                                       const runtime_rounding& rule) {
    using vec = typename ops::vec;
    constexpr std::uint32_t below = (std::uint32_t{1} << Shift) - 1;
    constexpr std::uint32_t half = std::uint32_t{1} << (Shift - 1);
    const vec negative = ops::sign_fill(x);
    const vec directed =
        ops::or_(ops::and_(negative, ops::set1(rule.down & below)), ops::andnot(negative, ops::set1(rule.up & below)));
    const vec kept = ops::template shift_right<Shift>(
        ops::add(magnitude, ops::or_(directed, ops::set1((rule.away & half) | (rule.tie_down & (half - 1))))));
    if constexpr (MantissaBits == 0) {
      return kept;
    } else {
      const vec sticky = ops::min_u(ops::and_(magnitude, ops::set1(below)), ops::set1(1));
      return ops::or_(kept, ops::and_(sticky, ops::set1(rule.odd)));
    }
  }
  static MIXPREC_SIMD_INLINE typename ops::vec round_right_shift_each(typename ops::vec value, typename ops::vec count,
                                                                      typename ops::vec x,
                                                                      const runtime_rounding& rule) {
    using vec = typename ops::vec;
    const vec one = ops::set1(1);
    const vec half = ops::shift_left_each(one, ops::sub(count, one));
    const vec below = ops::sub(ops::shift_left_each(one, count), one);
    const vec negative = ops::sign_fill(x);
    const vec directed = ops::or_(ops::and_(negative, ops::set1(rule.down)), ops::andnot(negative, ops::set1(rule.up)));
    const vec nearest =
        ops::or_(ops::and_(half, ops::set1(rule.away)), ops::and_(ops::sub(half, one), ops::set1(rule.tie_down)));
    const vec increment = ops::or_(ops::and_(directed, below), nearest);
    const vec kept = ops::shift_right_each(ops::add(value, increment), count);
    return ops::or_(kept, ops::and_(ops::min_u(ops::and_(value, below), one), ops::set1(rule.odd)));
  }

  // Stochastic rounding of the magnitudes right by `count` bits (1 <= count <= 32): up exactly
  // when floor(fraction × 2^32) + random >= 2^32, fraction = lost bits / 2^count, which is the
  // scalar rule of detail::round_up.  floor(fraction × 2^32) is the lost bits shifted to the top,
  // and a + r carries out of 32 bits exactly when a > ~r, i.e. when a - min(a, ~r) is not zero.
  static MIXPREC_SIMD_INLINE typename ops::vec round_up_stochastic(typename ops::vec kept,
                                                                   typename ops::vec lost_at_top,
                                                                   typename ops::vec random) {
    const typename ops::vec not_random = ops::xor_(random, ops::set1(0xFFFFFFFFu));
    const typename ops::vec carry = ops::sub(lost_at_top, ops::min_u(lost_at_top, not_random));
    return ops::add(kept, ops::min_u(carry, ops::set1(1)));
  }
  template <int Shift>
  static MIXPREC_SIMD_INLINE typename ops::vec round_right_shift_stochastic(typename ops::vec magnitude,
                                                                            typename ops::vec random) {
    static_assert(Shift >= 1 && Shift <= 32, "the lost bits are read as a 32-bit fraction");
    constexpr std::uint32_t below = static_cast<std::uint32_t>((std::uint64_t{1} << Shift) - 1);
    return round_up_stochastic(ops::template shift_right<Shift>(magnitude),
                               ops::template shift_left<32 - Shift>(ops::and_(magnitude, ops::set1(below))), random);
  }
  static MIXPREC_SIMD_INLINE typename ops::vec round_right_shift_each_stochastic(typename ops::vec value,
                                                                                 typename ops::vec count,
                                                                                 typename ops::vec random) {
    const typename ops::vec one = ops::set1(1);
    const typename ops::vec below = ops::sub(ops::shift_left_each(one, count), one);
    return round_up_stochastic(ops::shift_right_each(value, count),
                               ops::shift_left_each(ops::and_(value, below), ops::sub(ops::set1(32), count)), random);
  }

  // One vector of float -> To for one rounding mode: the codes in 32-bit lanes, and in `exact`
  // the lanes they are right for (the others need the scalar function).
  // With Mode == stochastic, `random` holds each lane's 32 random bits.  With SaturateFinite,
  // for inputs the caller knows to be finite, results beyond To's largest finite value become it
  // (overflow::saturate) and those lanes are exact too.  With ModeAtRunTime, `rule` gives the
  // mode (one of those but nearest-even and stochastic) and Mode is not read.
  // With `overflow_mode` (or SaturateFinite) an unsigned format's negative lanes get their code
  // here too (special_codes::out_of_domain); without it they are left to the scalar function.
  template <class To, round_mode Mode, bool SaturateFinite = false, bool ModeAtRunTime = false>
  static MIXPREC_SIMD_INLINE typename ops::vec encode_lanes(typename ops::vec x, typename ops::mask& exact,
                                                            typename ops::vec random = typename ops::vec{},
                                                            const runtime_rounding& rule = runtime_rounding{},
                                                            const overflow* overflow_mode = nullptr) {
    using format = typename To::format;
    using to = format_traits<format>;
    using window = narrowing_window<ieee_binary32, format>;
    using vec = typename ops::vec;
    using mask = typename ops::mask;
    const vec low = ops::set1(static_cast<std::uint32_t>(window::low));
    const vec zero = ops::set1(0);
    const vec one = ops::set1(1);
    const vec magnitude = ops::and_(x, ops::set1(0x7FFFFFFFu));
    vec rounded;
    if constexpr (ModeAtRunTime) {
      rounded = round_right_shift_lanes<window::shift, to::mantissa_bits>(magnitude, x, rule);
    } else if constexpr (Mode == round_mode::stochastic) {
      rounded = round_right_shift_stochastic<window::shift>(magnitude, random);
    } else {
      rounded = round_right_shift_lanes<Mode, window::shift, to::mantissa_bits>(magnitude, x);
    }
    vec result = ops::sub(rounded, ops::set1(static_cast<std::uint32_t>(window::rebias)));
    if constexpr (SaturateFinite) {
      result = ops::min_u(result, ops::set1(static_cast<std::uint32_t>(to::max_finite_magnitude)));
    }
    // At and above the window's top (2^(max_exponent+1), infinity, NaN) the result exceeds the
    // largest finite code, so this one comparison also rejects those lanes.
    exact = ops::less_equal(result, ops::set1(static_cast<std::uint32_t>(to::max_finite_magnitude)));
    const mask small = ops::less(magnitude, low);
    vec code = result;
    if constexpr (!to::has_subnormals) {
      exact = ops::but_not(exact, small);  // nothing below the smallest normal (e8m0)
    } else {
      // Below To's smallest normal the result is To's subnormal code (or its smallest normal
      // when it rounds up).
      if constexpr (!ModeAtRunTime && (Mode == round_mode::nearest_even || Mode == round_mode::toward_zero) &&
                    to::min_quantum_exponent >= -126) {
        // |x| / 2^(min quantum) rounded to an integer: an exact float product and one explicitly
        // rounded conversion.  (DAZ could only zero a float subnormal input, whose result is 0
        // in these two modes anyway.)
        const float quantum_scale = static_cast<float>(detail::power_of_two(-to::min_quantum_exponent));
        code = ops::select(
            small, ops::template round_scaled_to_int<Mode == round_mode::toward_zero>(magnitude, quantum_scale), code);
        exact = ops::either(exact, small);
      } else if (ops::lanes(small) != 0) {
        // The float's significand (hidden bit included for a normal float) shifted right by
        // shift + (low field - field), at most 31 (that already leaves only the rounding of a
        // non-zero remainder).
        const vec field = ops::template shift_right<23>(magnitude);
        const vec hidden = ops::select(ops::equal(field, zero), zero, ops::set1(0x800000u));
        const vec significand = ops::or_(ops::and_(magnitude, ops::set1(0x7FFFFFu)), hidden);
        const vec unclamped = ops::sub(ops::set1(window::shift + window::low_field), ops::max_i(field, one));
        const vec count = ops::min_i(unclamped, ops::set1(31));
        if constexpr (ModeAtRunTime) {
          code = ops::select(small, round_right_shift_each(significand, count, x, rule), code);
          exact = ops::either(exact, small);
        } else if constexpr (Mode == round_mode::stochastic) {
          // The random fraction needs every lost bit: lanes shifted by more than 31 (far below
          // the smallest subnormal) are left to the scalar function.
          code = ops::select(small, round_right_shift_each_stochastic(significand, count, random), code);
          exact = ops::either(ops::but_not(exact, small), ops::but_not(small, ops::less(ops::set1(31), unclamped)));
        } else {
          code = ops::select(small, round_right_shift_each<Mode>(significand, count, x), code);
          exact = ops::either(exact, small);
        }
      }
    }
    if constexpr (to::is_signed) {
      const vec sign_mask = ops::set1(static_cast<std::uint32_t>(to::sign_mask));
      const vec shifted_sign = ops::template shift_right<32 - to::total_bits>(x);
      if constexpr (!to::has_negative_zero) {
        code =
            ops::or_(code, ops::and_(ops::select(ops::equal(code, zero), zero, shifted_sign), sign_mask));  // fnuz: +0
      } else {
        code = ops::or_and(code, shifted_sign, sign_mask);
      }
    } else {
      const mask negative = ops::less(x, zero);  // the sign bit: -0, negative NaNs included
      if (ops::lanes(negative) == 0) {
        // No negative lane (scales, magnitudes): nothing to do, and no cost for it.
      } else if (SaturateFinite || overflow_mode != nullptr) {
        // A negative input other than -0 and NaN is out of the format's domain: one code for all
        // of them (the smallest value when saturating or without NaN, else NaN).  -0 keeps the
        // zero code found above where the format has a zero (+0); a NaN lane is the scalar
        // function's, as for positive NaNs.
        const overflow o = SaturateFinite ? overflow::saturate : *overflow_mode;
        const vec domain = ops::set1(static_cast<std::uint32_t>(special_codes<format>::out_of_domain(o)));
        const mask nan_lane = ops::less(ops::set1(0x7F80'0000u), magnitude);
        mask replaced = ops::but_not(negative, nan_lane);
        if constexpr (to::has_zero) replaced = ops::but_not(replaced, ops::equal(magnitude, zero));
        code = ops::select(replaced, domain, code);
        const mask kept_zero = ops::but_not(ops::but_not(negative, replaced), nan_lane);  // -0 with a zero code
        exact = ops::either(ops::but_not(exact, ops::but_not(negative, kept_zero)), replaced);
      } else {
        exact = ops::but_not(exact, negative);
      }
    }
    return code;
  }

  // Runs `lanes.encode(x, exact)` over the input in groups of vectors whose codes fill one register
  // (so that every store is a full-width one), then single vectors, then single elements;
  // lanes not exact, and the last elements, are redone by `scalar(x)`.  With Scaled, inputs are
  // first multiplied by `scale` in float and the largest |input| is returned as float bits, NaN
  // bits winning (the integer order of non-negative float bits is their numeric order, with
  // NaNs above infinity).
  template <class To, bool Scaled, class Lanes, class Scalar>
  static MIXPREC_SIMD_INLINE std::uint32_t encode_groups(const float* in, std::size_t n, To* out, bool stream,
                                                         float scale, Lanes lanes, Scalar scalar) {
    using vec = typename ops::vec;
    using mask = typename ops::mask;
    constexpr int bits = format_traits<typename To::format>::storage_bits;
    constexpr std::size_t width = ops::width;
    constexpr std::size_t group = ops::register_bytes / (width * bits / 8);
    const vec absolute = ops::set1(0x7FFFFFFFu);
    vec largest = ops::set1(0);
    std::size_t i = 0;
    for (; i + group * width <= n; i += group * width) {
      vec codes[group];
      unsigned done[group];
      for (std::size_t g = 0; g < group; ++g) {
        vec x = ops::load(in + i + g * width);
        if constexpr (Scaled) {
          largest = ops::max_u(largest, ops::and_(x, absolute));
          x = ops::multiply_float(x, scale);
        }
        mask exact;
        codes[g] = lanes.encode(x, exact);
        done[g] = ops::lanes(exact);
      }
      ops::template store_code_group<bits, group>(out + i, codes, stream);
      unsigned all_done = ops::all_lanes;
      for (std::size_t g = 0; g < group; ++g) all_done &= done[g];
      if (all_done != ops::all_lanes) {
        for (std::size_t g = 0; g < group; ++g) {
          if (done[g] != ops::all_lanes) redo<Scaled>(in, out, i + g * width, done[g], scale, scalar);
        }
      }
    }
    for (; i + width <= n; i += width) {
      vec x = ops::load(in + i);
      if constexpr (Scaled) {
        largest = ops::max_u(largest, ops::and_(x, absolute));
        x = ops::multiply_float(x, scale);
      }
      mask exact;
      ops::template store_codes<bits>(out + i, lanes.encode(x, exact), false);
      const unsigned done = ops::lanes(exact);
      if (done != ops::all_lanes) redo<Scaled>(in, out, i, done, scale, scalar);
    }
    std::uint32_t result = 0;
    if constexpr (Scaled) result = ops::horizontal_max_u(largest);
    for (; i < n; ++i) {
      if constexpr (Scaled) result = std::max(result, bit_cast<std::uint32_t>(in[i]) & 0x7FFFFFFFu);
      out[i] = scalar(input<Scaled>(in[i], scale));
    }
    return result;
  }

  // Redoes with the scalar function the lanes of the vector at `at` that `done` lacks.
  template <bool Scaled, class To, class Scalar>
  static void redo(const float* in, To* out, std::size_t at, unsigned done, float scale, Scalar scalar) {
    for (std::size_t lane = 0; lane < ops::width; ++lane) {
      if ((done >> lane & 1u) == 0) out[at + lane] = scalar(input<Scaled>(in[at + lane], scale));
    }
  }

  // The lane functions encode_groups takes (structs, not lambdas: a lambda defined here does not
  // get the target's instruction set).
  template <class To, round_mode Mode>
  struct generic_lanes {
    overflow o;
    MIXPREC_SIMD_INLINE typename ops::vec encode(typename ops::vec x, typename ops::mask& exact) const {
      return encode_lanes<To, Mode>(x, exact, typename ops::vec{}, runtime_rounding{}, &o);
    }
  };
  template <class To>
  struct runtime_lanes {
    runtime_rounding rule;
    overflow o;
    MIXPREC_SIMD_INLINE typename ops::vec encode(typename ops::vec x, typename ops::mask& exact) const {
      return encode_lanes<To, round_mode::toward_zero, false, true>(x, exact, typename ops::vec{}, rule, &o);
    }
  };

  // float -> To for one rounding mode (see encode_groups for Scaled).
  template <class To, round_mode Mode, bool Scaled = false>
  static std::uint32_t encode_from_float(const float* in, std::size_t n, To* out, overflow o, bool stream,
                                         float scale = 1.0f) {
    return encode_groups<To, Scaled>(in, n, out, stream, scale, generic_lanes<To, Mode>{o},
                                     [o](float x) { return convert_value<To>(x, Mode, o, 0); });
  }

  template <bool Scaled>
  static MIXPREC_SIMD_INLINE float input(float x, float scale) {
    if constexpr (Scaled) {
      return x * scale;
    } else {
      return x;
    }
  }

  // float -> To under a rounding chosen at run time: nearest-even on its own kernel, the other
  // modes on one kernel that reads the mode (runtime_rounding).
  // With r a nearest_even_only (special_codes.hpp), the nearest-even kernel alone is compiled.
  template <class To, bool Scaled = false, class Rounding>
  static std::uint32_t encode_from_float(const float* in, std::size_t n, To* out, Rounding r, overflow o, bool stream,
                                         float scale = 1.0f) {
    if constexpr (is_run_time_rounding<Rounding>) {
      if (r != rounding::nearest_even) {
        const round_mode mode = to_round_mode(r);
        return encode_groups<To, Scaled>(in, n, out, stream, scale, runtime_lanes<To>{runtime_rounding::of(r), o},
                                         [o, mode](float x) { return convert_value<To>(x, mode, o, 0); });
      }
    }
    (void)r;
    return encode_from_float<To, round_mode::nearest_even, Scaled>(in, n, out, o, stream, scale);
  }

  // From -> float, exact.  Normal numbers re-bias their exponent; subnormals are
  // integer × 2^(min quantum), computed in float (exact, and a normal float, so the FTZ/DAZ
  // modes cannot touch it); when From has float's exponent range (bfloat16) the shift alone is
  // exact for subnormals too.
  // With Scaled, each decoded value is multiplied by `scale` in float (dequantisation).
  template <class From, bool Scaled = false>
  static void decode_to_float(const From* in, std::size_t n, float* out, bool stream, float scale = 1.0f) {
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
      if constexpr (Scaled) value = ops::multiply_float(value, scale);
      ops::store(out + i, value, stream);
      const unsigned done = ops::lanes(exact);
      if (done != ops::all_lanes) {
        for (std::size_t lane = 0; lane < width; ++lane) {
          if ((done >> lane & 1u) == 0) out[i + lane] = input<Scaled>(static_cast<float>(in[i + lane]), scale);
        }
      }
    }
    for (; i < n; ++i) out[i] = input<Scaled>(static_cast<float>(in[i]), scale);
  }

  // Philox-4x32-10 (detail/philox.hpp) for ops::width consecutive blocks from `block`, one block
  // per lane, transposed so that random[j] holds the bits of elements 4 × block + j × width + t;
  // the counter's upper words are (tensor, step), as philox_bits(seed, tensor, step, index) has
  // them ((0, 0): philox_bits(seed, index)).
  static MIXPREC_SIMD_INLINE void philox_lanes(std::uint64_t seed, std::uint64_t block, typename ops::vec* random,
                                               std::uint32_t tensor = 0, std::uint32_t step = 0) {
    using vec = typename ops::vec;
    using constants = philox_constants;
    vec c[4] = {ops::add(ops::set1(static_cast<std::uint32_t>(block)), ops::lane_numbers()),
                ops::set1(static_cast<std::uint32_t>(block >> 32)), ops::set1(tensor), ops::set1(step)};
    auto key0 = static_cast<std::uint32_t>(seed);
    auto key1 = static_cast<std::uint32_t>(seed >> 32);
    for (int round = 0; round < constants::rounds; ++round) {
      const vec high0 = ops::multiply_high(c[0], constants::multiplier0);
      const vec low0 = ops::multiply_low(c[0], constants::multiplier0);
      const vec high1 = ops::multiply_high(c[2], constants::multiplier1);
      const vec low1 = ops::multiply_low(c[2], constants::multiplier1);
      c[0] = ops::xor_(ops::xor_(high1, c[1]), ops::set1(key0));
      c[1] = low1;
      c[2] = ops::xor_(ops::xor_(high0, c[3]), ops::set1(key1));
      c[3] = low0;
      key0 += constants::weyl0;
      key1 += constants::weyl1;
    }
    ops::transpose_blocks(c, random);
  }

  // out[i] = philox_bits(seed, tensor, step, first + i) for i < n: the vector Philox of
  // encode_stochastic, for the stochastic rounding that runs element by element (the narrow
  // integers' packing, the block quantisers' words: bulk/random_words.hpp).  A short end still
  // takes a whole vector of blocks, of which it keeps what it needs.
  static void philox_words(std::uint64_t seed, std::uint32_t tensor, std::uint32_t step, std::uint64_t first,
                           std::size_t n, std::uint32_t* out) {
    using vec = typename ops::vec;
    constexpr std::size_t width = ops::width;
    const auto scalar = [&](std::size_t i) { out[i] = philox_bits(seed, tensor, step, first + i); };
    std::size_t i = 0;
    for (; i < n && (first + i) % 4 != 0; ++i) scalar(i);  // to a block boundary
    while (i < n) {
      const std::uint64_t block = (first + i) / 4;
      const std::size_t take = std::min(n - i, 4 * width);
      if (static_cast<std::uint32_t>(block) > 0xFFFFFFFFu - (width - 1)) {  // the low word would wrap
        for (std::size_t k = 0; k < take; ++k) scalar(i + k);
      } else {
        vec random[4];
        philox_lanes(seed, block, random, tensor, step);
        if (take == 4 * width) {
          for (std::size_t g = 0; g < 4; ++g) ops::store(out + i + g * width, random[g], false);
        } else {
          std::uint32_t words[4 * width];
          for (std::size_t g = 0; g < 4; ++g) ops::store(words + g * width, random[g], false);
          std::memcpy(out + i, words, take * sizeof(std::uint32_t));
        }
      }
      i += take;
    }
  }

  // convert_stochastic_n's kernel: element i (global index first + i) rounds with
  // philox_bits(seed, first + i), as the scalar loop does.  Philox is the cost here (about 25
  // vector instructions per random word), so the output is not streamed.
  // stochastic_rule::equal_probability runs the proportional lanes on a word of all ones where
  // the random word's top bit is set and zero elsewhere: lost + ~0 carries out of 32 bits exactly
  // when something was lost, and lost + 0 never does, which is the scalar rule (round_up's
  // stochastic_equal).  The vector lanes read every lost bit (a shift of at most 32; lanes shifted
  // further are the scalar function's), so "something was lost" is exact there.
  template <class To>
  static void encode_stochastic(const float* in, std::size_t n, To* out, overflow o, std::uint64_t seed,
                                std::uint64_t first, stochastic_rule rule) {
    using vec = typename ops::vec;
    constexpr int bits = format_traits<typename To::format>::storage_bits;
    constexpr std::size_t width = ops::width;
    const round_mode mode = stochastic_mode(rule);
    const bool equal = rule == stochastic_rule::equal_probability;
    const auto scalar = [&](std::size_t i) {
      out[i] = convert_value<To>(in[i], mode, o, philox_bits(seed, first + i));
    };
    std::size_t i = 0;
    for (; i < n && (first + i) % 4 != 0; ++i) scalar(i);  // to a block boundary
    for (; i + 4 * width <= n; i += 4 * width) {
      const std::uint64_t block = (first + i) / 4;
      if (static_cast<std::uint32_t>(block) > 0xFFFFFFFFu - (width - 1)) {  // the low word would wrap
        for (std::size_t k = 0; k < 4 * width; ++k) scalar(i + k);
        continue;
      }
      vec random[4];
      philox_lanes(seed, block, random);
      if (equal) {
        for (vec& r : random) r = ops::sign_fill(r);
      }
      for (std::size_t g = 0; g < 4; ++g) {
        const std::size_t at = i + g * width;
        typename ops::mask exact;
        ops::template store_codes<bits>(
            out + at, encode_lanes<To, round_mode::stochastic>(ops::load(in + at), exact, random[g]), false);
        const unsigned done = ops::lanes(exact);
        if (done != ops::all_lanes) {
          for (std::size_t lane = 0; lane < width; ++lane) {
            if ((done >> lane & 1u) == 0) scalar(at + lane);
          }
        }
      }
    }
    philox_sequence rest(seed, first + i);
    for (; i < n; ++i) out[i] = convert_value<To>(in[i], mode, o, rest.next());
  }

  // The indices i of [0, n) with 0 < |in[i]| < the float whose bits are `limit` (NaN bits lie
  // above every limit), in increasing order, into `found`; returns how many.  subnormals::flush's
  // scan (bulk/convert_n.hpp): the few inputs that rule changes are redone by the scalar function.
  static std::size_t find_small_magnitudes(const float* in, std::size_t n, std::uint32_t limit, std::uint32_t* found) {
    using vec = typename ops::vec;
    constexpr std::size_t width = ops::width;
    const vec absolute = ops::set1(0x7FFFFFFFu), zero = ops::set1(0), top = ops::set1(limit);
    std::size_t count = 0, i = 0;
    for (; i + width <= n; i += width) {
      const vec magnitude = ops::and_(ops::load(in + i), absolute);  // < 2^31: the signed compares are right
      unsigned small = ops::lanes(ops::but_not(ops::less(magnitude, top), ops::equal(magnitude, zero)));
      while (small != 0) {
        found[count++] = static_cast<std::uint32_t>(i + static_cast<std::size_t>(__builtin_ctz(small)));
        small &= small - 1;
      }
    }
    for (; i < n; ++i) {
      const std::uint32_t magnitude = bit_cast<std::uint32_t>(in[i]) & 0x7FFFFFFFu;
      if (magnitude != 0 && magnitude < limit) found[count++] = static_cast<std::uint32_t>(i);
    }
    return count;
  }

  // In place, g[i] = g[i] × factor with one float multiply per element (when Multiply), and the
  // largest |g[i]| before it returned as float bits, NaN bits winning (as encode_groups): the
  // fused unscale and inf/NaN check of loss scaling (scaling/unscale.hpp).
  template <bool Multiply>
  static std::uint32_t multiply_in_place(float* g, std::size_t n, float factor) {
    using vec = typename ops::vec;
    constexpr std::size_t width = ops::width;
    const vec absolute = ops::set1(0x7FFFFFFFu);
    vec largest = ops::set1(0);
    std::size_t i = 0;
    for (; i + 4 * width <= n; i += 4 * width) {  // four vectors per step: one loop branch per 4 loads
      for (std::size_t k = 0; k < 4; ++k) {
        const vec x = ops::load(g + i + k * width);
        largest = ops::max_u(largest, ops::and_(x, absolute));
        if constexpr (Multiply) ops::store(g + i + k * width, ops::multiply_float(x, factor), false);
      }
    }
    for (; i + width <= n; i += width) {
      const vec x = ops::load(g + i);
      largest = ops::max_u(largest, ops::and_(x, absolute));
      if constexpr (Multiply) ops::store(g + i, ops::multiply_float(x, factor), false);
    }
    std::uint32_t result = ops::horizontal_max_u(largest);
    for (; i < n; ++i) {
      result = std::max(result, bit_cast<std::uint32_t>(g[i]) & 0x7FFFFFFFu);
      if constexpr (Multiply) g[i] = g[i] * factor;
    }
    return result;
  }

  // Block quantisation for the OCP MX formats (mx/quantize.hpp): `blocks` blocks of 32 floats
  // at in + 32 b.  For each, the largest |x| (as float bits, NaN bits above infinity's) goes to
  // `factor_of(b, largest, code)`, which stores the block's scale code in `code` and returns the
  // power of two to multiply by (from `largest`, or from an amax it holds for block b: a 32 × 32
  // tile's, shared by its blocks); the codes of convert<To>(x × factor, nearest_even, saturate)
  // go to out + b × out_stride (bytes), one byte each (CodeBits 8) or packed as mx/packing.hpp
  // packs them (CodeBits 6: four in three bytes; 4: two to a byte), the scale code to
  // scale_codes[b × scale_stride].  A factor of 0 marks a block with no finite scale (inf or NaN
  // in it): its codes are all zero.  Otherwise every x × factor is finite (the factor comes from
  // a finite amax at least the block's), so saturation is a clamp of the rounded code, and every
  // lane is exact: encode_lanes rejects only lanes at or above To's largest finite value (clamped
  // here), NaN and infinity (absent), and, below the normal range, nothing for a signed format
  // with subnormals whose smallest quantum is a float normal under nearest-even (asserted below).
  // tests/mx/quantize_test.cpp checks every path against the scalar function bit for bit.
  template <class To, class FactorOf, int CodeBits = 8>
  static void encode_blocks(const float* in, std::size_t blocks, unsigned char* out, std::size_t out_stride,
                            unsigned char* scale_codes, std::size_t scale_stride, FactorOf factor_of) {
    using vec = typename ops::vec;
    using to = format_traits<typename To::format>;
    static_assert(to::storage_bits == 8 && to::is_signed && to::has_subnormals && to::min_quantum_exponent >= -126,
                  "the MX element types: one byte, signed, subnormals within float's normal range");
    static_assert(CodeBits == 8 || (CodeBits == 6 && to::total_bits <= 6) || (CodeBits == 4 && to::total_bits <= 4),
                  "codes of 8 bits, or of 6 or 4 packed as mx/packing.hpp packs them");
    constexpr std::size_t width = ops::width, block = 32, vectors = block / width;
    static_assert(block % width == 0, "a block is a whole number of vectors");
    // `width` blocks at a time, in three passes: their amaxes (block_magnitude_bits: all of them
    // reduced at once, not one horizontal maximum per block); their scales, by the scalar rule;
    // their codes, the blocks read again from L1.  The passes do not wait on each other block by
    // block, as one pass per block did (amax, then scale, then codes: a chain of about 50 cycles).
    for (std::size_t first = 0; first < blocks; first += width) {
      const std::size_t count = std::min<std::size_t>(width, blocks - first);
      const float* group = in + first * block;
      std::uint32_t amax[width];
      block_magnitude_bits<block>(group, count, amax);
      float factors[width];
      std::uint32_t unscaled = 0;  // bit j: block first + j has no finite scale
      for (std::size_t j = 0; j < count; ++j) {
        std::uint8_t code = 0;
        factors[j] = factor_of(first + j, amax[j], code);
        scale_codes[(first + j) * scale_stride] = code;
        unscaled |= static_cast<std::uint32_t>(factors[j] == 0.0f) << j;
      }
      for (std::size_t j = 0; j < count; ++j) {
        const float* x = group + j * block;
        unsigned char* o = out + (first + j) * out_stride;
#pragma GCC unroll 8
        for (std::size_t k = 0; k < vectors; ++k) {
          typename ops::mask exact;
          const vec codes = encode_lanes<To, round_mode::nearest_even, true>(
              ops::multiply_float(ops::load(x + k * width), factors[j]), exact);
          ops::template store_codes<CodeBits>(o + k * width * CodeBits / 8, codes, false);
        }
      }
      // A block without a finite scale holds an inf or a NaN, whose codes above mean nothing
      // (×0 gives NaN): its codes are all zero.  Rare, so a repair rather than a mask per block.
      for (; unscaled != 0; unscaled &= unscaled - 1) {
        const auto j = static_cast<std::size_t>(__builtin_ctz(unscaled));
        std::memset(out + (first + j) * out_stride, 0, block * CodeBits / 8);
      }
    }
  }

  // The random Hadamard transform of 16 rows × `columns` columns of a (row-major, lda; columns a
  // multiple of the width) into out (row-major, ldo), column by column as blockscale/hadamard.hpp's
  // rht16 transforms 16 values: row i multiplied by -1/4 where bit i of `negative` is set, else
  // 1/4, then the butterflies h = 1, 2, 4, 8 in rht16's order, one vector of columns at a time with
  // all 16 rows in registers.  The products pass through ops::opaque so that none is fused with
  // the first addition: every value is rht16's bit for bit (tests/blockscale/hadamard_test.cpp).
  static void rht16_columns(const float* a, std::size_t lda, std::size_t columns, std::uint32_t negative, float* out,
                            std::size_t ldo) {
    using vec = typename ops::vec;
    constexpr std::size_t width = ops::width, points = 16;
    for (std::size_t c = 0; c + width <= columns; c += width) {
      vec v[points];
#pragma GCC unroll 16
      for (std::size_t i = 0; i < points; ++i) {
        const float factor = (negative >> i & 1u) != 0 ? -0.25f : 0.25f;
        v[i] = ops::opaque(ops::multiply_float(ops::load(a + i * lda + c), factor));
      }
#pragma GCC unroll 4
      for (std::size_t h = 1; h < points; h *= 2) {
#pragma GCC unroll 16
        for (std::size_t i = 0; i < points; ++i) {
          if ((i & h) != 0) continue;
          const vec x = v[i], y = v[i + h];
          v[i] = ops::add_float(x, y);
          v[i + h] = ops::subtract_float(x, y);
        }
      }
#pragma GCC unroll 16
      for (std::size_t i = 0; i < points; ++i) ops::store(out + i * ldo + c, v[i], false);
    }
  }

  // The largest |x| (as float bits, NaN bits above infinity's) of each of `blocks` blocks of Block
  // consecutive floats at in + Block·b, into largest[b]: the block amaxes of NVFP4, fp8 blocks and
  // MX (encode_blocks), a vector's width of blocks reduced together (ops::horizontal_max_u_each).
  template <std::size_t Block>
  static void block_magnitude_bits(const float* in, std::size_t blocks, std::uint32_t* largest) {
    using vec = typename ops::vec;
    constexpr std::size_t width = ops::width, vectors = Block / width;
    static_assert(Block % width == 0, "a block is a whole number of vectors");
    const vec absolute = ops::set1(0x7FFF'FFFFu);
    for (std::size_t b = 0; b < blocks; b += width) {  // `width` blocks' maxima reduced together
      const std::size_t count = std::min<std::size_t>(width, blocks - b);
      vec m[width];
#pragma GCC unroll 16
      for (std::size_t j = 0; j < width; ++j) {
        m[j] = ops::set1(0);  // past the last block: zero, not read back
        if (j >= count) continue;
        const float* x = in + (b + j) * Block;
#pragma GCC unroll 8
        for (std::size_t k = 0; k < vectors; ++k)
          m[j] = ops::max_u(m[j], ops::and_(ops::load(x + k * width), absolute));
      }
      if (count == width) {
        ops::store(largest + b, ops::horizontal_max_u_each(m), false);
      } else {
        std::uint32_t each[width];
        ops::store(each, ops::horizontal_max_u_each(m), false);
        std::memcpy(largest + b, each, count * sizeof(std::uint32_t));
      }
    }
  }

  // The codes of convert<To>(x · factors[b], nearest_even, saturate), or of x / factors[b] with
  // Divide, for the Block floats of each block b at in + Block·b, into codes + out_stride·b (bytes):
  // one byte per code (CodeBits 8) or two codes per byte (CodeBits 4, element 2k in the low nibble,
  // as mx/packing.hpp).  A NaN factor marks a block without a finite scale: its codes are all zero.
  // Lanes the vector rounding cannot finish (a product at or beyond To's overflow threshold, NaN)
  // are redone by the scalar conversion of the same float product or quotient, so every code is
  // the scalar one (tests/blockscale/nvfp4_quantize_test.cpp checks every path).  With Stochastic,
  // element p of block b rounds stochastically with the word words[Block·b + p] instead (its
  // random bits at the top, as block_stochastic_rounding::word gives them), saturating.
  template <class To, bool Divide, std::size_t Block, int CodeBits, bool Stochastic = false>
  static void encode_scaled_blocks(const float* in, std::size_t blocks, const float* factors, unsigned char* codes,
                                   std::size_t out_stride, const std::uint32_t* words = nullptr) {
    constexpr round_mode mode = Stochastic ? round_mode::stochastic : round_mode::nearest_even;
    using vec = typename ops::vec;
    constexpr std::size_t width = ops::width, vectors = Block / width;
    static_assert(Block % width == 0 && width * CodeBits % 8 == 0, "a block is whole vectors of whole bytes");
    static_assert(format_traits<typename To::format>::total_bits <= CodeBits && (CodeBits == 8 || CodeBits == 4),
                  "the codes fit their field");
    for (std::size_t b = 0; b < blocks; ++b) {
      const float* x = in + b * Block;
      unsigned char* o = codes + b * out_stride;
      const float f = factors[b];
      if (f != f) {
        std::memset(o, 0, Block * CodeBits / 8);
        continue;
      }
#pragma GCC unroll 8
      for (std::size_t k = 0; k < vectors; ++k) {
        const vec v = ops::load(x + k * width);
        const std::uint32_t* random = Stochastic ? words + b * Block + k * width : nullptr;
        typename ops::mask exact;
        vec lanes = encode_lanes<To, mode>(Divide ? ops::divide_float(v, f) : ops::multiply_float(v, f), exact,
                                           Stochastic ? ops::load(random) : typename ops::vec{});
        const unsigned done = ops::lanes(exact);
        if (done != ops::all_lanes) {
          std::uint32_t fixed[width];
          ops::store(fixed, lanes, false);
          for (std::size_t lane = 0; lane < width; ++lane) {
            if ((done >> lane & 1u) != 0) continue;
            const float y = Divide ? x[k * width + lane] / f : x[k * width + lane] * f;
            fixed[lane] = convert_value<To>(y, mode, overflow::saturate, Stochastic ? random[lane] : 0).bits();
          }
          lanes = ops::load(fixed);
        }
        ops::template store_codes<CodeBits>(o + k * width * CodeBits / 8, lanes, false);
      }
    }
  }
};  // struct kernels
