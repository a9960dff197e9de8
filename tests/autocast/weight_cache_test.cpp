// autocast/weight_cache.hpp and parameter.hpp: a parameter is converted once per outermost
// scope, never returned stale after a change, never confused with a later parameter at the
// same address, bounded in bytes, and gone when the outermost scope exits.
#include <mixprec/autocast/scope.hpp>

#include <catch2/catch.hpp>

#include <cstring>
#include <optional>

using namespace mixprec;

namespace {

parameter make_weight(std::size_t rows, std::size_t cols, float start, std::string name = "w") {
  matrix m(dtype::float32, rows, cols);
  for (std::size_t k = 0; k < m.size(); ++k) m.data<float>()[k] = start + 0.001f * static_cast<float>(k);
  return parameter(std::move(m), std::move(name));
}

bool equals_conversion(const matrix& cast, const parameter& p, dtype to) {
  const matrix expected = p.value().to(to);
  return cast.bytes() == expected.bytes() && std::memcmp(cast.raw_data(), expected.raw_data(), cast.bytes()) == 0;
}

}  // namespace

TEST_CASE("a parameter used twice in a scope is converted once", "[autocast][cache]") {
  const parameter w = make_weight(16, 8, 0.1f);
  autocast_scope<bfloat16> amp;
  const auto first = detail::autocast_cast(w, dtype::bfloat16);
  const auto second = detail::autocast_cast(w, dtype::bfloat16);
  CHECK(first.get() == second.get());
  CHECK(equals_conversion(*first, w, dtype::bfloat16));
  const autocast_cache_stats s = autocast_cache_statistics();
  CHECK(s.misses == 1);
  CHECK(s.hits == 1);
  CHECK(s.entries == 1);
  CHECK(s.bytes == 16 * 8 * 2);
  // Another dtype is another entry.
  (void)detail::autocast_cast(w, dtype::float16);
  CHECK(autocast_cache_statistics().entries == 2);
}

TEST_CASE("a change to the parameter invalidates its copy", "[autocast][cache]") {
  parameter w = make_weight(4, 4, 1.0f);
  autocast_scope<bfloat16> amp;
  const auto before = detail::autocast_cast(w, dtype::bfloat16);
  w.modify([](matrix& m) { m.data<float>()[0] = 42.0f; });
  const auto after = detail::autocast_cast(w, dtype::bfloat16);
  CHECK(after.get() != before.get());
  CHECK(after->value(0, 0) == 42.0f);
  CHECK(equals_conversion(*after, w, dtype::bfloat16));
  CHECK(autocast_cache_statistics().misses == 2);
  CHECK(autocast_cache_statistics().hits == 0);
  w.assign(matrix(dtype::float32, 2, 2));
  CHECK(detail::autocast_cast(w, dtype::bfloat16)->rows() == 2);
}

TEST_CASE("while a writer is open nothing is cached or served from the cache", "[autocast][cache]") {
  parameter w = make_weight(4, 4, 1.0f);
  autocast_scope<bfloat16> amp;
  (void)detail::autocast_cast(w, dtype::bfloat16);
  {
    auto writer = w.write();
    writer.value().data<float>()[1] = -3.0f;
    const auto during = detail::autocast_cast(w, dtype::bfloat16);  // sees the write, keeps nothing
    CHECK(during->value(0, 1) == -3.0f);
    writer.value().data<float>()[1] = 5.0f;  // a write after that cast...
  }
  const auto after = detail::autocast_cast(w, dtype::bfloat16);  // ...is seen after the writer closes
  CHECK(after->value(0, 1) == 5.0f);
  const autocast_cache_stats s = autocast_cache_statistics();
  CHECK(s.bypasses == 1);
  CHECK(s.hits == 0);
}

