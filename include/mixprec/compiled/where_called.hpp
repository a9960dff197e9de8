// Written by scripts/where_called.py from the headers; do not edit (CI checks that it is
// current).  Everything the headers compile only where called (docs/design.md): declared
// `extern template` where MIXPREC_COMPILED is defined (the users of mixprec::compiled, whose
// files then compile none of these bodies); src/compiled/where_called_N.cpp defines part N
// (MIXPREC_WHERE_CALLED_DEFINES=N) and sees the other parts as extern.
// clang-format off
#pragma once

#include "../autocast/scope.hpp"
#include "../autocast/weight_cache.hpp"
#include "../gemm/gemm.hpp"
#include "../matrix.hpp"
#include "../ops/activation.hpp"
#include "../ops/detail/blocks.hpp"
#include "../ops/elementwise.hpp"
#include "../ops/fp8_block_linear.hpp"
#include "../ops/fp8_linear.hpp"
#include "../ops/linear.hpp"
#include "../ops/mx_linear.hpp"
#include "../ops/normalization.hpp"
#include "../ops/nvfp4_linear.hpp"
#include "../ops/operand.hpp"
#include "../ops/reduction.hpp"
#include "../ops/softmax.hpp"
#include "../ops/torchao_fp8_linear.hpp"
#include "../scaling/clipping.hpp"
#include "../scaling/unscale.hpp"
#include "../session/capabilities.hpp"
#include "../session/linear.hpp"
#include "../session/master_weights.hpp"
#include "../session/model_parameters.hpp"
#include "../session/overrides.hpp"
#include "../session/parse_recipe.hpp"
#include "../session/precision_session.hpp"
#include "../session/quantization_statistics.hpp"
#include "../session/recipe.hpp"
#include "../session/recipe_fields.hpp"
#include "../session/schedule.hpp"
#include "../session/statistics.hpp"

