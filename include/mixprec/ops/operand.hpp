// What the operations of mixprec::ops take and how they turn inputs into the dtype they
// compute in.
//
// An operand is any matrix the caller has: a mixprec::matrix, a matrix_view, an Eigen dense
// object with direct access (any scalar among float and the mixprec types, any storage order,
// blocks and maps included), or a mixprec::parameter, whose casts autocast caches.
//
// How an operation computes (every one in this directory follows it):
// 1. its result dtype r comes from autocast_result_dtype(name, input dtypes) (scope.hpp): the
//    category decides, exactly as PyTorch's autocast does; a parameter operand with a precision
//    override (parameter.hpp) makes it decide as inside an autocast scope of that dtype;
// 2. inputs are cast to the dtype the operation computes in (r for matrix products; float32,
//    which holds every value exactly, for everything else), each cast rounding once
//    (nearest-even), parameters through the weight-cast cache;
// 3. the result is computed and rounded once into r: matrix products by mixprec::gemm (exact
//    products accumulated in float), everything else in double arithmetic (the float32
//    category promises float32 inputs and results; evaluating in double makes each result the
//    correctly rounded value of the double computation, so float32 results are as good as
//    float allows and no accuracy depends on the input order).
// Backward functions run in the same state as their forward (call them under the same
// autocast scope, or re-enter it with dynamic_autocast_scope(current_autocast() captured in the
// forward)); a gradient comes back in the dtype of the input it belongs to, as autograd returns
// it through the casts.
//
// The functions here are templates, those with no parameter of their own written
// `template <int = 0>`, so that only a file that calls one compiles it (docs/design.md,
// "Compiled where called").
#pragma once

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "../autocast/parameter.hpp"
#include "../autocast/scope.hpp"
#include "../bulk/simd_path.hpp"
#include "../detail/transpose.hpp"
#include "../dtype.hpp"
#include "../errors.hpp"
#include "../matrix.hpp"
#include "detail/blocks.hpp"
#include "detail/scratch.hpp"

namespace mixprec::ops {

class operand {
 public:
  operand(const matrix& m) : view_(m.view()) {}                     // NOLINT(google-explicit-constructor)
  operand(const matrix_view& v) : view_(v) {}                       // NOLINT(google-explicit-constructor)
  operand(const parameter& p) : view_(p.view()), parameter_(&p) {}  // NOLINT(google-explicit-constructor)
  template <class Dense, class = std::enable_if_t<mixprec::detail::is_direct_access_dense<Dense>::value>>
  operand(const Dense& m) : view_(m) {}  // NOLINT(google-explicit-constructor)

  const matrix_view& view() const noexcept { return view_; }
  dtype type() const noexcept { return view_.type(); }
  std::size_t rows() const noexcept { return view_.rows(); }
  std::size_t cols() const noexcept { return view_.cols(); }
  const parameter* source_parameter() const noexcept { return parameter_; }

