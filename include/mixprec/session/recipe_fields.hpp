// The keys of a recipe, one table for every text form (key=value, flags, JSON) and for writing a
// recipe back as text: visit_recipe_fields(r, f) calls f(field_info, member) for each key, in
// the order to_string(recipe) writes them.
//
// Functions written `template <int = 0>` are compiled only in a file that calls them
// (docs/design.md, "Compiled where called").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "../detail/text.hpp"
#include "recipe.hpp"

namespace mixprec {
namespace detail {

struct field_info {
  const char* key;
  const char* allowed;  // what a value may be, for error messages ("" for enums: their names)
  bool infinity_ok = false;
};

template <class E>
struct enum_names {
  const std::pair<const char*, E>* entries;
  std::size_t count;
};

template <class E, std::size_t N>
constexpr enum_names<E> names_from(const std::pair<const char*, E> (&table)[N]) {
  return {table, N};
}

template <int = 0>
enum_names<precision_mode> names_of(precision_mode) {
  static constexpr std::pair<const char*, precision_mode> table[] = {
      {"fp32", precision_mode::float32},  {"fp16", precision_mode::float16},
      {"bf16", precision_mode::bfloat16}, {"fp8", precision_mode::float8},
      {"mxfp8", precision_mode::mxfp8},   {"fp8_block", precision_mode::fp8_block},
      {"nvfp4", precision_mode::nvfp4},   {"fp8_rowwise", precision_mode::fp8_rowwise},
      {"mxfp4", precision_mode::mxfp4}};
  return names_from(table);
}
template <int = 0>
enum_names<loss_scaling_mode> names_of(loss_scaling_mode) {
  static constexpr std::pair<const char*, loss_scaling_mode> table[] = {{"none", loss_scaling_mode::none},
                                                                        {"static", loss_scaling_mode::fixed},
                                                                        {"dynamic", loss_scaling_mode::dynamic},
                                                                        {"hysteresis", loss_scaling_mode::hysteresis}};
  return names_from(table);
}
template <int = 0>
enum_names<hysteresis_scaling::rule_set> names_of(hysteresis_scaling::rule_set) {
  static constexpr std::pair<const char*, hysteresis_scaling::rule_set> table[] = {
      {"megatron", hysteresis_scaling::rule_set::megatron}, {"deepspeed", hysteresis_scaling::rule_set::deepspeed}};
  return names_from(table);
}
template <int = 0>
enum_names<floor_action> names_of(floor_action) {
  static constexpr std::pair<const char*, floor_action> table[] = {{"clamp", floor_action::clamp},
                                                                   {"throw_error", floor_action::throw_error}};
  return names_from(table);
}
template <int = 0>
enum_names<fp8_format> names_of(fp8_format) {
  static constexpr std::pair<const char*, fp8_format> table[] = {
      {"hybrid", fp8_format::hybrid}, {"e4m3", fp8_format::e4m3}, {"e5m2", fp8_format::e5m2}};
  return names_from(table);
}
template <int = 0>
enum_names<mx_scale_sharing> names_of(mx_scale_sharing) {
  static constexpr std::pair<const char*, mx_scale_sharing> table[] = {{"block", mx_scale_sharing::block},
                                                                       {"tile", mx_scale_sharing::tile}};
  return names_from(table);
}
template <int = 0>
enum_names<amax_algorithm> names_of(amax_algorithm) {
  static constexpr std::pair<const char*, amax_algorithm> table[] = {{"max", amax_algorithm::max},
                                                                     {"most_recent", amax_algorithm::most_recent}};
  return names_from(table);
}

template <int = 0>
enum_names<rounding> names_of(rounding) {
  static constexpr std::pair<const char*, rounding> table[] = {
      {"nearest_even", rounding::nearest_even}, {"nearest_away", rounding::nearest_away},
      {"toward_zero", rounding::toward_zero},   {"upward", rounding::upward},
      {"downward", rounding::downward},         {"to_odd", rounding::to_odd},
      {"nearest_zero", rounding::nearest_zero}};
  return names_from(table);
}

// The communication dtypes of the gradient all-reduce, in the recipe's words.
template <int = 0>
enum_names<dtype> names_of(dtype) {
  static constexpr std::pair<const char*, dtype> table[] = {{"fp32", dtype::float32},
                                                            {"bf16", dtype::bfloat16},
                                                            {"fp16", dtype::float16},
                                                            {"e4m3", dtype::float8_e4m3fn},
                                                            {"e5m2", dtype::float8_e5m2}};
  return names_from(table);
}

template <class E>
std::string enum_allowed(E e) {
  std::string out;
  const enum_names<E> names = names_of(e);
  for (std::size_t i = 0; i < names.count; ++i) out.append(i ? ", " : "").append(names.entries[i].first);
  return out;
}

template <class E>
const char* enum_name(E value) {
  const enum_names<E> names = names_of(value);
  for (std::size_t i = 0; i < names.count; ++i) {
    if (names.entries[i].second == value) return names.entries[i].first;
  }
  return "invalid";
}

template <class R, class F>
void visit_recipe_fields(R& r, F&& f) {
  static_assert(std::is_same<std::remove_const_t<R>, recipe>::value, "visit_recipe_fields takes a recipe");
  f(field_info{"precision", ""}, r.precision);
  f(field_info{"scaling", ""}, r.scaling);
  f(field_info{"autocast", "true or false"}, r.autocast);
  f(field_info{"master_weights", "true or false"}, r.master_weights);
  f(field_info{"cast_model", "true or false"}, r.cast_model);
  f(field_info{"keep_batchnorm_fp32", "true or false"}, r.keep_batchnorm_fp32);
  f(field_info{"safe", "true or false"}, r.safe);
  f(field_info{"stochastic_rounding", "true or false"}, r.stochastic_rounding);
  f(field_info{"kahan_summation", "true or false"}, r.kahan_summation);
  f(field_info{"seed", "an integer >= 0"}, r.seed);
  f(field_info{"init_scale", "a finite number > 0"}, r.init_scale);
  f(field_info{"growth_factor", "a finite number > 1"}, r.growth_factor);
  f(field_info{"backoff_factor", "a number in (0, 1)"}, r.backoff_factor);
  f(field_info{"growth_interval", "an integer >= 1"}, r.growth_interval);
  f(field_info{"hysteresis_rules", ""}, r.hysteresis_rules);
  f(field_info{"hysteresis", "an integer >= 1"}, r.hysteresis);
  f(field_info{"hysteresis_min_scale", "a finite number > 0"}, r.hysteresis_min_scale);
  f(field_info{"consecutive_hysteresis", "true or false"}, r.consecutive_hysteresis);
  f(field_info{"raise_at_min_scale", "true or false"}, r.raise_at_min_scale);
  f(field_info{"static_scale", "a finite number > 0"}, r.static_scale);
  f(field_info{"min_scale", "a finite number >= 0"}, r.min_scale);
  f(field_info{"max_scale", "a number > 0, or inf (no cap)", true}, r.max_scale);
  f(field_info{"at_floor", ""}, r.at_floor);
  f(field_info{"max_consecutive_skips", "an integer >= 0 (0: no limit)"}, r.max_consecutive_skips);
  f(field_info{"history_capacity", "an integer in [0, 65536]"}, r.history_capacity);
  f(field_info{"gradient_rounding", ""}, r.gradient_rounding);
  f(field_info{"max_grad_norm", "a finite number >= 0 (0: no clipping)"}, r.max_grad_norm);
  f(field_info{"accumulation_steps", "an integer in [1, 65536]"}, r.accumulation_steps);
  f(field_info{"fp8_format", ""}, r.fp8);
  f(field_info{"margin", "an integer in [-100, 6] (13 with fp8_format=e5m2)"}, r.margin);
  f(field_info{"amax_history_len", "an integer in [1, 65536]"}, r.amax_history_len);
  f(field_info{"amax_compute_algo", ""}, r.amax_compute_algo);
  f(field_info{"mx_weight_scales", ""}, r.mx_weight_scales);
  f(field_info{"reduce_dtype", ""}, r.reduce_dtype);
  f(field_info{"bucket_bytes", "an integer in [4, 1073741824]"}, r.bucket_bytes);
  f(field_info{"weight_check_interval", "an integer >= 0 (0: never)"}, r.weight_check_interval);
  f(field_info{"override", "none, or SELECTOR:PRECISION rules separated by commas (overrides.hpp)"}, r.overrides);
}

// Every key, for "allowed keys: ..." in messages.
template <int = 0>
std::string recipe_keys() {
  std::string out = "recipe";
  const recipe r;
  visit_recipe_fields(r, [&](const field_info& info, const auto&) { out.append(", ").append(info.key); });
  return out;
}

template <class T>
std::string field_text(const T& value) {
  if constexpr (std::is_same<T, bool>::value) {
    return value ? "true" : "false";
  } else if constexpr (std::is_same<T, precision_overrides>::value) {
    return overrides_text(value);
  } else if constexpr (std::is_enum<T>::value) {
    return enum_name(value);
  } else if constexpr (std::is_integral<T>::value) {
    return std::to_string(value);
  } else {
    return detail::number_text(static_cast<double>(value));
  }
}

}  // namespace detail

// The recipe's settings as "key=value, ..." text, without its name: two recipes that train the
// same way give the same text.  parse_recipe reads it back to an equal recipe.
template <int = 0>
std::string settings_text(const recipe& r) {
  std::string out;
  detail::visit_recipe_fields(r, [&](const detail::field_info& info, const auto& value) {
    out.append(out.empty() ? "" : ", ").append(info.key).append("=").append(detail::field_text(value));
  });
  return out;
}

// "recipe=<name>, " followed by settings_text(r).
template <int = 0>
std::string to_string(const recipe& r) {
  return "recipe=" + r.name + ", " + settings_text(r);
}

template <int = 0>
bool same_settings(const recipe& a, const recipe& b) {
  return settings_text(a) == settings_text(b);
}

}  // namespace mixprec
