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

TEST_CASE("every format of the library is compared, float32 first and the two scale formats last") {
  const std::vector<std::string> all = selected(format_selection{});
  REQUIRE(all.size() == 16);
  CHECK(all.front() == "float32");
  CHECK(all[1] == "float16");
  CHECK(all[all.size() - 2] == "float8_e8m0fnu");
  CHECK(all.back() == "float8_ue4m3");
}

TEST_CASE("the C++ names are the library's own") {
  for_each_format(format_selection{}, [](auto tag, const format_name& name) {
    using T = typename decltype(tag)::type;
    if (std::string(name.type) != "float32") CHECK(mixprec::format_name<typename T::format>() == name.type);
  });
}

TEST_CASE("--formats takes aliases and C++ names, in table order") {
  CHECK(selected(format_selection::parse("fp16,float8_e4m3fn,e2m1fn")) ==
        std::vector<std::string>{"float16", "float8_e4m3fn", "float4_e2m1fn"});
  CHECK(selected(format_selection::parse("bf16")) == std::vector<std::string>{"bfloat16"});
}

TEST_CASE("an unknown format name is a usage error that lists the known ones") {
  using Catch::Matchers::Contains;
  CHECK_THROWS_MATCHES(format_selection::parse("fp16,fp7"), usage_error,
                       Catch::Matchers::Message(
                           "--formats: unknown format 'fp7' (known: fp32, fp16, bf16, tf32, e4m3fn, e5m2, e4m3fnuz, "
                           "e5m2fnuz, e4m3, e3m4, e4m3b11fnuz, e3m2fn, e2m3fn, e2m1fn, e8m0fnu or ue4m3, or their C++ "
                           "names such as float8_e4m3fn)"));
  CHECK_THROWS_AS(format_selection::parse(""), usage_error);
  CHECK_THROWS_AS(format_selection::parse("fp16,"), usage_error);
}

TEST_CASE("only e8m0 and ue4m3 are scale formats; the MX element formats are the five OCP ones") {
  CHECK(holds_values<float32>);
  CHECK(holds_values<mixprec::float4_e2m1fn>);
  CHECK_FALSE(holds_values<mixprec::float8_e8m0fnu>);
  CHECK_FALSE(holds_values<mixprec::float8_ue4m3>);
  CHECK(holds_values<mixprec::tfloat32>);
  CHECK(is_mx_element<mixprec::float8_e4m3fn>);
  CHECK(is_mx_element<mixprec::float6_e2m3fn>);
  CHECK_FALSE(is_mx_element<mixprec::float8_e4m3fnuz>);
  CHECK_FALSE(is_mx_element<mixprec::float16>);
}
