// The library's exception types: one per failure family, all derived from mixprec::error.
// Messages name the offending value and the limit it broke.
#pragma once

#include <stdexcept>
#include <string>

namespace mixprec {

// Base of every exception mixprec throws.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A bit pattern that is not a code of the format (fp6/fp4 codes with bits above the format's
// width set).
class invalid_encoding : public error {
 public:
  using error::error;
};

// An argument outside what a function accepts (null pointers with n > 0, overlapping
// input and output arrays, ...).
class invalid_argument : public error {
 public:
  using error::error;
};

// Text that is not a number, or not a whole one (parse<T>, operator>>).
class parse_error : public error {
 public:
  using error::error;
};

}  // namespace mixprec
