#include "format_comparison/formats.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace mixprec_example;

namespace {
std::vector<std::string> selected(const format_selection& selection) {
  std::vector<std::string> names;
  for_each_format(selection, [&](auto, const format_name& name) { names.emplace_back(name.type); });
  return names;
}
}  // namespace

TEST_CASE("every format of the library is compared: float32 first, the two scale formats, then the integers") {
  const std::vector<std::string> all = selected(format_selection{});
  REQUIRE(all.size() == 22);
  CHECK(all.front() == "float32");
  CHECK(all[1] == "float16");
  CHECK(all[14] == "float8_e8m0fnu");
  CHECK(all[15] == "float8_ue4m3");
  CHECK(std::vector<std::string>(all.begin() + 16, all.end()) ==
        std::vector<std::string>{"int4", "uint4", "int2", "uint2", "int1", "uint1"});
}

TEST_CASE("the C++ names are the library's own") {
  int integers = 0;
  for_each_format(format_selection{}, [&](auto tag, const format_name& name) {
    using T = typename decltype(tag)::type;
    if constexpr (is_narrow_integer<T>) {
      CHECK(std::string(T::is_signed ? "int" : "uint") + std::to_string(T::bits_per_value) == name.type);
      ++integers;
    } else if (std::string(name.type) != "float32") {
      CHECK(mixprec::format_name<typename T::format>() == name.type);
    }
  });
  CHECK(integers == 6);
}

TEST_CASE("--formats takes aliases and C++ names, in table order") {
  CHECK(selected(format_selection::parse("fp16,float8_e4m3fn,e2m1fn")) ==
        std::vector<std::string>{"float16", "float8_e4m3fn", "float4_e2m1fn"});
  CHECK(selected(format_selection::parse("bf16")) == std::vector<std::string>{"bfloat16"});
  CHECK(selected(format_selection::parse("uint1,int4")) == std::vector<std::string>{"int4", "uint1"});
}

TEST_CASE("an unknown format name is a usage error that lists the known ones") {
  using Catch::Matchers::Contains;
  CHECK_THROWS_MATCHES(format_selection::parse("fp16,fp7"), usage_error,
                       Catch::Matchers::Message(
                           "--formats: unknown format 'fp7' (known: fp32, fp16, bf16, tf32, e4m3fn, e5m2, e4m3fnuz, "
                           "e5m2fnuz, e4m3, e3m4, e4m3b11fnuz, e3m2fn, e2m3fn, e2m1fn, e8m0fnu, ue4m3, int4, uint4, "
                           "int2, uint2, int1 or uint1, or their C++ names such as float8_e4m3fn)"));
  CHECK_THROWS_AS(format_selection::parse(""), usage_error);
  CHECK_THROWS_AS(format_selection::parse("fp16,"), usage_error);
}

TEST_CASE("the measurements of values use the signed formats; the MX element formats are the five OCP ones") {
  CHECK(holds_values<float32>);
  CHECK(holds_values<mixprec::float4_e2m1fn>);
  CHECK_FALSE(holds_values<mixprec::float8_e8m0fnu>);
  CHECK_FALSE(holds_values<mixprec::float8_ue4m3>);
  CHECK(holds_values<mixprec::tfloat32>);
  CHECK(holds_values<mixprec::int4>);
  CHECK(holds_values<mixprec::int1>);
  CHECK_FALSE(holds_values<mixprec::uint4>);
  CHECK_FALSE(holds_values<mixprec::uint1>);
  CHECK(is_mx_element<mixprec::float8_e4m3fn>);
  CHECK(is_mx_element<mixprec::float6_e2m3fn>);
  CHECK_FALSE(is_mx_element<mixprec::float8_e4m3fnuz>);
  CHECK_FALSE(is_mx_element<mixprec::float16>);
  CHECK_FALSE(is_mx_element<mixprec::int4>);
}

TEST_CASE("block scaling measures the MX elements, int4 and int2; the integers do not accumulate") {
  CHECK(is_block_scaled_element<mixprec::float4_e2m1fn>);
  CHECK(is_block_scaled_element<mixprec::int4>);
  CHECK(is_block_scaled_element<mixprec::int2>);
  CHECK_FALSE(is_block_scaled_element<mixprec::int1>);  // -1 and 0: no positive value to scale to
  CHECK_FALSE(is_block_scaled_element<mixprec::uint4>);
  CHECK_FALSE(is_block_scaled_element<mixprec::float16>);
  CHECK(accumulates_in_own_arithmetic<mixprec::float16>);
  CHECK_FALSE(accumulates_in_own_arithmetic<mixprec::int4>);
  CHECK_FALSE(accumulates_in_own_arithmetic<mixprec::float8_ue4m3>);
}

TEST_CASE("the element emax of floats and integers is floor(log2(max))") {
  // e2m1's 6 = 1.5 * 2^2, e4m3fn's 448 = 1.75 * 2^8; int4's 7, int2's 1, uint4's 15.
  CHECK(element_emax<mixprec::float4_e2m1fn>() == 2);
  CHECK(element_emax<mixprec::float8_e4m3fn>() == 8);
  CHECK(element_emax<mixprec::int4>() == 2);
  CHECK(element_emax<mixprec::int2>() == 0);
  CHECK(element_emax<mixprec::uint4>() == 3);
}