#if defined(MIXPREC_WHERE_CALLED_DEFINES) && MIXPREC_WHERE_CALLED_DEFINES == 1
#define MIXPREC_WHERE_CALLED_1 template
#else
#define MIXPREC_WHERE_CALLED_1 extern template
#endif
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 matrix relu(const operand& x); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 matrix gelu(const operand& x); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 matrix relu_backward(const operand& grad_out, const operand& x); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 matrix gelu_backward(const operand& grad_out, const operand& x); }
namespace mixprec::ops::detail { MIXPREC_WHERE_CALLED_1 bool is_flat(const matrix_view& v) noexcept; }
namespace mixprec::ops::detail { MIXPREC_WHERE_CALLED_1 void read_flat(const matrix_view& v, std::size_t first, std::size_t n, float* out); }
namespace mixprec::ops::detail { MIXPREC_WHERE_CALLED_1 void write_flat(const float* values, std::size_t n, matrix& out, std::size_t first); }
namespace mixprec::ops::detail { MIXPREC_WHERE_CALLED_1 void write_flat_through(const float* values, std::size_t n, dtype r, matrix& out, std::size_t first); }
namespace mixprec::ops::detail { MIXPREC_WHERE_CALLED_1 std::size_t broadcast_extent(const char* op, std::size_t a, std::size_t b, const matrix_view& x, const matrix_view& y); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 matrix add(const operand& a, const operand& b); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 matrix sub(const operand& a, const operand& b); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 matrix mul(const operand& a, const operand& b); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 matrix div(const operand& a, const operand& b); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 matrix fp8_block_linear<float8_e4m3fn>(const operand& x, const operand& weight, const operand& bias, const fp8_block_linear_options& o); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 linear_grads fp8_block_linear_backward<float8_e4m3fn, float8_e4m3fn>(const operand& grad_out, const operand& x, const operand& weight, const operand& bias, const fp8_block_linear_options& o); }
namespace mixprec::ops::detail { MIXPREC_WHERE_CALLED_1 bool has_precision_override(const operand& x); }
namespace mixprec::ops::detail { MIXPREC_WHERE_CALLED_1 fp8_operand quantize_fp8(delayed_scaler& scaler, std::size_t tensor, const matrix_view& x); }
namespace mixprec::ops::detail { MIXPREC_WHERE_CALLED_1 void fp8_product(const fp8_operand& a, transpose ta, const fp8_operand& b, transpose tb, float beta, float* c); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 matrix fp8_linear(const operand& x, const operand& weight, const operand& bias, fp8_training& fp8, std::size_t layer); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 linear_grads fp8_linear_backward(const operand& grad_out, const operand& x, const operand& weight, const operand& bias, fp8_training& fp8, std::size_t layer); }
namespace mixprec::ops::detail { MIXPREC_WHERE_CALLED_1 gemm_layout layout_for_gemm(const matrix_view& v); }
namespace mixprec::ops::detail { MIXPREC_WHERE_CALLED_1 void gemm_into(const matrix_view& a, const matrix_view& b, float beta, float* c); }
namespace mixprec::ops::detail { MIXPREC_WHERE_CALLED_1 void check_product_shapes(const char* op, const matrix_view& a, const matrix_view& b); }
namespace mixprec::ops::detail { MIXPREC_WHERE_CALLED_1 void check_bias(const char* op, const matrix_view& bias, std::size_t cols); }
namespace mixprec::ops::detail { MIXPREC_WHERE_CALLED_1 void fill_bias_rows(const char* op, const matrix_view& bias, std::size_t rows, std::size_t cols, float* c); }
namespace mixprec::ops::detail { MIXPREC_WHERE_CALLED_1 matrix product(const char* op, const operand& a, const operand& b, const operand* bias, bool b_transposed, dtype r, dtype out); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 matrix matmul(const operand& a, const operand& b); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 matrix linear(const operand& x, const operand& weight, const operand& bias); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 matmul_grads matmul_backward(const operand& grad_out, const operand& a, const operand& b); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 linear_grads linear_backward(const operand& grad_out, const operand& x, const operand& weight, const operand& bias); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 matrix mx_linear<float8_e4m3fn>(const operand& x, const operand& weight, const operand& bias, const mx_linear_options& options); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 matrix mx_linear<float4_e2m1fn>(const operand& x, const operand& weight, const operand& bias, const mx_linear_options& options); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 matrix mx_linear<float8_e4m3fn>(const operand& x, const operand& weight, const operand& bias, mx_scale_rule rule); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 matrix mx_linear<float4_e2m1fn>(const operand& x, const operand& weight, const operand& bias, mx_scale_rule rule); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 linear_grads mx_linear_backward<float8_e5m2, float8_e4m3fn>(const operand& grad_out, const operand& x, const operand& weight, const operand& bias, const mx_linear_options& options); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 linear_grads mx_linear_backward<float4_e2m1fn, float4_e2m1fn>(const operand& grad_out, const operand& x, const operand& weight, const operand& bias, const mx_linear_options& options); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 linear_grads mx_linear_backward<float8_e5m2, float8_e4m3fn>(const operand& grad_out, const operand& x, const operand& weight, const operand& bias, mx_scale_rule rule); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 linear_grads mx_linear_backward<float4_e2m1fn, float4_e2m1fn>(const operand& grad_out, const operand& x, const operand& weight, const operand& bias, mx_scale_rule rule); }
namespace mixprec::ops::detail { MIXPREC_WHERE_CALLED_1 void check_affine(const char* op, const matrix_view& x, const matrix_view& p, const char* name); }
namespace mixprec::ops::detail { MIXPREC_WHERE_CALLED_1 row_statistics layer_statistics(const float* xs, std::size_t rows, std::size_t cols, double eps); }
namespace mixprec::ops::detail { MIXPREC_WHERE_CALLED_1 matrix layer_norm_into(const operand& x, const operand& gamma, const operand& beta, double eps, dtype r); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 matrix layer_norm(const operand& x, const operand& gamma, const operand& beta, double eps); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 matrix fp32_layer_norm(const operand& x, const operand& gamma, const operand& beta, double eps); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 layer_norm_grads layer_norm_backward(const operand& grad_out, const operand& x, const operand& gamma, const operand& beta, double eps); }
namespace mixprec::ops::detail { MIXPREC_WHERE_CALLED_1 std::vector<float> floats_padded(const matrix_view& v, std::size_t padded_rows); }
namespace mixprec::ops::detail { MIXPREC_WHERE_CALLED_1 blockscale::nvfp4_tensor quantize_nvfp4(const std::vector<float>& values, std::size_t rows, std::size_t cols, const blockscale::nvfp4_options& q); }
namespace mixprec::ops::detail { MIXPREC_WHERE_CALLED_1 blockscale::nvfp4_tensor quantize_nvfp4_recorded(const std::vector<float>& values, std::size_t rows, std::size_t cols, const blockscale::nvfp4_options& q, statistics_sink* sink, layer_operand operand); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 matrix nvfp4_linear(const operand& x, const operand& weight, const operand& bias, const nvfp4_linear_options& o); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 linear_grads nvfp4_linear_backward(const operand& grad_out, const operand& x, const operand& weight, const operand& bias, const nvfp4_linear_options& o); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 const std::vector<std::string>& operation_names(); }
namespace mixprec::ops::detail { MIXPREC_WHERE_CALLED_1 cast_operand cast_to(const operand& x, dtype to); }
namespace mixprec::ops::detail { MIXPREC_WHERE_CALLED_1 cast_operand transposed(cast_operand x); }
namespace mixprec::ops::detail { MIXPREC_WHERE_CALLED_1 std::string shape_of(const matrix_view& v); }
namespace mixprec::ops::detail { MIXPREC_WHERE_CALLED_1 matrix round_into(const float* values, std::size_t rows, std::size_t cols, dtype r); }
namespace mixprec::ops::detail { MIXPREC_WHERE_CALLED_1 matrix round_into(const std::vector<float>& values, std::size_t rows, std::size_t cols, dtype r); }
namespace mixprec::ops::detail { MIXPREC_WHERE_CALLED_1 matrix round_into(const std::vector<double>& values, std::size_t rows, std::size_t cols, dtype r); }
namespace mixprec::ops::detail { MIXPREC_WHERE_CALLED_1 scratch<float> as_floats(const matrix_view& x); }
namespace mixprec::ops::detail { MIXPREC_WHERE_CALLED_1 float round_scalar(double value, dtype r); }
namespace mixprec::ops::detail { MIXPREC_WHERE_CALLED_1 dtype result_dtype(const std::string& op, std::initializer_list<const operand*> inputs); }
namespace mixprec::ops::detail { MIXPREC_WHERE_CALLED_1 void require_same_shape(const std::string& op, const matrix_view& a, const matrix_view& b); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 float sum(const operand& x); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 float mean(const operand& x); }
namespace mixprec::ops::detail { MIXPREC_WHERE_CALLED_1 matrix sum_along(const matrix_view& x, int axis, dtype r); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 matrix sum(const operand& x, int axis); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 float mse_loss(const operand& prediction, const operand& target); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 matrix mse_loss_backward(const operand& prediction, const operand& target, float grad_loss); }
namespace mixprec::ops::detail { MIXPREC_WHERE_CALLED_1 row_log_sum_exp log_sum_exp(const float* row, std::size_t n); }
namespace mixprec::ops::detail { MIXPREC_WHERE_CALLED_1 matrix softmax_rows(const matrix_view& x, dtype r, bool log_space); }
namespace mixprec::ops::detail { MIXPREC_WHERE_CALLED_1 void check_labels(const char* op, const matrix_view& logits, const std::vector<int>& labels, int ignore_index); }
namespace mixprec::ops::detail { MIXPREC_WHERE_CALLED_1 std::size_t counted_rows(const std::vector<int>& labels, int ignore_index); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 matrix softmax(const operand& x); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 matrix log_softmax(const operand& x); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 matrix fp32_softmax(const operand& x); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 float cross_entropy(const operand& logits, const std::vector<int>& labels, int ignore_index); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 matrix cross_entropy_backward(const operand& logits, const std::vector<int>& labels, float grad_loss, int ignore_index); }
namespace mixprec::ops::detail { MIXPREC_WHERE_CALLED_1 void scaled_product(const char* gemm_name, const std::vector<float>& a, std::size_t ra, std::size_t ca, transpose ta, const blockscale::operand_cast& cast_a, const std::vector<float>& b, std::size_t rb, std::size_t cb, transpose tb, const blockscale::operand_cast& cast_b, bool pow2, float* c, const cast_record& record_a, const cast_record& record_b); }
namespace mixprec::ops::detail { MIXPREC_WHERE_CALLED_1 std::vector<float> row_major_floats(const matrix_view& v); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 matrix torchao_fp8_linear(const operand& x, const operand& weight, const operand& bias, const blockscale::linear_cast_config& c, statistics_sink* statistics); }
namespace mixprec::ops { MIXPREC_WHERE_CALLED_1 linear_grads torchao_fp8_linear_backward(const operand& grad_out, const operand& x, const operand& weight, const operand& bias, const blockscale::linear_cast_config& c, statistics_sink* statistics); }
#undef MIXPREC_WHERE_CALLED_1

