// Packed storage of small codes, little-endian: element k occupies bits [k·Bits, (k+1)·Bits),
// where bit j is bit (j mod 8) of byte j / 8, the element's lowest bit first.  Shared by the MX
// containers (mx/packing.hpp: fp4, fp6, fp8 elements) and the narrow integers
// (intn_packing.hpp, bulk/intn_pack.hpp: int4, int2, int1 and their unsigned twins):
//
//   4 bits: byte 0 = e1 << 4 | e0                          (two elements per byte, e0 low)
//   2 bits: byte 0 = e3 << 6 | e2 << 4 | e1 << 2 | e0
//   1 bit:  byte 0 = e7 .. e0, e0 in bit 0
//   6 bits: bytes 0..2 = e0 | e1 << 6 | e2 << 12 | e3 << 18  (four elements in three bytes)
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "../config.hpp"

namespace mixprec::detail {

// Packing works on 8 codes at a time in a 64-bit word (one code per byte, little-endian), in
// three SWAR steps that join neighbours: pairs of codes into 16-bit lanes, pairs of pairs into
// 32-bit lanes, then the two halves; unpacking undoes the steps in reverse.  Step s joins fields
// of width w = Bits << s sitting at the bottom of lanes of 8 << (s + 1) bits.
template <int Bits>
struct swar_packing {
  static_assert(Bits == 1 || Bits == 2 || Bits == 4 || Bits == 6 || Bits == 8,
                "codes of 1, 2, 4, 6 or 8 bits: 8 of them fill whole bytes");
  // The low `width` bits of every lane of `lane` bits.
  MIXPREC_HOST_DEVICE static constexpr std::uint64_t low_bits(int lane, int width) noexcept {
    std::uint64_t m = 0;
    for (int at = 0; at < 64; at += lane) m |= ((std::uint64_t{1} << width) - 1) << at;
    return m;
  }
  template <int Step>
  MIXPREC_HOST_DEVICE static constexpr std::uint64_t join(std::uint64_t x) noexcept {
    constexpr int lane = 16 << Step, width = Bits << Step, half = lane / 2;
    constexpr std::uint64_t keep = low_bits(lane, width);
    return (x & keep) | ((x >> (half - width)) & (keep << width));
  }
  template <int Step>
  MIXPREC_HOST_DEVICE static constexpr std::uint64_t split(std::uint64_t x) noexcept {
    constexpr int lane = 16 << Step, width = Bits << Step, half = lane / 2;
    constexpr std::uint64_t keep = low_bits(lane, width);
    return (x & keep) | ((x & (keep << width)) << (half - width));
  }
  MIXPREC_HOST_DEVICE static constexpr std::uint64_t pack(std::uint64_t codes) noexcept {
    return join<2>(join<1>(join<0>(codes & low_bits(8, Bits))));
  }
  MIXPREC_HOST_DEVICE static constexpr std::uint64_t unpack(std::uint64_t packed) noexcept {
    return split<0>(split<1>(split<2>(packed)));
  }
};

// `Bytes` bytes as the low bytes of a word, first byte lowest: one load or store on a
// little-endian machine, byte by byte elsewhere.
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define MIXPREC_LITTLE_ENDIAN 1
#else
#define MIXPREC_LITTLE_ENDIAN 0
#endif
template <int Bytes>
MIXPREC_HOST_DEVICE inline std::uint64_t load_little_endian(const unsigned char* p) noexcept {
  std::uint64_t word = 0;
#if MIXPREC_LITTLE_ENDIAN
  std::memcpy(&word, p, Bytes);
#else
  for (int i = 0; i < Bytes; ++i) word |= std::uint64_t{p[i]} << (8 * i);
#endif
  return word;
}
template <int Bytes>
MIXPREC_HOST_DEVICE inline void store_little_endian(unsigned char* p, std::uint64_t word) noexcept {
#if MIXPREC_LITTLE_ENDIAN
  std::memcpy(p, &word, Bytes);
#else
  for (int i = 0; i < Bytes; ++i) p[i] = static_cast<unsigned char>(word >> (8 * i));
#endif
}

// Packs `count` codes (a multiple of 8) into count × Bits / 8 bytes.
template <int Bits>
MIXPREC_HOST_DEVICE inline void pack_codes(const unsigned char* codes, std::size_t count, unsigned char* out) noexcept {
  if constexpr (Bits == 8) {
    std::memcpy(out, codes, count);
  } else {
    for (std::size_t group = 0; group < count / 8; ++group) {
      store_little_endian<Bits>(out + group * Bits, swar_packing<Bits>::pack(load_little_endian<8>(codes + group * 8)));
    }
  }
}

// The inverse: count × Bits / 8 bytes into `count` codes (count a multiple of 8).
template <int Bits>
MIXPREC_HOST_DEVICE inline void unpack_codes(const unsigned char* packed, std::size_t count,
                                             unsigned char* codes) noexcept {
  if constexpr (Bits == 8) {
    std::memcpy(codes, packed, count);
  } else {
    for (std::size_t group = 0; group < count / 8; ++group) {
      store_little_endian<8>(codes + group * 8,
                             swar_packing<Bits>::unpack(load_little_endian<Bits>(packed + group * Bits)));
    }
  }
}

// One element's code at position k of a packed block.
template <int Bits>
MIXPREC_HOST_DEVICE inline unsigned read_packed_code(const unsigned char* block, std::size_t k) noexcept {
  const std::size_t bit = k * Bits;
  unsigned window = block[bit / 8];
  if (bit % 8 + Bits > 8) window |= unsigned{block[bit / 8 + 1]} << 8;
  return (window >> (bit % 8)) & ((1u << Bits) - 1);
}

// Writes one element's code at position k of a packed block, leaving the other bits.
template <int Bits>
MIXPREC_HOST_DEVICE inline void write_packed_code(unsigned char* block, std::size_t k, unsigned code) noexcept {
  const std::size_t bit = k * Bits;
  const unsigned mask = ((1u << Bits) - 1) << (bit % 8);
  const unsigned shifted = (code << (bit % 8)) & mask;
  block[bit / 8] = static_cast<unsigned char>((block[bit / 8] & ~mask) | shifted);
  if (bit % 8 + Bits > 8) {
    block[bit / 8 + 1] = static_cast<unsigned char>((block[bit / 8 + 1] & ~(mask >> 8)) | (shifted >> 8));
  }
}

}  // namespace mixprec::detail
