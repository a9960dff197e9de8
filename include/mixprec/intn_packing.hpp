// Narrow integers packed 8 / Bits per byte, little-endian (detail/packed_codes.hpp): two int4 per
// byte with element 0 in the low nibble (as ml_dtypes' and PyTorch's packed int4 and CUDA's
// __nv_fp4x2 layout), four int2, eight int1.
//
//   packed_bytes<int4>(n)                       bytes for n values (the last byte padded with 0)
//   read_packed<int4>(bytes, k)                 value k
//   write_packed<int4>(bytes, k, v)             sets value k, leaving the others
//   packed_vector<int4> v(n)                    an owning array: v[k], v.set(k, x), v.data()
//
// Bulk conversion from and to float (SIMD, threads): bulk/intn_pack.hpp.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "detail/packed_codes.hpp"
#include "errors.hpp"
#include "intn.hpp"

namespace mixprec {

template <class T>
constexpr std::size_t values_per_byte = 8 / T::bits_per_value;

template <class T>
constexpr std::size_t packed_bytes(std::size_t n) noexcept {
  static_assert(detail::is_intn_v<T> && 8 % T::bits_per_value == 0, "packed storage holds int4, int2 and int1 types");
  return n / values_per_byte<T> + (n % values_per_byte<T> != 0 ? 1 : 0);
}

template <class T>
MIXPREC_HOST_DEVICE inline T read_packed(const unsigned char* bytes, std::size_t k) noexcept {
  return T::from_bits(static_cast<std::uint8_t>(detail::read_packed_code<T::bits_per_value>(bytes, k)));
}

template <class T>
MIXPREC_HOST_DEVICE inline void write_packed(unsigned char* bytes, std::size_t k, T value) noexcept {
  detail::write_packed_code<T::bits_per_value>(bytes, k, value.bits());
}

template <class T>
class packed_vector {
 public:
  using value_type = T;

  packed_vector() = default;
  explicit packed_vector(std::size_t n) : size_(n), bytes_(packed_bytes<T>(n), 0) {}

  std::size_t size() const noexcept { return size_; }
  std::size_t size_bytes() const noexcept { return bytes_.size(); }
  unsigned char* data() noexcept { return bytes_.data(); }
  const unsigned char* data() const noexcept { return bytes_.data(); }

  T operator[](std::size_t k) const noexcept { return read_packed<T>(bytes_.data(), k); }
  void set(std::size_t k, T value) noexcept { write_packed<T>(bytes_.data(), k, value); }
  // Checked access: invalid_argument naming the index and the size.
  T at(std::size_t k) const {
    check(k);
    return (*this)[k];
  }
  void set_at(std::size_t k, T value) {
    check(k);
    set(k, value);
  }

 private:
  void check(std::size_t k) const {
    if (k >= size_) throw_out_of_range(k);
  }
  [[noreturn]] void throw_out_of_range(std::size_t k) const {
    throw invalid_argument("packed_vector<" + detail::intn_name<T::bits_per_value, T::is_signed>() + ">: index " +
                           std::to_string(k) + " is out of range for size " + std::to_string(size_));
  }

  std::size_t size_ = 0;
  std::vector<unsigned char> bytes_;
};

}  // namespace mixprec
