// mx_matrix<T>: a rows × cols matrix in an OCP MX format (mx/element.hpp): blocks of 32
// elements of type T, packed (mx/packing.hpp), each with an e8m0 scale.
//
// The blocks run along one axis (mx_axis):
//   rows     a block is 32 consecutive elements of one row (columns 32j .. 32j+31): the layout
//            of a matrix product's left operand, blocked along K, and of Transformer Engine's
//            "rowwise" MXFP8 data
//   columns  a block is 32 consecutive elements of one column (rows 32j .. 32j+31): the right
//            operand's layout, TE's "columnwise" data
//
// Storage is line by line, a line being a row (axis rows) or a column (axis columns); a line
// of length L holds ceil(L / 32) blocks, the last one padded with +0 codes when 32 does not
// divide L (padding never changes a block's amax).  Block j of line l is at
// data() + (l × blocks_per_line() + j) × block_bytes, its scale at scales()[l × blocks_per_line() + j].
//
//   mixprec::mx_matrix<mixprec::float4_e2m1fn> m(rows, cols, mixprec::mx_axis::rows);
//   m.set_element(r, c, code);  m.element(r, c);  m.scale(r, c);  m.value(r, c);
//
// Quantisation and dequantisation: mx/quantize.hpp.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "../detail/extent.hpp"
#include "../errors.hpp"
#include "../types.hpp"
#include "element.hpp"
#include "packing.hpp"

namespace mixprec {
namespace detail {

// std::allocator that default-initialises what a resize adds (bytes: left unset), so that storage
// a quantiser overwrites whole is not zero-filled first (a memset and the page faults of the
// fresh pages each time: 2 % of an MXFP8 training step).
template <class T>
struct default_init_allocator : std::allocator<T> {
  using std::allocator<T>::allocator;
  template <class U>
  struct rebind {
    using other = default_init_allocator<U>;
  };
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    if constexpr (sizeof...(Args) == 0) {
      ::new (static_cast<void*>(p)) U;
    } else {
      ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
  }
};

// The tag of mx_matrix's constructor that leaves the element bytes and the scales unset
// (mx_quantize writes every block, padding included, and every scale).
struct mx_unset_t {
  explicit mx_unset_t() = default;
};

}  // namespace detail

enum class mx_axis { rows, columns };

constexpr const char* to_string(mx_axis a) noexcept { return a == mx_axis::rows ? "rows" : "columns"; }

template <class T>
class mx_matrix {
 public:
  using element_type = T;
  static constexpr int element_bits = mx_element<T>::bits;
  static constexpr std::size_t block_bytes = mx_element<T>::block_bytes;

  mx_matrix() = default;

  // A matrix of +0 elements with scales 1 (e8m0 code 127).
  mx_matrix(std::size_t rows, std::size_t cols, mx_axis axis) : mx_matrix(rows, cols, axis, detail::mx_unset_t{}) {
    std::fill(data_.begin(), data_.end(), static_cast<unsigned char>(0));
    std::fill(scales_.begin(), scales_.end(), float8_e8m0fnu::from_bits(mx_unit_scale_code));
  }

  // The same shape with the element bytes and the scales unset, for a quantiser that writes them all.
  mx_matrix(std::size_t rows, std::size_t cols, mx_axis axis, detail::mx_unset_t)
      : rows_(rows), cols_(cols), axis_(axis) {
    if (axis != mx_axis::rows && axis != mx_axis::columns) {
      throw invalid_argument("mx_matrix: axis is " + std::to_string(static_cast<int>(axis)) + ", not an mx_axis");
    }
    const std::size_t lines = this->lines(), per_line = blocks_per_line();
    // The packed data, block_bytes a block, must fit in one array (detail/extent.hpp).
    if (per_line != 0 && lines > detail::max_array_elements(block_bytes) / per_line) {
      throw invalid_argument("mx_matrix: " + std::to_string(rows) + " × " + std::to_string(cols) +
                             " elements do not fit in memory");
    }
    data_.resize(lines * per_line * block_bytes);
    scales_.resize(lines * per_line);
  }

