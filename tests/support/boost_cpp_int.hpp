// Boost.Multiprecision's cpp_int for the exact oracles of the tests.  GCC 12 sees a false "may
// be used uninitialized" inside Boost's integer code when it inlines it at -O2 and above; the
// warning belongs to Boost's header, not to the tests, so it is silenced for that header only.
#pragma once

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <boost/multiprecision/cpp_int.hpp>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
