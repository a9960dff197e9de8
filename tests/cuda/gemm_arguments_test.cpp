// cuda/detail/gemm_arguments.hpp: gpu::gemm's argument checks name the value and the limit, and
// the choice between 16-byte copies and element copies follows the operands' alignment.
#include <mixprec/cuda/detail/gemm_arguments.hpp>

#include <catch2/catch.hpp>

using namespace mixprec;
using namespace mixprec::gpu::detail;

namespace {

const void* at(std::uintptr_t address) { return reinterpret_cast<const void*>(address); }

// C = A·B with A M × K, B K × N, C M × N at the given addresses (never dereferenced).
void check(std::size_t M, std::size_t N, std::size_t K, std::uintptr_t a, std::size_t lda, std::uintptr_t b,
           std::size_t ldb, std::uintptr_t c, std::size_t ldc, std::size_t element = 2) {
  check_gemm_arguments("gpu::gemm", M, N, K, {"A", at(a), M, K, lda, element}, {"B", at(b), K, N, ldb, element},
                       {"C", at(c), M, N, ldc, 4});
}

}  // namespace

TEST_CASE("valid gemm arguments pass, empty products included", "[gemm_arguments]") {
  CHECK_NOTHROW(check(128, 256, 64, 0x10000, 64, 0x20000, 256, 0x40000, 256));
  CHECK_NOTHROW(check(0, 0, 0, 0, 0, 0, 0, 0, 0));
  CHECK_NOTHROW(check(4, 4, 0, 0, 0, 0, 4, 0x1000, 4));            // K = 0: C = beta C, A and B unused
  CHECK_NOTHROW(check(3, 5, 7, 0x1000, 9, 0x2000, 5, 0x3000, 6));  // padded rows
}

TEST_CASE("gemm argument errors name the value and the limit", "[gemm_arguments]") {
  CHECK_THROWS_WITH(check(4, 4, 8, 0x1000, 7, 0x2000, 4, 0x3000, 4),
                    "gpu::gemm: ldA = 7 is smaller than its 8 columns (A is 4 × 8, row-major)");
  CHECK_THROWS_WITH(check(4, 6, 8, 0x1000, 8, 0x2000, 5, 0x3000, 6),
                    "gpu::gemm: ldB = 5 is smaller than its 6 columns (B is 8 × 6, row-major)");
  CHECK_THROWS_WITH(check(4, 6, 8, 0x1000, 8, 0x2000, 6, 0x3000, 2),
                    "gpu::gemm: ldC = 2 is smaller than its 6 columns (C is 4 × 6, row-major)");
  CHECK_THROWS_WITH(check(4, 4, 4, 0, 4, 0x2000, 4, 0x3000, 4), "gpu::gemm: null A pointer with 4 × 4 elements");
  CHECK_THROWS_WITH(check(4, 4, 4, 0x1000, 4, 0x2000, 4, 0, 4), "gpu::gemm: null C pointer with 4 × 4 elements");
  CHECK_THROWS_WITH(check(std::size_t{1} << 31, 4, 4, 0x1000, 4, 0x2000, 4, 0x3000, 4),
                    "gpu::gemm: M = 2147483648 exceeds the limit 2147483647");
}

TEST_CASE("an output overlapping an input is refused, touching ranges are not", "[gemm_arguments]") {
  // A: 4 × 4 bfloat16 = 32 bytes at 0x1000; C: 4 × 4 float = 64 bytes.
  CHECK_THROWS_WITH(check(4, 4, 4, 0x1000, 4, 0x8000, 4, 0x1010, 4),
                    "gpu::gemm: C overlaps A; the product needs a separate output");
  CHECK_THROWS_WITH(check(4, 4, 4, 0x8000, 4, 0x1000, 4, 0x0FF0, 4),
                    "gpu::gemm: C overlaps B; the product needs a separate output");
  CHECK_NOTHROW(check(4, 4, 4, 0x1000, 4, 0x8000, 4, 0x1020, 4));  // C starts where A ends
}

TEST_CASE("the kernel copies 16 bytes at a time only where every row is 16-byte aligned", "[gemm_arguments]") {
  const auto operand = [](std::uintptr_t address, std::size_t rows, std::size_t cols, std::size_t ld,
                          std::size_t element) { return gemm_operand{"X", at(address), rows, cols, ld, element}; };
  CHECK(gemm_vector_loads(operand(0x1000, 64, 64, 64, 2), operand(0x2000, 64, 64, 64, 2)));
  CHECK_FALSE(gemm_vector_loads(operand(0x1008, 64, 64, 64, 2), operand(0x2000, 64, 64, 64, 2)));  // pointer
  CHECK_FALSE(gemm_vector_loads(operand(0x1000, 64, 64, 68, 2), operand(0x2000, 64, 64, 64, 2)));  // lda
  CHECK_FALSE(gemm_vector_loads(operand(0x1000, 64, 60, 64, 2), operand(0x2000, 60, 64, 64, 2)));  // K
  CHECK_FALSE(gemm_vector_loads(operand(0x1000, 64, 64, 64, 2), operand(0x2000, 64, 60, 64, 2)));  // N
  // 8-bit B needs 8-byte rows; A still 16.
  CHECK(gemm_vector_loads(operand(0x1000, 64, 64, 64, 1), operand(0x2008, 64, 72, 72, 1)));
  CHECK_FALSE(gemm_vector_loads(operand(0x1000, 64, 64, 64, 1), operand(0x2004, 64, 72, 72, 1)));
}

TEST_CASE("an fp8 product on an older device names both compute capabilities", "[gemm_arguments]") {
  CHECK_THROWS_AS(require_capability("gpu::gemm", "float8_e4m3fn inputs", 89, 0, 80), unsupported_device);
  CHECK_THROWS_WITH(require_capability("gpu::gemm", "float8_e4m3fn inputs", 89, 1, 80),
                    "gpu::gemm: float8_e4m3fn inputs need compute capability 8.9 or newer; device 1 is 8.0");
  CHECK_NOTHROW(require_capability("gpu::gemm", "float8_e4m3fn inputs", 89, 0, 90));
}
