// intn (intn.hpp) declared, with the trait that recognises it: for headers that describe the
// narrow integers without defining them (limits.hpp), since including intn.hpp would put int4,
// uint4, ... into every file that includes them (CUDA's own vector types have those names).
#pragma once

#include <type_traits>

namespace mixprec {

template <int Bits, bool Signed>
class intn;

namespace detail {
template <class T>
struct is_intn : std::false_type {};
template <int Bits, bool Signed>
struct is_intn<intn<Bits, Signed>> : std::true_type {};
template <class T>
constexpr bool is_intn_v = is_intn<T>::value;
}  // namespace detail

}  // namespace mixprec
