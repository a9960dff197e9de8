// Matrices whose element type is chosen at run time: the currency of the autocast operations
// (mixprec/ops), whose result type depends on the autocast scope active when they run.
//
//   matrix_view   a read-only window on rows × cols elements of one dtype at any strides: made
//                 from a pointer, from a mixprec::matrix, or from any Eigen dense object with
//                 direct access (Matrix, Array, Map, Block, Ref; no Eigen header is needed here:
//                 such objects are recognised by their members)
//   matrix        an owning, row-major, contiguous, 64-byte aligned matrix of one dtype
//
//   matrix h(dtype::bfloat16, 64, 128);        // zeros
//   bfloat16* p = h.data<bfloat16>();          // typed access; the wrong type throws
//   matrix f = h.to(dtype::float32);           // converted with convert_n (exact here)
//   matrix q = convert(view, dtype::float8_e4m3fn, rounding::nearest_even, overflow::saturate);
//
// The functions written `template <int = 0>` are ordinary functions made templates so that only
// a file that calls one compiles it: they reach the run-time dtype dispatch, which instantiates
// the conversion kernels of every format (docs/design.md, "Compiled where called").
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "bulk/convert_n.hpp"
#include "detail/extent.hpp"
#include "detail/matrix_memory.hpp"
#include "dtype.hpp"
#include "errors.hpp"

namespace mixprec {

// A matrix_view or matrix holds the wrong element type for what was asked of it.
class dtype_mismatch : public invalid_argument {
 public:
  using invalid_argument::invalid_argument;
};

namespace detail {

// Eigen dense objects with direct access, recognised by their members (Scalar, data(),
// rows(), cols(), innerStride(), outerStride(), IsRowMajor), so this header needs no Eigen.
template <class M, class = void>
struct is_direct_access_dense : std::false_type {};
template <class M>
struct is_direct_access_dense<
    M, std::void_t<typename M::Scalar, decltype(std::declval<const M&>().data()),
                   decltype(std::declval<const M&>().rows()), decltype(std::declval<const M&>().innerStride()),
                   decltype(std::declval<const M&>().outerStride()), decltype(M::IsRowMajor)>>
    : std::bool_constant<is_dtype_type<std::remove_cv_t<typename M::Scalar>>> {};

inline std::size_t checked_element_count(std::size_t rows, std::size_t cols, const char* what) {
  if (cols != 0 && rows > static_cast<std::size_t>(-1) / 64 / cols) {
    throw invalid_argument(std::string(what) + ": " + std::to_string(rows) + " × " + std::to_string(cols) +
                           " elements overflow the address space");
  }
  return rows * cols;
}

[[noreturn]] inline void throw_dtype_mismatch(const char* what, dtype held, dtype asked) {
  throw dtype_mismatch(std::string(what) + ": the matrix holds " + to_string(held) + ", not " + to_string(asked));
}

// A matrix's block, given back to matrix_memory (which may keep it for the next matrix of this
// size) when the matrix goes.
struct matrix_storage_release {
  std::size_t bytes = 0;
  void operator()(unsigned char* p) const noexcept { matrix_memory::instance().give(p, bytes); }
};

// The tag of matrix's constructor that leaves the bytes unset.
struct no_fill_t {
  explicit no_fill_t() = default;
};

}  // namespace detail

class matrix_view {
 public:
  matrix_view() = default;

  // rows × cols elements of `type` at data, element (i, j) at index i·row_stride + j·col_stride.
  matrix_view(const void* data, dtype type, std::size_t rows, std::size_t cols, std::size_t row_stride,
              std::size_t col_stride)
      : data_(data), type_(type), rows_(rows), cols_(cols), row_stride_(row_stride), col_stride_(col_stride) {
    detail::checked_element_count(rows, cols, "matrix_view");
    if (data == nullptr && rows * cols != 0) {
      throw invalid_argument("matrix_view: null data for a " + std::to_string(rows) + " × " + std::to_string(cols) +
                             " matrix");
    }
    detail::check_matrix_extent("matrix_view", to_string(type), data, rows, cols, row_stride, col_stride,
                                size_of(type));
  }