TEST_CASE("a destroyed parameter's copy is dropped, and a new one at its address is not mistaken for it",
          "[autocast][cache]") {
  std::optional<parameter> slot;
  slot.emplace(make_weight(8, 8, 1.0f));
  autocast_scope<bfloat16> amp;
  (void)detail::autocast_cast(*slot, dtype::bfloat16);
  CHECK(autocast_cache_statistics().entries == 1);
  slot.reset();
  slot.emplace(make_weight(8, 8, -7.0f));  // same storage, a different parameter
  const auto cast = detail::autocast_cast(*slot, dtype::bfloat16);
  CHECK(cast->value(0, 0) == -7.0f);
  const autocast_cache_stats s = autocast_cache_statistics();
  CHECK(s.hits == 0);
  CHECK(s.entries == 1);  // the dead parameter's entry went at this insertion
  CHECK(s.evictions == 1);
}

TEST_CASE("copies of a parameter are new parameters; moves keep the identity", "[autocast][cache]") {
  parameter a = make_weight(2, 2, 1.0f);
  const parameter b = a;
  CHECK(b.id() != a.id());
  const std::uint64_t id = a.id();
  parameter c = std::move(a);
  CHECK(c.id() == id);
  CHECK(a.id() != id);  // NOLINT(bugprone-use-after-move): the moved-from state is specified
}

TEST_CASE("the cache never holds more bytes than its limit; least recently used go first", "[autocast][cache]") {
  const parameter a = make_weight(16, 16, 1.0f, "a"), b = make_weight(16, 16, 2.0f, "b"),
                  c = make_weight(16, 16, 3.0f, "c");
  const parameter huge = make_weight(64, 64, 4.0f, "huge");
  autocast_options options;
  options.cache_limit_bytes = 2 * 16 * 16 * 2;  // room for two bf16 copies
  autocast_scope<bfloat16> amp(options);
  (void)detail::autocast_cast(a, dtype::bfloat16);
  (void)detail::autocast_cast(b, dtype::bfloat16);
  (void)detail::autocast_cast(a, dtype::bfloat16);  // a is now the most recent
  (void)detail::autocast_cast(c, dtype::bfloat16);  // evicts b
  autocast_cache_stats s = autocast_cache_statistics();
  CHECK(s.bytes <= options.cache_limit_bytes);
  CHECK(s.evictions == 1);
  (void)detail::autocast_cast(a, dtype::bfloat16);
  CHECK(autocast_cache_statistics().hits == 2);
  (void)detail::autocast_cast(b, dtype::bfloat16);
  CHECK(autocast_cache_statistics().misses == 4);
  const auto big = detail::autocast_cast(huge, dtype::bfloat16);  // larger than the limit: never kept
  CHECK(equals_conversion(*big, huge, dtype::bfloat16));
  s = autocast_cache_statistics();
  CHECK(s.bypasses == 1);
  CHECK(s.bytes <= options.cache_limit_bytes);
}

TEST_CASE("with the cache switched off every use converts", "[autocast][cache]") {
  const parameter w = make_weight(4, 4, 1.0f);
  autocast_options options;
  options.cache_enabled = false;
  autocast_scope<bfloat16> amp(options);
  (void)detail::autocast_cast(w, dtype::bfloat16);
  (void)detail::autocast_cast(w, dtype::bfloat16);
  CHECK(autocast_cache_statistics().bypasses == 2);
  CHECK(autocast_cache_statistics().entries == 0);
}

TEST_CASE("nothing is left after the outermost scope exits; inner scopes share the outer cache", "[autocast][cache]") {
  const parameter w = make_weight(32, 32, 1.0f);
  std::weak_ptr<const matrix> kept;
  {
    autocast_scope<bfloat16> outer;
    kept = detail::autocast_cast(w, dtype::bfloat16);
    {
      autocast_scope<bfloat16> inner;
      (void)detail::autocast_cast(w, dtype::bfloat16);
      CHECK(autocast_cache_statistics().hits == 1);
    }
    CHECK_FALSE(kept.expired());
  }
  CHECK(kept.expired());  // the copy itself is freed, not only forgotten
  CHECK(autocast_cache_statistics().entries == 0);
  // Outside every scope: converted each time, nothing kept.
  const auto outside = detail::autocast_cast(w, dtype::bfloat16);
  CHECK(equals_conversion(*outside, w, dtype::bfloat16));
  CHECK(autocast_cache_statistics().misses == 0);
}
