// scaling/nonfinite.hpp and the culprits a loss_scaler keeps: the first inf/NaN of a list of
// gradient arrays by array, element and kind, planted at every position class (first, last, the
// 256-element block edges of the search, a vector tail, the 517th element of the 4th of 1000
// arrays) in float, bfloat16 and float16, after an unscale on every SIMD path; the statistics,
// their JSON, the skip log and the skip-limit message that name it.
#include <mixprec/bulk/simd_path.hpp>
#include <mixprec/scaling/loss_scaler.hpp>
#include <mixprec/scaling/nonfinite.hpp>
#include <mixprec/types.hpp>

#include <catch2/catch.hpp>

#include "simd_paths.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

using namespace mixprec;

namespace {

constexpr float inf = std::numeric_limits<float>::infinity();

// A non-finite value of each kind in T, NaNs with several payloads (quiet and signalling).
template <class T>
std::vector<std::pair<T, nonfinite_kind>> planted_values() {
  std::vector<std::pair<T, nonfinite_kind>> values = {{T(inf), nonfinite_kind::positive_infinity},
                                                      {T(-inf), nonfinite_kind::negative_infinity}};
  if constexpr (std::is_same<T, float>::value) {
    for (std::uint32_t bits : {0x7FC0'0000u, 0x7F80'0001u, 0xFFFF'FFFFu}) {
      float f;
      std::memcpy(&f, &bits, sizeof f);
      values.emplace_back(f, nonfinite_kind::nan);
    }
  } else {
    const std::uint16_t top = std::is_same<T, bfloat16>::value ? 0x7F80u : 0x7C00u;
    for (std::uint16_t bits :
         {static_cast<std::uint16_t>(top | 1u), static_cast<std::uint16_t>(top | 0x8040u), std::uint16_t{0xFFFF}}) {
      values.emplace_back(T::from_bits(bits), nonfinite_kind::nan);
    }
  }
  return values;
}

// Finite values of every magnitude class: zeros, subnormals, the largest finite.
template <class T>
std::vector<T> finite_values(std::size_t n) {
  std::vector<T> v(n);
  const T largest = std::numeric_limits<T>::max(), tiny = std::numeric_limits<T>::denorm_min();
  for (std::size_t i = 0; i < n; ++i) {
    switch (i % 5) {
      case 0:
        v[i] = T(0.0f);
        break;
      case 1:
        v[i] = tiny;
        break;
      case 2:
        v[i] = largest;
        break;
      case 3:
        v[i] = T(-static_cast<float>(largest));
        break;
      default:
        v[i] = T(static_cast<float>(i) * 0.25f);
    }
  }
  return v;
}

template <class T>
void check_one_array() {
  INFO(to_string(dtype_of<T>));
  for (const std::size_t n : {std::size_t{1}, std::size_t{15}, std::size_t{256}, std::size_t{257}, std::size_t{1000}}) {
    std::vector<T> v = finite_values<T>(n);
    CHECK_FALSE(find_first_nonfinite(v.data(), n).has_value());
    for (const std::size_t at : {std::size_t{0}, n / 2, std::size_t{255}, std::size_t{256}, n - 1}) {
      if (at >= n) continue;
      for (const auto& [value, kind] : planted_values<T>()) {
        std::vector<T> w = v;
        w[at] = value;
        if (at + 1 < n) w[n - 1] = T(-inf);  // a later one is not the first
        INFO("n = " << n << ", at " << at << ", " << to_string(kind));
        const std::optional<nonfinite_element> found = find_first_nonfinite(w.data(), n);
        REQUIRE(found.has_value());
        CHECK(*found == nonfinite_element{0, at, kind});
      }
    }
  }
  CHECK_FALSE(find_first_nonfinite(static_cast<const T*>(nullptr), 0).has_value());
  CHECK_THROWS_WITH(find_first_nonfinite(static_cast<const T*>(nullptr), 3),
                    Catch::Contains("find_first_nonfinite: null array pointer with n = 3"));
}

}  // namespace

TEST_CASE("find_first_nonfinite finds the first inf or NaN of one array and its kind", "[nonfinite]") {
  check_one_array<float>();
  check_one_array<bfloat16>();
  check_one_array<float16>();
  CHECK(to_string(nonfinite_element{3, 516, nonfinite_kind::negative_infinity}) == "array 3, element 516 (-inf)");
}

TEST_CASE("find_first_nonfinite over 1000 arrays of mixed types: the 517th element of the 4th", "[nonfinite]") {
  std::vector<std::vector<float>> floats;
  std::vector<std::vector<bfloat16>> halves;
  std::vector<gradient_view> views;
  floats.reserve(500);
  halves.reserve(500);
  for (std::size_t a = 0; a < 1000; ++a) {
    if (a % 2 == 0) {
      floats.push_back(finite_values<float>(600 + a));
      views.emplace_back(floats.back().data(), floats.back().size());
    } else {
      halves.push_back(finite_values<bfloat16>(600 + a));
      views.emplace_back(halves.back().data(), halves.back().size());
    }
  }
  CHECK_FALSE(find_first_nonfinite(views.data(), views.size()).has_value());
  halves[1][516] = bfloat16(-inf);                           // view 3
  floats[450][0] = std::numeric_limits<float>::quiet_NaN();  // view 900, after it
  CHECK(*find_first_nonfinite(views.data(), views.size()) ==
        nonfinite_element{3, 516, nonfinite_kind::negative_infinity});
  halves[1][516] = bfloat16(0.0f);
  CHECK(*find_first_nonfinite(views.data(), views.size()) == nonfinite_element{900, 0, nonfinite_kind::nan});
  CHECK_FALSE(find_first_nonfinite(views.data(), 0).has_value());
  CHECK_THROWS_WITH(find_first_nonfinite(static_cast<const gradient_view*>(nullptr), 2),
                    Catch::Contains("find_first_nonfinite: null array list with count = 2"));
}

TEST_CASE("the scaler names the first non-finite gradient after unscaling on every SIMD path",
          "[nonfinite][loss_scaler]") {
  for (simd_path p : {simd_path::portable, simd_path::avx2, simd_path::avx512, simd_path::avx512_bf16}) {
    if (!simd_path_supported(p)) continue;
    simd_path_guard guard(p);
    INFO("path " << to_string(p));
    for (const std::size_t at :
         {std::size_t{0}, std::size_t{17}, std::size_t{64}, std::size_t{1000}, std::size_t{1038}}) {
      loss_scaler<dynamic_scaling> scaler;
      std::vector<float> a(1039, scaler.scale(0.5f));
      std::vector<float16> b(77, float16(1.0f));
      std::vector<bfloat16> c(300, bfloat16(scaler.scale(-2.0f)));
      a[at] = -inf;
      c[299] = bfloat16(inf);
      CHECK_FALSE(scaler.unscale(
          {gradient_view(b.data(), b.size()), gradient_view(a.data(), a.size()), gradient_view(c.data(), c.size())}));
      scaler.step([] {});
      scaler.update();
      const scaler_statistics s = scaler.get_amp_stats();
      REQUIRE(s.culprits.size() == 1);
      CHECK(s.culprits[0] == overflow_culprit{0, 0, nonfinite_element{1, at, nonfinite_kind::negative_infinity}});
    }
  }
}

TEST_CASE("unscale_with_amax: each array's amax in the scaler's pass, the culprit and the skip as unscale's",
          "[nonfinite][loss_scaler][amax]") {
  for (simd_path p : {simd_path::portable, simd_path::avx2, simd_path::avx512, simd_path::avx512_bf16}) {
    if (!simd_path_supported(p)) continue;
    simd_path_guard guard(p);
    INFO("path " << to_string(p));
    loss_scaler<dynamic_scaling> scaler;  // scale 65536: unscaling divides by 2^16 exactly
    std::vector<float> a(1039, 0.0f);
    std::vector<float16> b(77, float16(0.0f));
    std::vector<bfloat16> c(300, bfloat16(0.0f));
    std::vector<float> empty;
    for (std::size_t k = 0; k < a.size(); ++k) a[k] = static_cast<float>(k % 7) - 3.0f;
    a[1038] = -4096.0f;  // the largest magnitude, in the vector tail
    b[40] = float16(1024.0f);
    for (std::size_t k = 0; k < c.size(); ++k) c[k] = bfloat16(static_cast<float>(k));
    const float c_max = static_cast<float>(c[299]);  // 299 rounded to bfloat16
    const std::vector<gradient_view> views = {gradient_view(a.data(), a.size()), gradient_view(b.data(), b.size()),
                                              gradient_view(c.data(), c.size()),
                                              gradient_view(empty.data(), empty.size())};
    std::vector<float> amax = {7.0f};  // resized and overwritten
    CHECK(scaler.unscale_with_amax(views, amax));
    REQUIRE(amax.size() == 4);
    CHECK(amax[0] == 4096.0f / 65536.0f);
    CHECK(amax[1] == 1024.0f / 65536.0f);
    CHECK(amax[2] == c_max / 65536.0f);
    CHECK(amax[3] == 0.0f);
    CHECK(a[1038] == -4096.0f / 65536.0f);  // and the arrays are unscaled as by unscale()
    scaler.step([] {});
    scaler.update();
    // An inf in b and a NaN in c: the amax says which, the step is skipped and the culprit is
    // unscale()'s (the first non-finite element: b's).
    b[3] = float16(-inf);
    c[5] = bfloat16::from_bits(0x7FC1);
    CHECK_FALSE(scaler.unscale_with_amax(views, amax));
    CHECK(amax[1] == inf);
    CHECK(std::isnan(amax[2]));
    scaler.step([] {});
    scaler.update();
    const scaler_statistics s = scaler.get_amp_stats();
    REQUIRE(s.culprits.size() == 1);
    CHECK(s.culprits[0].element == nonfinite_element{1, 3, nonfinite_kind::negative_infinity});
  }
  loss_scaler<dynamic_scaling> scaler;
  std::vector<float> g(4, 1.0f);
  const gradient_view view(g.data(), g.size());
  CHECK_THROWS_WITH(scaler.unscale_with_amax(&view, 1, nullptr),
                    Catch::Contains("loss_scaler::unscale_with_amax: null amax pointer for 1 arrays"));
  // The refused call opened no check: unscale() still runs once in this iteration.
  CHECK(scaler.unscale(&view, 1));
  std::vector<float> amax;
  CHECK_THROWS_AS(scaler.unscale_with_amax(std::vector<gradient_view>{view}, amax), scaler_usage_error);
}

TEST_CASE("culprits in the statistics, their JSON, the skip log and the skip-limit message",
          "[nonfinite][loss_scaler][statistics]") {
  scaler_options o;
  o.history_capacity = 2;
  std::vector<std::string> log;
  o.skip_log = [&](const std::string& line) { log.push_back(line); };
  loss_scaler<dynamic_scaling> scaler{dynamic_scaling{}, o};
  std::vector<float> w(10, 1.0f), b(3, 1.0f);
  const auto iterate = [&](std::size_t bad_view, std::size_t element, float value) {
    std::vector<float> gw = w, gb = b;
    if (bad_view == 0) gw[element] = value;
    if (bad_view == 1) gb[element] = value;
    scaler.unscale({gradient_view(gw.data(), gw.size()), gradient_view(gb.data(), gb.size())});
    scaler.step([] {});
    scaler.update();
  };
  iterate(1, 2, inf);                                      // iteration 0
  iterate(2, 0, 0.0f);                                     // 1: clean
  iterate(0, 9, std::numeric_limits<float>::quiet_NaN());  // 2
  iterate(1, 0, -inf);                                     // 3
  const scaler_statistics s = scaler.get_amp_stats();
  REQUIRE(s.culprits.size() == 2);  // history_capacity: the last two
  CHECK(s.culprits[0] == overflow_culprit{2, 0, nonfinite_element{0, 9, nonfinite_kind::nan}});
  CHECK(s.culprits[1] == overflow_culprit{3, 0, nonfinite_element{1, 0, nonfinite_kind::negative_infinity}});
  REQUIRE(s.culprit_counts.size() == 2);  // all of them, by (optimizer, array)
  CHECK(s.culprit_counts[0] == culprit_count{0, 0, 1});
  CHECK(s.culprit_counts[1] == culprit_count{0, 1, 2});
  const std::string json = to_json(s);
  CHECK_THAT(json,
             Catch::Contains(
                 "\"culprits\": [{\"iteration\": 2, \"optimizer\": 0, \"array\": 0, \"element\": 9, \"kind\": "
                 "\"nan\", \"rank\": -1}, {\"iteration\": 3, \"optimizer\": 0, \"array\": 1, \"element\": 0, \"kind\": "
                 "\"-inf\", \"rank\": -1}], \"culprit_counts\": [{\"optimizer\": 0, \"array\": 0, \"count\": 1}, "
                 "{\"optimizer\": 0, \"array\": 1, \"count\": 2}], \"scale_histogram\": ["));
  REQUIRE(log.size() == 3);
  CHECK(log[0] ==
        "mixprec: skipped step at iteration 0, loss scale 65536 -> 32768; optimizer 0: array 1, element 2 (+inf)");
  CHECK(log[2] ==
        "mixprec: skipped step at iteration 3, loss scale 16384 -> 8192; optimizer 0: array 1, element 0 (-inf)");

  // A check made elsewhere names no culprit; a second optimizer's does.
  scaler.record_found_inf(true, 0);
  std::vector<float> g(4, 1.0f);
  g[3] = inf;
  scaler.unscale(g.data(), g.size(), 1);
  scaler.update();
  CHECK(log.back() ==
        "mixprec: skipped step at iteration 4, loss scale 8192 -> 4096; optimizer 0: none in this process "
        "(record_found_inf or another process); optimizer 1: array 0, element 3 (+inf)");
  CHECK(scaler.get_amp_stats().culprits.back() ==
        overflow_culprit{4, 1, nonfinite_element{0, 3, nonfinite_kind::positive_infinity}});

  // The skip limit's error names this iteration's culprits.
  scaler_options limited;
  limited.max_consecutive_skips = 1;
  loss_scaler<dynamic_scaling> strict{dynamic_scaling{}, limited};
  std::vector<float> bad(5, 1.0f);
  bad[4] = std::numeric_limits<float>::quiet_NaN();
  strict.unscale(bad.data(), bad.size());
  CHECK_THROWS_WITH(strict.update(), Catch::Contains("this iteration's first non-finite gradients: optimizer 0: array "
                                                     "0, element 4 (nan)"));

  // restore() starts the statistics afresh.
  scaler.restore(dynamic_scaling{}, scaler.state());
  CHECK(scaler.get_amp_stats().culprits.empty());
  CHECK(scaler.get_amp_stats().culprit_counts.empty());
  CHECK(scaler.get_amp_stats().scale_histogram.empty());
}

TEST_CASE("with a loss scale below 1 a gradient that the unscale overflows can be named first (documented)",
          "[nonfinite][loss_scaler]") {
  loss_scaler<static_scaling> scaler{static_scaling{0.5f}};
  std::vector<float> g = {std::numeric_limits<float>::max(), inf};
  CHECK_FALSE(scaler.unscale(g.data(), g.size()));  // the check, before the multiply: element 1
  scaler.step([] {});
  scaler.update();
  CHECK(scaler.get_amp_stats().culprits.at(0).element ==
        nonfinite_element{0, 0, nonfinite_kind::positive_infinity});  // max × 2 = inf, found first
}

TEST_CASE("smallest_culprit: the smallest (array, element, rank) of the processes' own", "[nonfinite]") {
  using e = nonfinite_element;
  const std::optional<e> none;
  const std::optional<e> locals[] = {none, e{2, 9, nonfinite_kind::nan}, e{1, 40, nonfinite_kind::positive_infinity},
                                     e{1, 40, nonfinite_kind::negative_infinity}, e{1, 41, nonfinite_kind::nan}};
  const std::optional<ranked_nonfinite> best = smallest_culprit(locals, 5);
  REQUIRE(best.has_value());
  CHECK(best->element == e{1, 40, nonfinite_kind::positive_infinity});
  CHECK(best->rank == 2);  // the tie at (1, 40) goes to the smaller rank
  CHECK_FALSE(smallest_culprit(locals, 1).has_value());
}

namespace {

// Another process's overflow, as an agreement that agrees on culprits would report it.
struct two_process_agreement {
  std::optional<nonfinite_element> other;  // the other process's first non-finite gradient
  bool any(bool local) const { return local || other.has_value(); }
  std::optional<ranked_nonfinite> first_culprit(const std::optional<nonfinite_element>& local) const {
    const std::optional<nonfinite_element> locals[] = {local, other};  // this process is rank 0
    return smallest_culprit(locals, 2);
  }
};

}  // namespace

TEST_CASE("an agreement with first_culprit makes the culprit and its rank the agreed ones",
          "[nonfinite][loss_scaler]") {
  std::vector<std::string> log;
  scaler_options o;
  o.skip_log = [&](const std::string& line) { log.push_back(line); };
  two_process_agreement agreement{nonfinite_element{0, 2, nonfinite_kind::nan}};
  loss_scaler<dynamic_scaling, two_process_agreement> scaler{dynamic_scaling{}, o, agreement};
  std::vector<float> g(8, 1.0f);
  CHECK_FALSE(scaler.unscale(g.data(), g.size()));  // finite here, NaN on rank 1
  scaler.step([] {});
  scaler.update();
  CHECK(scaler.get_amp_stats().culprits.back() ==
        overflow_culprit{0, 0, nonfinite_element{0, 2, nonfinite_kind::nan}, 1});
  CHECK(log.back() ==
        "mixprec: skipped step at iteration 0, loss scale 65536 -> 32768; optimizer 0: array 0, "
        "element 2 (nan) on rank 1");
  g.assign(8, 1.0f);
  g[1] = inf;  // here, before rank 1's element 2: this one
  scaler.unscale(g.data(), g.size());
  scaler.step([] {});
  scaler.update();
  CHECK(scaler.get_amp_stats().culprits.back() ==
        overflow_culprit{1, 0, nonfinite_element{0, 1, nonfinite_kind::positive_infinity}, 0});
  CHECK_THAT(to_json(scaler.get_amp_stats()), Catch::Contains("\"kind\": \"+inf\", \"rank\": 0}"));
}