  std::size_t rows() const noexcept { return rows_; }
  std::size_t cols() const noexcept { return cols_; }
  mx_axis axis() const noexcept { return axis_; }
  std::size_t lines() const noexcept { return axis_ == mx_axis::rows ? rows_ : cols_; }
  std::size_t line_length() const noexcept { return axis_ == mx_axis::rows ? cols_ : rows_; }
  // ceil(L / 32) without forming L + 31, which wraps for L > SIZE_MAX - 31.
  std::size_t blocks_per_line() const noexcept {
    return line_length() / mx_block_size + (line_length() % mx_block_size != 0 ? 1 : 0);
  }
  std::size_t blocks() const noexcept { return scales_.size(); }

  // The code of element (r, c), its block's scale, and its value X × P as a float (exact, except
  // that values beyond float's range give ±inf; NaN for a NaN scale).
  T element(std::size_t r, std::size_t c) const {
    const place p = locate(r, c);
    return T::from_bits(
        static_cast<typename T::storage_type>(detail::read_packed_code<element_bits>(block_data(p.block), p.index)));
  }
  float8_e8m0fnu scale(std::size_t r, std::size_t c) const { return scales_[locate(r, c).block]; }
  float value(std::size_t r, std::size_t c) const {
    const place p = locate(r, c);
    const auto code =
        static_cast<typename T::storage_type>(detail::read_packed_code<element_bits>(block_data(p.block), p.index));
    return static_cast<float>(T::from_bits(code)) * mx_scale_value(scales_[p.block].bits());
  }

  void set_element(std::size_t r, std::size_t c, T code) {
    const place p = locate(r, c);
    detail::write_packed_code<element_bits>(block_data(p.block), p.index, code.bits());
  }

  // Block j of line l (a row for axis rows, a column for axis columns).
  float8_e8m0fnu block_scale(std::size_t line, std::size_t block) const { return scales_[block_index(line, block)]; }
  void set_block_scale(std::size_t line, std::size_t block, float8_e8m0fnu scale) {
    scales_[block_index(line, block)] = scale;
  }
  const unsigned char* block_data(std::size_t line, std::size_t block) const {
    return block_data(block_index(line, block));
  }
  unsigned char* block_data(std::size_t line, std::size_t block) { return block_data(block_index(line, block)); }

  // The packed elements and the scales, block after block in storage order.
  const unsigned char* data() const noexcept { return data_.data(); }
  unsigned char* data() noexcept { return data_.data(); }
  std::size_t data_bytes() const noexcept { return data_.size(); }
  const float8_e8m0fnu* scales() const noexcept { return scales_.data(); }
  float8_e8m0fnu* scales() noexcept { return scales_.data(); }

  // Storage order index of a block; unchecked.
  std::size_t block_index_unchecked(std::size_t line, std::size_t block) const noexcept {
    return line * blocks_per_line() + block;
  }
  unsigned char* block_data(std::size_t index) noexcept { return data_.data() + index * block_bytes; }
  const unsigned char* block_data(std::size_t index) const noexcept { return data_.data() + index * block_bytes; }

 private:
  struct place {
    std::size_t block, index;
  };

  place locate(std::size_t r, std::size_t c) const {
    if (r >= rows_ || c >= cols_) {
      throw invalid_argument("mx_matrix: element (" + std::to_string(r) + ", " + std::to_string(c) + ") outside the " +
                             std::to_string(rows_) + " × " + std::to_string(cols_) + " matrix");
    }
    const std::size_t line = axis_ == mx_axis::rows ? r : c, position = axis_ == mx_axis::rows ? c : r;
    return {block_index_unchecked(line, position / mx_block_size), position % mx_block_size};
  }

  std::size_t block_index(std::size_t line, std::size_t block) const {
    if (line >= lines() || block >= blocks_per_line()) {
      throw invalid_argument("mx_matrix: block " + std::to_string(block) + " of line " + std::to_string(line) +
                             " outside the " + std::to_string(lines()) + " lines of " +
                             std::to_string(blocks_per_line()) + " blocks");
    }
    return block_index_unchecked(line, block);
  }

  std::size_t rows_ = 0, cols_ = 0;
  mx_axis axis_ = mx_axis::rows;
  std::vector<unsigned char, detail::default_init_allocator<unsigned char>> data_;
  std::vector<float8_e8m0fnu, detail::default_init_allocator<float8_e8m0fnu>> scales_;
};

}  // namespace mixprec
