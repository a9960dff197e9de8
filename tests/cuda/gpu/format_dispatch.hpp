// format_id (gpu_runs.hpp) to the mixprec type, for the device and the host sides of the tests.
#pragma once

#include <stdexcept>

#include "gpu_runs.hpp"

namespace gpu_runs {

template <class T>
struct tag {
  using type = T;
};

template <class F>
void with_format(format_id f, F&& run) {
  using namespace mixprec;
  switch (f) {
    case format_id::float16:
      return run(tag<float16>{});
    case format_id::bfloat16:
      return run(tag<bfloat16>{});
    case format_id::e4m3fn:
      return run(tag<float8_e4m3fn>{});
    case format_id::e5m2:
      return run(tag<float8_e5m2>{});
    case format_id::e4m3fnuz:
      return run(tag<float8_e4m3fnuz>{});
    case format_id::e5m2fnuz:
      return run(tag<float8_e5m2fnuz>{});
    case format_id::e3m2fn:
      return run(tag<float6_e3m2fn>{});
    case format_id::e2m3fn:
      return run(tag<float6_e2m3fn>{});
    case format_id::e2m1fn:
      return run(tag<float4_e2m1fn>{});
    case format_id::e8m0fnu:
      return run(tag<float8_e8m0fnu>{});
    case format_id::ue4m3:
      return run(tag<float8_ue4m3>{});
    case format_id::e4m3:
      return run(tag<float8_e4m3>{});
    case format_id::e3m4:
      return run(tag<float8_e3m4>{});
    case format_id::e4m3b11fnuz:
      return run(tag<float8_e4m3b11fnuz>{});
  }
  throw std::invalid_argument("unknown format");
}

}  // namespace gpu_runs
