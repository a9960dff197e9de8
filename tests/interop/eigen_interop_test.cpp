// interop/eigen.hpp: Eigen::half <-> float16 and Eigen::bfloat16 <-> bfloat16 are bit copies,
// every code survives both ways, and the values agree with Eigen's own float conversion.
#include <mixprec/interop/eigen.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <type_traits>

#include "interop_check.hpp"

using namespace mixprec;

namespace {

template <class Native>
Native eigen_from_code(std::uint16_t code) {
  return Eigen::numext::bit_cast<Native>(code);
}
template <class Native>
std::uint16_t eigen_code(const Native& value) {
  return Eigen::numext::bit_cast<std::uint16_t>(value);
}
template <class T>
auto to_eigen(T x) {
  return interop::to_eigen(x);
}

}  // namespace

TEST_CASE("Eigen scalars convert to and from their mixprec twins explicitly", "[interop][eigen]") {
  STATIC_REQUIRE(std::is_constructible<float16, Eigen::half>::value);
  STATIC_REQUIRE(std::is_constructible<bfloat16, Eigen::bfloat16>::value);
  STATIC_REQUIRE(!std::is_convertible<Eigen::half, float16>::value);
  STATIC_REQUIRE(!std::is_convertible<float16, Eigen::half>::value);
  STATIC_REQUIRE(!std::is_convertible<Eigen::bfloat16, bfloat16>::value);
  STATIC_REQUIRE(!std::is_convertible<bfloat16, Eigen::bfloat16>::value);
}

TEST_CASE("an Eigen scalar into a different format is a value conversion through float, rounded once",
          "[interop][eigen]") {
  // Eigen::half converts implicitly (and exactly) to float, so bfloat16(Eigen::half) is the
  // float constructor: a rounding, not a bit copy.
  const Eigen::half h(0.1f);
  CHECK(bfloat16(h).bits() == bfloat16(static_cast<float>(h)).bits());
  CHECK(float8_e4m3fn(Eigen::bfloat16(500.0f)).bits() == 0x7F);  // 500 is beyond 464: NaN
}

TEST_CASE("every Eigen::half code round-trips through float16 and has Eigen's float value", "[interop][eigen]") {
  const auto report = mixprec_test::check_every_code<float16, Eigen::half>(eigen_from_code<Eigen::half>,
                                                                           eigen_code<Eigen::half>, to_eigen<float16>);
  INFO(report.text());
  CHECK(report.codes == 65536);
  CHECK(report.nan_codes == 2 * 1023);
  CHECK(report.failures.empty());
}

TEST_CASE("every Eigen::bfloat16 code round-trips through bfloat16 and has Eigen's float value", "[interop][eigen]") {
  const auto report = mixprec_test::check_every_code<bfloat16, Eigen::bfloat16>(
      eigen_from_code<Eigen::bfloat16>, eigen_code<Eigen::bfloat16>, to_eigen<bfloat16>);
  INFO(report.text());
  CHECK(report.codes == 65536);
  CHECK(report.nan_codes == 2 * 127);
  CHECK(report.failures.empty());
}

TEST_CASE("static_cast to an Eigen scalar takes Eigen's constructor: the same value, NaN payloads canonical",
          "[interop][eigen]") {
  // Eigen's `template <class T> explicit half(T)` wins over minifloat's conversion operator and
  // goes through float; interop::to_eigen is the bit copy.
  for (std::uint32_t code = 0; code < 65536; ++code) {
    const auto c = static_cast<std::uint16_t>(code);
    const auto h = float16::from_bits(c);
    const auto b = bfloat16::from_bits(c);
    const std::uint16_t h_cast = eigen_code(static_cast<Eigen::half>(h));
    const std::uint16_t b_cast = eigen_code(static_cast<Eigen::bfloat16>(b));
    if (std::isnan(static_cast<float>(h))) {
      CHECK((h_cast & 0x7FFF) == 0x7E00);
    } else if (h_cast != c) {
      FAIL_CHECK("float16 0x" << std::hex << code << " -> Eigen::half 0x" << h_cast);
    }
    if (std::isnan(static_cast<float>(b))) {
      CHECK((b_cast & 0x7FC0) == 0x7FC0);
    } else if (b_cast != c) {
      FAIL_CHECK("bfloat16 0x" << std::hex << code << " -> Eigen::bfloat16 0x" << b_cast);
    }
  }
}

TEST_CASE("a value built by Eigen reads as the same number in mixprec", "[interop][eigen]") {
  CHECK(float16(Eigen::half(0.1f)).bits() == float16(0.1f).bits());
  CHECK(static_cast<float>(float16(Eigen::half(-65504.0f))) == -65504.0f);
  CHECK(bfloat16(Eigen::bfloat16(3.0f)).bits() == 0x4040);
  CHECK(eigen_code(interop::to_eigen(bfloat16(-2.0f))) == 0xC000);
}