#if defined(MIXPREC_WHERE_CALLED_DEFINES) && MIXPREC_WHERE_CALLED_DEFINES == 2
#define MIXPREC_WHERE_CALLED_2 template
#else
#define MIXPREC_WHERE_CALLED_2 extern template
#endif
namespace mixprec { MIXPREC_WHERE_CALLED_2 capabilities host_capabilities(); }
namespace mixprec { MIXPREC_WHERE_CALLED_2 std::string to_string(const capabilities& c); }
namespace mixprec { MIXPREC_WHERE_CALLED_2 recipe_resolution resolve(const recipe& requested, const capabilities& c); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 bool runs_plain_linear(const precision_session& amp, const ops::operand& weight); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 ops::nvfp4_linear_options nvfp4_options_of(const precision_session& amp, std::size_t layer, ops::statistics_sink* sink); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 ops::mx_linear_options mx_options_of(const precision_session& amp, ops::statistics_sink* sink); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 const blockscale::linear_cast_config& rowwise_recipe(); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 layer_statistics::layer_statistics(precision_session& amp, std::size_t layer); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 void layer_statistics::commit(); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 matrix quantized_linear(precision_session& amp, std::size_t layer, const ops::operand& x, const ops::operand& weight, const ops::operand& bias, ops::statistics_sink* sink); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 ops::linear_grads quantized_linear_backward(precision_session& amp, std::size_t layer, const ops::operand& grad_out, const ops::operand& x, const ops::operand& weight, const ops::operand& bias, ops::statistics_sink* sink); }
namespace mixprec { MIXPREC_WHERE_CALLED_2 matrix session_linear(precision_session& amp, std::size_t layer, const ops::operand& x, const ops::operand& weight, const ops::operand& bias); }
namespace mixprec { MIXPREC_WHERE_CALLED_2 ops::linear_grads session_linear_backward(precision_session& amp, std::size_t layer, const ops::operand& grad_out, const ops::operand& x, const ops::operand& weight, const ops::operand& bias); }
namespace mixprec { MIXPREC_WHERE_CALLED_2 class basic_master_weights<void>; }
namespace mixprec { MIXPREC_WHERE_CALLED_2 class basic_model_parameters<void>; }
namespace mixprec { MIXPREC_WHERE_CALLED_2 std::optional<dtype> override_dtype_of(precision_mode p) noexcept; }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 bool all_digits(std::string_view s); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 std::optional<index_range> index_selector(std::string_view s, std::size_t layers); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 bool glob_match(std::string_view pattern, std::string_view text); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 bool selector_char(char c); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 std::string_view trimmed(std::string_view s); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 void check_selector(const std::string& selector, std::size_t number); }
namespace mixprec { MIXPREC_WHERE_CALLED_2 precision_overrides parse_overrides(std::string_view text); }
namespace mixprec { MIXPREC_WHERE_CALLED_2 std::string overrides_text(const precision_overrides& o); }
namespace mixprec { MIXPREC_WHERE_CALLED_2 std::string layer_of(const std::string& parameter_name); }
namespace mixprec { MIXPREC_WHERE_CALLED_2 std::vector<layer_precision> resolve_overrides(const precision_overrides& o, const std::vector<std::string>& parameter_names, precision_mode base); }
namespace mixprec { MIXPREC_WHERE_CALLED_2 std::shared_ptr<const op_precision_list> operation_precisions(const precision_overrides& o); }
namespace mixprec { MIXPREC_WHERE_CALLED_2 void check_operation_rules(const precision_overrides& o, const std::vector<std::string>& known); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 recipe named_recipe(std::string_view name); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 std::string json_name(const json_value& v); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 recipe apply_layers(std::initializer_list<const recipe_layer*> layers); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 std::string key_of(std::string_view raw); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 recipe_layer key_values_layer(std::string_view text); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 flag_kind kind_of_flag(const std::string& key); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 flag_scan scan_flags(const std::vector<std::string_view>& args, bool strict, bool file_flag, std::string_view prefix); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 recipe_layer json_layer(std::string_view text); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 recipe_layer text_layer(std::string_view text); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 std::string read_recipe_file(const std::string& path); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 std::vector<std::string_view> main_arguments(const char* function, int argc, const char* const* argv, int first); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 recipe apply_scan(const flag_scan& scan); }
namespace mixprec { MIXPREC_WHERE_CALLED_2 recipe parse_recipe(std::string_view text); }
namespace mixprec { MIXPREC_WHERE_CALLED_2 recipe parse_recipe_args(int argc, const char* const* argv, int first); }
namespace mixprec { MIXPREC_WHERE_CALLED_2 recipe_args parse_known_recipe_args(int argc, const char* const* argv, int first, std::string_view prefix); }
namespace mixprec { MIXPREC_WHERE_CALLED_2 recipe parse_recipe_file(const std::string& path); }
namespace mixprec { MIXPREC_WHERE_CALLED_2 class basic_precision_session<void>; }
namespace mixprec { MIXPREC_WHERE_CALLED_2 std::string to_json(const layer_quantization_record& r); }
namespace mixprec { MIXPREC_WHERE_CALLED_2 std::string to_json(const std::vector<layer_quantization_record>& records); }
namespace mixprec::recipes { MIXPREC_WHERE_CALLED_2 recipe fp16(); }
namespace mixprec::recipes { MIXPREC_WHERE_CALLED_2 recipe bf16(); }
namespace mixprec::recipes { MIXPREC_WHERE_CALLED_2 recipe fp8(); }
namespace mixprec::recipes { MIXPREC_WHERE_CALLED_2 recipe block_scaled(precision_mode p, const char* name); }
namespace mixprec::recipes { MIXPREC_WHERE_CALLED_2 recipe O0(); }
namespace mixprec::recipes { MIXPREC_WHERE_CALLED_2 recipe O1(); }
namespace mixprec::recipes { MIXPREC_WHERE_CALLED_2 recipe O2(); }
namespace mixprec::recipes { MIXPREC_WHERE_CALLED_2 recipe O3(); }
namespace mixprec { MIXPREC_WHERE_CALLED_2 void validate(const recipe& r); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 enum_names<precision_mode> names_of(precision_mode); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 enum_names<loss_scaling_mode> names_of(loss_scaling_mode); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 enum_names<hysteresis_scaling::rule_set> names_of(hysteresis_scaling::rule_set); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 enum_names<floor_action> names_of(floor_action); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 enum_names<fp8_format> names_of(fp8_format); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 enum_names<mx_scale_sharing> names_of(mx_scale_sharing); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 enum_names<amax_algorithm> names_of(amax_algorithm); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 enum_names<rounding> names_of(rounding); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 enum_names<dtype> names_of(dtype); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 std::string recipe_keys(); }
namespace mixprec { MIXPREC_WHERE_CALLED_2 std::string settings_text(const recipe& r); }
namespace mixprec { MIXPREC_WHERE_CALLED_2 std::string to_string(const recipe& r); }
namespace mixprec { MIXPREC_WHERE_CALLED_2 bool same_settings(const recipe& a, const recipe& b); }
namespace mixprec { MIXPREC_WHERE_CALLED_2 void validate(const precision_schedule& s); }
namespace mixprec { MIXPREC_WHERE_CALLED_2 std::string schedule_text(const precision_schedule& s); }
namespace mixprec { MIXPREC_WHERE_CALLED_2 std::string to_json(const session_statistics& s); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 std::string scale_text(double scale); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 std::string skip_line(std::int64_t step, const step_result& r, double next_scale); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_2 std::string epoch_line(const epoch_statistics& e); }
#undef MIXPREC_WHERE_CALLED_2