  // A row-major, contiguous array of T.
  template <class T, class = std::enable_if_t<is_dtype_type<T>>>
  matrix_view(const T* data, std::size_t rows, std::size_t cols)
      : matrix_view(data, dtype_of<T>, rows, cols, cols, 1) {}

  // An Eigen dense object with direct access (Matrix, Array, Map, Block, Ref ...).
  template <class Dense, class = std::enable_if_t<detail::is_direct_access_dense<Dense>::value>>
  matrix_view(const Dense& m)  // NOLINT(google-explicit-constructor): a view of it, as Eigen::Ref
      : matrix_view(m.data(), dtype_of<std::remove_cv_t<typename Dense::Scalar>>, static_cast<std::size_t>(m.rows()),
                    static_cast<std::size_t>(m.cols()),
                    static_cast<std::size_t>(Dense::IsRowMajor ? m.outerStride() : m.innerStride()),
                    static_cast<std::size_t>(Dense::IsRowMajor ? m.innerStride() : m.outerStride())) {}

  dtype type() const noexcept { return type_; }
  std::size_t rows() const noexcept { return rows_; }
  std::size_t cols() const noexcept { return cols_; }
  std::size_t size() const noexcept { return rows_ * cols_; }
  bool empty() const noexcept { return size() == 0; }
  std::size_t row_stride() const noexcept { return row_stride_; }
  std::size_t col_stride() const noexcept { return col_stride_; }
  const void* data() const noexcept { return data_; }

  // The elements as T; dtype_mismatch unless T is the view's type.
  template <class T>
  const T* data_as() const {
    if (dtype_of<T> != type_) detail::throw_dtype_mismatch("matrix_view::data_as", type_, dtype_of<T>);
    return static_cast<const T*>(data_);
  }

  // Element (i, j) as float (exact: float holds every value of every dtype).
  template <int = 0>
  float value(std::size_t i, std::size_t j) const {
    return visit_dtype(type_, [&](auto tag) {
      using T = typename decltype(tag)::type;
      return static_cast<float>(static_cast<const T*>(data_)[i * row_stride_ + j * col_stride_]);
    });
  }

  matrix_view transposed() const noexcept {
    matrix_view t = *this;
    std::swap(t.rows_, t.cols_);
    std::swap(t.row_stride_, t.col_stride_);
    return t;
  }
  // Rows [first, first + count).
  matrix_view rows_range(std::size_t first, std::size_t count) const {
    if (first > rows_ || count > rows_ - first) {
      throw invalid_argument("matrix_view::rows_range: rows [" + std::to_string(first) + ", " +
                             std::to_string(first + count) + ") of a matrix with " + std::to_string(rows_) + " rows");
    }
    matrix_view v = *this;
    v.data_ = static_cast<const unsigned char*>(data_) + first * row_stride_ * size_of(type_);
    v.rows_ = count;
    return v;
  }

  // Whether each row is one contiguous array (what the bulk conversions read fastest).
  bool rows_contiguous() const noexcept { return col_stride_ == 1 || cols_ <= 1; }

 private:
  friend class matrix;
  struct checked_shape_t {};
  // A matrix's own storage, whose shape its constructor checked: no checks, nothing thrown.
  matrix_view(const void* data, dtype type, std::size_t rows, std::size_t cols, checked_shape_t) noexcept
      : data_(data), type_(type), rows_(rows), cols_(cols), row_stride_(cols), col_stride_(1) {}

  const void* data_ = nullptr;
  dtype type_ = dtype::float32;
  std::size_t rows_ = 0, cols_ = 0, row_stride_ = 0, col_stride_ = 1;
};

class matrix {
 public:
  matrix() = default;

  // rows × cols zeros of `type` (all-zero codes: for e8m0, which has no zero, 2^-127).
  matrix(dtype type, std::size_t rows, std::size_t cols)
      : type_(type),
        rows_(rows),
        cols_(cols),
        storage_(allocate(detail::checked_element_count(rows, cols, "matrix") * size_of(type))) {}

