// detail/forced_choice.hpp: parsing by the switch's names, forcing, resetting, and the
// environment variable's errors (naming the variable, the value and the allowed values); then
// the two switches built on it, MIXPREC_SIMD_PATH and MIXPREC_GEMM_PATH.
#include <mixprec/bulk/simd_path.hpp>
#include <mixprec/detail/forced_choice.hpp>
#include <mixprec/gemm/options.hpp>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

using namespace mixprec;

namespace {

enum class flavour { plain, salted, smoked };

constexpr const char* to_string(flavour f) noexcept {
  switch (f) {
    case flavour::plain:
      return "plain";
    case flavour::salted:
      return "salted";
    case flavour::smoked:
      return "smoked";
  }
  return "invalid flavour";
}

struct flavour_switch {
  using value_type = flavour;
  static constexpr const char* variable = "MIXPREC_TEST_FLAVOUR";
  static constexpr const char* noun = "flavour";
  static constexpr const char* where = "this kitchen";
  static constexpr flavour values[] = {flavour::plain, flavour::salted, flavour::smoked};
  static bool available(flavour f) noexcept { return f != flavour::smoked; }
};

// Sets an environment variable for one scope, then restores it (empty if it was unset, which
// the switches read as unset; POSIX setenv, _putenv_s on Windows).
class scoped_variable {
 public:
  scoped_variable(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    if (old != nullptr) old_ = old;
    set(value);
  }
  ~scoped_variable() { set(old_.c_str()); }

 private:
  void set(const char* value) {
#if defined(_WIN32)
    _putenv_s(name_, value);
#else
    setenv(name_, value, 1);
#endif
  }
  const char* name_;
  std::string old_;
};

}  // namespace

TEST_CASE("a switch parses its values' names and lists them all when the name is unknown", "[forced_choice]") {
  CHECK(detail::parse_choice<flavour_switch>("salted") == flavour::salted);
  CHECK(detail::parse_choice<flavour_switch>("smoked") == flavour::smoked);  // known, though unavailable
  CHECK_THROWS_WITH(detail::parse_choice<flavour_switch>("sweet"),
                    "unknown flavour 'sweet' (expected plain, salted or smoked)");
  CHECK_THROWS_AS(detail::parse_choice<flavour_switch>(""), invalid_argument);
}

TEST_CASE("a switch is forced from code only to available values, and reset", "[forced_choice]") {
  CHECK_FALSE(detail::chosen<flavour_switch>().has_value());  // the variable is not set in tests
  detail::force_choice<flavour_switch>(flavour::salted);
  CHECK(detail::chosen<flavour_switch>() == flavour::salted);
  CHECK_THROWS_WITH(detail::force_choice<flavour_switch>(flavour::smoked),
                    "flavour 'smoked' is not available on this kitchen");
  CHECK(detail::chosen<flavour_switch>() == flavour::salted);  // unchanged by the failed force
  detail::reset_choice<flavour_switch>();
  CHECK_FALSE(detail::chosen<flavour_switch>().has_value());
}

TEST_CASE("the environment variable's errors name the variable, the value and the allowed values", "[forced_choice]") {
  {
    const scoped_variable v("MIXPREC_TEST_FLAVOUR", "salted");
    CHECK(detail::choice_from_environment<flavour_switch>() == flavour::salted);
  }
  {
    const scoped_variable v("MIXPREC_TEST_FLAVOUR", "sweet");
    CHECK_THROWS_WITH(detail::choice_from_environment<flavour_switch>(),
                      "MIXPREC_TEST_FLAVOUR=sweet: unknown flavour 'sweet' (expected plain, salted or smoked)");
  }
  {
    const scoped_variable v("MIXPREC_TEST_FLAVOUR", "smoked");
    CHECK_THROWS_WITH(detail::choice_from_environment<flavour_switch>(),
                      "MIXPREC_TEST_FLAVOUR=smoked is not available on this kitchen");
  }
  const scoped_variable empty("MIXPREC_TEST_FLAVOUR", "");
  CHECK_FALSE(detail::choice_from_environment<flavour_switch>().has_value());
}

TEST_CASE("MIXPREC_SIMD_PATH and MIXPREC_GEMM_PATH are read through the shared switch", "[forced_choice]") {
  {
    const scoped_variable v("MIXPREC_SIMD_PATH", "sse9");
    CHECK_THROWS_WITH(detail::choice_from_environment<detail::simd_path_switch>(),
                      "MIXPREC_SIMD_PATH=sse9: unknown SIMD path 'sse9' (expected portable, avx2, avx512 or "
                      "avx512_bf16)");
  }
  {
    const scoped_variable v("MIXPREC_SIMD_PATH", "portable");
    CHECK(detail::choice_from_environment<detail::simd_path_switch>() == simd_path::portable);
  }
  {
    const scoped_variable v("MIXPREC_GEMM_PATH", "amx");
    CHECK_THROWS_WITH(detail::choice_from_environment<detail::gemm_path_switch>(),
                      "MIXPREC_GEMM_PATH=amx: unknown gemm path 'amx' (expected automatic, portable, avx2, avx512, "
                      "avx512_bf16, amx_bf16 or amx_bf16_emulated)");
  }
  {
    const scoped_variable v("MIXPREC_GEMM_PATH", "amx_bf16_emulated");
    CHECK(detail::choice_from_environment<detail::gemm_path_switch>() == gemm_path::amx_bf16_emulated);
  }
  // Forcing automatic is a reset; a forced path wins over the detected one.
  force_gemm_path(gemm_path::portable);
  CHECK(resolve_gemm_path() == gemm_path::portable);
  force_gemm_path(gemm_path::automatic);
  if (std::getenv("MIXPREC_GEMM_PATH") == nullptr) CHECK(resolve_gemm_path() == best_gemm_path());
  force_simd_path(simd_path::portable);
  CHECK(active_simd_path() == simd_path::portable);
  reset_simd_path();
  if (std::getenv("MIXPREC_SIMD_PATH") == nullptr) CHECK(active_simd_path() == best_simd_path());
}
