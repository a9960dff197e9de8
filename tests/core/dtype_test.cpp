// dtype.hpp: the run-time element types map to the static ones and back, names parse, and
// promote_types picks a dtype that holds both inputs exactly (checked code by code).
#include <mixprec/dtype.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

using namespace mixprec;

namespace {

// Every value of dtype d (every code, as float; float32: a spread of values and specials).
std::vector<float> values_of(dtype d) {
  return visit_dtype(d, [](auto tag) {
    using T = typename decltype(tag)::type;
    std::vector<float> values;
    if constexpr (std::is_same<T, float>::value) {
      for (float v : {0.0f, -0.0f, 1.0f, 0x1p-149f, 0x1.fffffep127f, INFINITY, -INFINITY, NAN, 1.0f + 0x1p-23f})
        values.push_back(v);
    } else {
      using traits = format_traits<typename T::format>;
      for (std::uint32_t c = 0; c < (1u << traits::total_bits); ++c) {
        values.push_back(static_cast<float>(T::from_bits(static_cast<typename T::storage_type>(c))));
      }
    }
    return values;
  });
}

// Whether every value of `narrow` converts to `wide` and back unchanged (NaN to NaN).
bool holds_by_brute_force(dtype wide, dtype narrow) {
  for (float v : values_of(narrow)) {
    const float back = visit_dtype(wide, [&](auto tag) {
      using T = typename decltype(tag)::type;
      return static_cast<float>(static_cast<T>(v));
    });
    if (std::isnan(v) ? !std::isnan(back) : (back != v || std::signbit(back) != std::signbit(v))) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("dtype_of and visit_dtype are inverse", "[dtype]") {
  for (dtype d : all_dtypes) {
    const dtype back = visit_dtype(d, [](auto tag) { return dtype_of<typename decltype(tag)::type>; });
    CHECK(back == d);
  }
  STATIC_REQUIRE(dtype_of<float> == dtype::float32);
  STATIC_REQUIRE(dtype_of<float8_e4m3fn> == dtype::float8_e4m3fn);
  STATIC_REQUIRE(std::is_same<dtype_type_t<dtype::float16>, float16>::value);
  STATIC_REQUIRE(is_dtype_type<bfloat16>);
  STATIC_REQUIRE(!is_dtype_type<double>);
}

TEST_CASE("dtype sizes are the storage sizes", "[dtype]") {
  CHECK(size_of(dtype::float32) == 4);
  CHECK(size_of(dtype::bfloat16) == 2);
  CHECK(size_of(dtype::float8_e5m2) == 1);
  CHECK(size_of(dtype::float4_e2m1fn) == 1);
}

TEST_CASE("dtype names round-trip and the usual aliases parse", "[dtype]") {
  for (dtype d : all_dtypes) CHECK(parse_dtype(to_string(d)) == d);
  CHECK(parse_dtype("bf16") == dtype::bfloat16);
  CHECK(parse_dtype("fp16") == dtype::float16);
  CHECK(parse_dtype("half") == dtype::float16);
  CHECK(parse_dtype("fp32") == dtype::float32);
  CHECK(parse_dtype("e4m3") == dtype::float8_e4m3fn);
  CHECK(parse_dtype("fp8_e5m2") == dtype::float8_e5m2);
}

TEST_CASE("an unknown dtype name is an error that lists the allowed names", "[dtype]") {
  CHECK_THROWS_AS(parse_dtype("float64"), invalid_argument);
  CHECK_THROWS_WITH(parse_dtype("BF16"), Catch::Contains("unknown dtype 'BF16'") && Catch::Contains("bfloat16"));
  CHECK_THROWS_AS(parse_dtype(""), invalid_argument);
}

TEST_CASE("holds_all_values_of agrees with a code-by-code check for every pair", "[dtype]") {
  for (dtype wide : all_dtypes) {
    for (dtype narrow : all_dtypes) {
      if (narrow == dtype::float32 && wide != dtype::float32) {
        CHECK_FALSE(holds_all_values_of(wide, narrow));  // no format here holds every float
        continue;
      }
      INFO(to_string(wide) << " holds " << to_string(narrow));
      CHECK(holds_all_values_of(wide, narrow) == holds_by_brute_force(wide, narrow));
    }
  }
}

TEST_CASE("promote_types is symmetric, holds both inputs, and follows torch.promote_types on fp16/bf16", "[dtype]") {
  for (dtype a : all_dtypes) {
    for (dtype b : all_dtypes) {
      const dtype p = promote_types(a, b);
      CHECK(p == promote_types(b, a));
      CHECK(holds_all_values_of(p, a));
      CHECK(holds_all_values_of(p, b));
    }
  }
  CHECK(promote_types(dtype::float16, dtype::bfloat16) == dtype::float32);
  CHECK(promote_types(dtype::bfloat16, dtype::float32) == dtype::float32);
  CHECK(promote_types(dtype::float8_e4m3fn, dtype::bfloat16) == dtype::bfloat16);
  CHECK(promote_types(dtype::float8_e4m3fn, dtype::float8_e5m2) == dtype::float32);
}