  matrix(const matrix& other) : matrix(other.type_, other.rows_, other.cols_, detail::no_fill_t{}) {
    if (bytes() != 0) std::memcpy(storage_.get(), other.storage_.get(), bytes());
  }
  matrix& operator=(const matrix& other) {
    if (this != &other) *this = matrix(other);
    return *this;
  }
  matrix(matrix&& other) noexcept
      : type_(other.type_),
        rows_(std::exchange(other.rows_, 0)),
        cols_(std::exchange(other.cols_, 0)),
        storage_(std::move(other.storage_)) {}
  matrix& operator=(matrix&& other) noexcept {
    type_ = other.type_;
    rows_ = std::exchange(other.rows_, 0);
    cols_ = std::exchange(other.cols_, 0);
    storage_ = std::move(other.storage_);
    return *this;
  }
  ~matrix() = default;

  // A copy of any view, in the view's dtype.
  template <int = 0>
  static matrix copy_of(const matrix_view& v);

  dtype type() const noexcept { return type_; }
  std::size_t rows() const noexcept { return rows_; }
  std::size_t cols() const noexcept { return cols_; }
  std::size_t size() const noexcept { return rows_ * cols_; }
  bool empty() const noexcept { return size() == 0; }
  std::size_t bytes() const { return size() * size_of(type_); }

  void* raw_data() noexcept { return storage_.get(); }
  const void* raw_data() const noexcept { return storage_.get(); }
  template <class T>
  T* data() {
    if (dtype_of<T> != type_) detail::throw_dtype_mismatch("matrix::data", type_, dtype_of<T>);
    return static_cast<T*>(raw_data());
  }
  template <class T>
  const T* data() const {
    if (dtype_of<T> != type_) detail::throw_dtype_mismatch("matrix::data", type_, dtype_of<T>);
    return static_cast<const T*>(raw_data());
  }

  // An empty matrix keeps its shape (0 × 64 stays 0 × 64): ops check shapes on views, and a
  // 0-row batch is a valid input there, as it is for PyTorch.
  matrix_view view() const noexcept {
    return matrix_view(raw_data(), type_, rows_, cols_, matrix_view::checked_shape_t{});
  }
  operator matrix_view() const noexcept { return view(); }  // NOLINT(google-explicit-constructor)

  template <int = 0>
  float value(std::size_t i, std::size_t j) const {
    return view().value(i, j);
  }

  // This matrix in another dtype (a copy when `to` is the same).
  template <int = 0>
  matrix to(dtype to, rounding r = rounding::nearest_even, overflow o = overflow::non_finite) const&;
  // On a temporary, the matrix itself when it already has dtype `to` and overflow::non_finite
  // keeps every code (what the copy would hold): a backward pass's result needs no second buffer.
  template <int = 0>
  matrix to(dtype to, rounding r = rounding::nearest_even, overflow o = overflow::non_finite) &&;

  // rows × cols of `type` whose bytes are left unset: for the library's own code that writes
  // every element next (a zero fill first was a tenth of a training step, docs/performance.md).
  matrix(dtype type, std::size_t rows, std::size_t cols, detail::no_fill_t)
      : type_(type),
        rows_(rows),
        cols_(cols),
        storage_(allocate(detail::checked_element_count(rows, cols, "matrix") * size_of(type), false)) {}

 private:
  using storage = std::unique_ptr<unsigned char[], detail::matrix_storage_release>;
  static storage allocate(std::size_t bytes, bool zero = true) {
    if (bytes == 0) return storage();
    storage s(detail::matrix_memory::instance().take(bytes), detail::matrix_storage_release{bytes});
    if (zero) std::memset(s.get(), 0, bytes);
    return s;
  }

