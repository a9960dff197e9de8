// The product loop of the AMX micro-kernel (amx_kernel.hpp: tiles 0-3 += A tiles 4-5 x B tiles
// 6-7 per chunk of 32 k), a member of each tile backend (amx_tiles.hpp) so that it is compiled
// with the backend's instructions and their calls inline.
//
// No include guard: included once per backend, inside its class.

void dot_chunks(std::size_t chunks, const std::uint16_t* a, const std::uint32_t* b) {
  for (std::size_t c = 0; c < chunks; ++c) {
    const std::uint16_t* a_chunk = a + c * 32 * 32;  // 32 rows of 32 bf16
    const std::uint32_t* b_chunk = b + c * 16 * 32;  // 16 pair lines of 32 columns
    load<4>(a_chunk, 64);
    load<5>(a_chunk + std::size_t{16} * 32, 64);
    load<6>(b_chunk, 128);
    load<7>(b_chunk + 16, 128);
    dot_bf16<0, 4, 6>();
    dot_bf16<1, 4, 7>();
    dot_bf16<2, 5, 6>();
    dot_bf16<3, 5, 7>();
  }
}