#if defined(MIXPREC_WHERE_CALLED_DEFINES) && MIXPREC_WHERE_CALLED_DEFINES == 3
#define MIXPREC_WHERE_CALLED_3 template
#else
#define MIXPREC_WHERE_CALLED_3 extern template
#endif
namespace mixprec::detail { MIXPREC_WHERE_CALLED_3 std::shared_ptr<const matrix> autocast_cast(const parameter& p, dtype to); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_3 std::shared_ptr<const matrix> weight_cast_cache::get(const parameter& p, dtype to, bool keep); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_3 void gemm_on_sources(const panel_source& a, const panel_source& b, std::size_t M, std::size_t N, std::size_t K, float alpha, float beta, float* C, std::size_t ldc, const gemm_options& options); }
namespace mixprec { MIXPREC_WHERE_CALLED_3 float matrix_view::value(std::size_t i, std::size_t j) const; }
namespace mixprec { MIXPREC_WHERE_CALLED_3 matrix matrix::copy_of(const matrix_view& v); }
namespace mixprec { MIXPREC_WHERE_CALLED_3 float matrix::value(std::size_t i, std::size_t j) const; }
namespace mixprec { MIXPREC_WHERE_CALLED_3 matrix matrix::to(dtype to, rounding r, overflow o) const&; }
namespace mixprec { MIXPREC_WHERE_CALLED_3 matrix matrix::to(dtype to, rounding r, overflow o) &&; }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_3 void read_row_part(const matrix_view& v, std::size_t i, std::size_t j0, std::size_t n, float* out); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_3 void read_row_as_float(const matrix_view& v, std::size_t i, float* out); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_3 void write_row_from_float(const float* in, std::size_t n, dtype to, void* out, rounding r, overflow o); }
namespace mixprec { MIXPREC_WHERE_CALLED_3 matrix convert(const matrix_view& from, dtype to, rounding r, overflow o); }
namespace mixprec { MIXPREC_WHERE_CALLED_3 clip_result clip_grad_norm(const gradient_view* arrays, std::size_t count, double max_norm, const clip_options& options); }
namespace mixprec { MIXPREC_WHERE_CALLED_3 clip_result clip_grad_norm(const std::vector<gradient_view>& arrays, double max_norm, const clip_options& options); }
namespace mixprec { MIXPREC_WHERE_CALLED_3 clip_result clip_grad_norm(std::initializer_list<gradient_view> arrays, double max_norm, const clip_options& options); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_3 simd_path unscale_simd_path() noexcept; }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_3 bool unscale_share(const gradient_view* arrays, std::size_t count, std::size_t first, std::size_t last, float inv_scale, rounding r, std::uint32_t* largest) noexcept; }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_3 float unscaled_amax(std::uint32_t largest, float inv_scale) noexcept; }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_3 void check_gradient_views(const char* function, const gradient_view* arrays, std::size_t count); }
namespace mixprec::detail { MIXPREC_WHERE_CALLED_3 bool unscale_views(const gradient_view* arrays, std::size_t count, float inv_scale, float* amax, const unscale_options& options); }
namespace mixprec { MIXPREC_WHERE_CALLED_3 bool unscale_and_check(const gradient_view* arrays, std::size_t count, float inv_scale, const unscale_options& options); }
namespace mixprec { MIXPREC_WHERE_CALLED_3 bool unscale_and_check(const gradient_view* arrays, std::size_t count, float inv_scale, float* amax, const unscale_options& options); }
#undef MIXPREC_WHERE_CALLED_3
// clang-format on