  dtype type_ = dtype::float32;
  std::size_t rows_ = 0, cols_ = 0;
  storage storage_;
};

namespace detail {

// Elements (i, j0) .. (i, j0 + n) of any view, as floats (exact).
template <int = 0>
void read_row_part(const matrix_view& v, std::size_t i, std::size_t j0, std::size_t n, float* out) {
  visit_dtype(v.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* row = static_cast<const T*>(v.data()) + i * v.row_stride();
    if (v.rows_contiguous()) {
      convert_n(row + j0, n, out);
    } else {
      for (std::size_t j = 0; j < n; ++j) out[j] = static_cast<float>(row[(j0 + j) * v.col_stride()]);
    }
  });
}

// Row i of v as floats (exact).
template <int = 0>
void read_row_as_float(const matrix_view& v, std::size_t i, float* out) {
  read_row_part(v, i, 0, v.cols(), out);
}

// n floats into n elements of dtype `to` at out, rounded once.
template <int = 0>
void write_row_from_float(const float* in, std::size_t n, dtype to, void* out, rounding r, overflow o) {
  visit_dtype(to, [&](auto tag) {
    using T = typename decltype(tag)::type;
    convert_n(in, n, static_cast<T*>(out), r, o);
  });
}

}  // namespace detail

// The elements of `from` into a new row-major matrix of dtype `to`, each converted once with
// the given modes (values `to` holds are copied exactly; into the same dtype under
// overflow::non_finite, the codes themselves are copied, NaN payloads included).  Rows that are contiguous go through
// convert_n, staged through float (which holds every value of every dtype, so staging never
// rounds); other layouts element by element with the same scalar conversion.
template <int = 0>
matrix convert(const matrix_view& from, dtype to, rounding r = rounding::nearest_even,
               overflow o = overflow::non_finite) {
  matrix result(to, from.rows(), from.cols(), detail::no_fill_t{});  // every element is written below
  if (result.empty()) return result;
  const std::size_t cols = from.cols(), element_bytes = size_of(to);
  auto* target = static_cast<unsigned char*>(result.raw_data());
  if (from.type() == to && o == overflow::non_finite) {  // every mode keeps every value: copy the codes
    visit_dtype(to, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* source = static_cast<const T*>(from.data());
      T* out = result.data<T>();
      for (std::size_t i = 0; i < from.rows(); ++i) {
        if (from.rows_contiguous()) {
          std::memcpy(out + i * cols, source + i * from.row_stride(), cols * sizeof(T));
        } else {
          for (std::size_t j = 0; j < cols; ++j)
            out[i * cols + j] = source[i * from.row_stride() + j * from.col_stride()];
        }
      }
    });
    return result;
  }
  // From or to float32 with contiguous rows, one conversion per row and no staging (into
  // float32 every value is exact: only overflow::saturate, which clamps infinities, stages).
  if (to == dtype::float32 && o == overflow::non_finite) {
    for (std::size_t i = 0; i < from.rows(); ++i)
      detail::read_row_as_float(from, i, reinterpret_cast<float*>(target) + i * cols);
    return result;
  }
  if (from.type() == dtype::float32 && from.rows_contiguous()) {
    const float* source = static_cast<const float*>(from.data());
    for (std::size_t i = 0; i < from.rows(); ++i)
      detail::write_row_from_float(source + i * from.row_stride(), cols, to, target + i * cols * element_bytes, r, o);
    return result;
  }
  std::vector<float> staged(cols);
  for (std::size_t i = 0; i < from.rows(); ++i) {
    detail::read_row_as_float(from, i, staged.data());
    detail::write_row_from_float(staged.data(), cols, to, target + i * cols * element_bytes, r, o);
  }
  return result;
}

template <int>
matrix matrix::copy_of(const matrix_view& v) {
  return convert(v, v.type());
}

template <int>
matrix matrix::to(dtype to, rounding r, overflow o) const& {
  return convert(view(), to, r, o);
}

template <int>
matrix matrix::to(dtype to, rounding r, overflow o) && {
  if (to == type_ && o == overflow::non_finite) return std::move(*this);
  return convert(view(), to, r, o);
}

}  // namespace mixprec