 private:
  matrix_view view_;
  const parameter* parameter_ = nullptr;
};

// The names under which the operations of mixprec::ops ask autocast for their dtype (a
// recipe's @NAME rules pin these; backward functions use their forward's name).
template <int = 0>
const std::vector<std::string>& operation_names() {
  static const std::vector<std::string> names = {
      "add",  "cross_entropy_loss", "div", "gelu", "layer_norm", "linear", "log_softmax", "matmul",
      "mean", "mse_loss",           "mul", "relu", "softmax",    "sub",    "sum"};
  return names;
}

namespace detail {

// An operand in a given dtype: the operand itself when it already is, else a converted copy
// (for a parameter, the cached one).  `keep` owns the copy.
struct cast_operand {
  matrix_view view;
  std::shared_ptr<const matrix> keep;
};

template <int = 0>
cast_operand cast_to(const operand& x, dtype to) {
  if (x.type() == to) return {x.view(), nullptr};
  std::shared_ptr<const matrix> converted = x.source_parameter() != nullptr
                                                ? mixprec::detail::autocast_cast(*x.source_parameter(), to)
                                                : std::make_shared<const matrix>(convert(x.view(), to));
  return {converted->view(), converted};
}

// A transposed cast operand (the view is transposed; the data shared).
template <int = 0>
cast_operand transposed(cast_operand x) {
  x.view = x.view.transposed();
  return x;
}

[[noreturn]] inline void throw_shape(const std::string& op, const std::string& what) {
  throw invalid_argument("ops::" + op + ": " + what);
}

template <int = 0>
std::string shape_of(const matrix_view& v) {
  return std::to_string(v.rows()) + "×" + std::to_string(v.cols());
}

// rows × cols floats (row-major) rounded once into a new matrix of dtype r.
template <int = 0>
matrix round_into(const float* values, std::size_t rows, std::size_t cols, dtype r) {
  matrix result(r, rows, cols, mixprec::detail::no_fill_t{});  // every element is written below
  write_flat(values, rows * cols, result, 0);
  return result;
}
template <int = 0>
matrix round_into(const std::vector<float>& values, std::size_t rows, std::size_t cols, dtype r) {
  return round_into(values.data(), rows, cols, r);
}

// A double buffer rounded once into dtype r (never through float: no double rounding).
template <int = 0>
matrix round_into(const std::vector<double>& values, std::size_t rows, std::size_t cols, dtype r) {
  matrix result(r, rows, cols, mixprec::detail::no_fill_t{});  // every element is written below
  visit_dtype(r, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = result.data<T>();
    for (std::size_t i = 0; i < values.size(); ++i) out[i] = static_cast<T>(values[i]);
  });
  return result;
}

// Every element of x as floats, in one row-major buffer borrowed from the thread's pool.
template <int = 0>
scratch<float> as_floats(const matrix_view& x) {
  scratch<float> values(x.size());
  if (is_flat(x)) {
    read_flat(x, 0, x.size(), values.data());
  } else if (x.row_stride() == 1 && x.col_stride() >= x.rows() && x.rows() > 1) {
    // The transpose of a row-major matrix (matrix_view::transposed()): its own rows read whole,
    // then the floats transposed in blocks.  Read element by element, each row of x went down a
    // column of the matrix, a cache line per element (18 % of an fp8-block training step).
    const matrix_view stored(x.data(), x.type(), x.cols(), x.rows(), x.col_stride(), 1);
    scratch<float> rows(x.size());
    for (std::size_t j = 0; j < x.cols(); ++j) read_row_part(stored, j, 0, x.rows(), rows.data() + j * x.rows());
    mixprec::detail::transpose_words(reinterpret_cast<const unsigned char*>(rows.data()), x.rows() * sizeof(float),
                                     x.cols(), x.rows(), reinterpret_cast<unsigned char*>(values.data()),
                                     x.cols() * sizeof(float), active_simd_path());
  } else {
    for (std::size_t i = 0; i < x.rows(); ++i) read_row_part(x, i, 0, x.cols(), values.data() + i * x.cols());
  }
  return values;
}

// A float result rounded to dtype r and read back as float: the value an op of dtype r returns.
template <int = 0>
float round_scalar(double value, dtype r) {
  const float as_float = static_cast<float>(value);
  return visit_dtype(r, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same<T, float>::value) {
      return as_float;
    } else {
      return static_cast<float>(T(value));  // one rounding, from double (no double rounding)
    }
  });
}

// x's elements through f (double -> double), rounded once into dtype r.
template <class F>
matrix map_elements(const matrix_view& x, dtype r, F f) {
  const scratch<float> values = as_floats(x);
  std::vector<double> results(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) results[i] = f(static_cast<double>(values[i]));
  return round_into(results, x.rows(), x.cols(), r);
}

// autocast_result_dtype of the operands that are present (an empty optional operand, such as
// a missing bias, takes no part in the promotion).  When a parameter among them has a precision
// override (parameter.hpp), the operation computes as inside an autocast scope of that dtype;
// parameters whose overrides differ meet in their promotion (float32 for float16 with bfloat16).
template <int = 0>
dtype result_dtype(const std::string& op, std::initializer_list<const operand*> inputs) {
  std::vector<dtype> types;
  std::optional<dtype> override_dtype;
  for (const operand* x : inputs) {
    if (x->view().empty()) continue;
    types.push_back(x->type());
    const parameter* p = x->source_parameter();
    if (p != nullptr && p->precision_override()) {
      override_dtype =
          override_dtype ? promote_types(*override_dtype, *p->precision_override()) : *p->precision_override();
    }
  }
  if (override_dtype) return autocast_result_dtype_as(op, types.begin(), types.end(), *override_dtype);
  return autocast_result_dtype(op, types.begin(), types.end());
}

template <int = 0>
void require_same_shape(const std::string& op, const matrix_view& a, const matrix_view& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols()) {
    throw_shape(op, "shapes " + shape_of(a) + " and " + shape_of(b) + " differ");
  }
}

}  // namespace detail
}  // namespace mixprec::ops
