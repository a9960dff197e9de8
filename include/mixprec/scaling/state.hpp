// The saved form of a loss_scaler: versioned, checksummed bytes holding every field (scale,
// trackers, iteration counters, policy options, scaler options, statistics).
//
// Format, version 1 (integers and IEEE floats little-endian):
//
//   offset 0   8 bytes  magic "MXSCALER"
//          8   u32      format version (1)
//         12   u32      payload size P
//         16   P bytes  payload:
//                str    policy name                         (str = u16 length, then bytes)
//                u16    option count, then per option: str key, u8 tag, value
//                       (tag 1 f32, 2 f64, 3 i32, 4 bool as u8 0/1, 5 enum as i32), in the order
//                       of the policy's visit_options
//                f64 scale; i64 growth_tracker, hysteresis_tracker, iteration,
//                    last_overflow_iteration                 (scale_state)
//                f32 min_scale, f32 max_scale, u8 at_floor, i64 max_consecutive_skips,
//                    u32 history_capacity, u8 gradient_rounding   (scaler_options)
//                i64 steps, skipped_steps, overflow_count, consecutive_skips,
//                    longest_skip_run, floor_hits            (scaler_counters)
//                u32 history count, then per entry: i64 iteration, f64 from, f64 to, u8 reason
//     16 + P   u32      CRC-32 (IEEE 802.3, as zlib) of bytes [0, 16 + P)
//
// decode_scaler_state() checks all of it, in that order, and throws scaler_state_error naming
// what is wrong; only a state that passes every check is returned, and it encodes back to the
// same bytes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <string>
#include <type_traits>
#include <vector>

#include "../detail/text.hpp"
#include "errors.hpp"
#include "options.hpp"
#include "policies.hpp"
#include "statistics.hpp"

namespace mixprec {

constexpr std::uint32_t scaler_state_version = 1;

// Everything a saved state holds.
template <class Policy>
struct scaler_snapshot {
  Policy policy;
  scale_state state;
  scaler_options options;  // floor_handler and unscale.threads are not saved
  scaler_counters counters;
  std::deque<scale_change> history;
};

namespace detail {

constexpr char state_magic[8] = {'M', 'X', 'S', 'C', 'A', 'L', 'E', 'R'};
constexpr std::size_t state_header_size = 16, state_checksum_size = 4;
constexpr std::size_t state_name_limit = 64, state_option_limit = 64;

constexpr std::array<std::uint32_t, 256> make_crc32_table() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? 0xEDB8'8320u ^ (c >> 1) : c >> 1;  // reflected 0x04C11DB7
    table[i] = c;
  }
  return table;
}

inline std::uint32_t crc32(const std::uint8_t* data, std::size_t n) noexcept {
  static constexpr std::array<std::uint32_t, 256> table = make_crc32_table();
  std::uint32_t c = 0xFFFF'FFFFu;
  for (std::size_t i = 0; i < n; ++i) c = table[(c ^ data[i]) & 0xFFu] ^ (c >> 8);
  return c ^ 0xFFFF'FFFFu;
}

class state_writer {
 public:
  std::vector<std::uint8_t> bytes;

  template <class U>
  void put_unsigned(U v, int size) {
    for (int i = 0; i < size; ++i)
      bytes.push_back(static_cast<std::uint8_t>((static_cast<std::uint64_t>(v) >> (8 * i)) & 0xFFu));
  }
  void u8(unsigned v) { put_unsigned(v, 1); }
  void u16(unsigned v) { put_unsigned(v, 2); }
  void u32(std::uint32_t v) { put_unsigned(v, 4); }
  void i32(std::int32_t v) { put_unsigned(static_cast<std::uint32_t>(v), 4); }
  void i64(std::int64_t v) { put_unsigned(static_cast<std::uint64_t>(v), 8); }
  void f32(float v) { u32(bit_cast<std::uint32_t>(v)); }
  void f64(double v) { put_unsigned(bit_cast<std::uint64_t>(v), 8); }
  void str(const std::string& s) {
    u16(static_cast<unsigned>(s.size()));
    bytes.insert(bytes.end(), s.begin(), s.end());
  }
};

class state_reader {
 public:
  state_reader(const std::uint8_t* data, std::size_t size) noexcept : data_(data), size_(size) {}

  std::uint64_t get_unsigned(int size, const char* what) {
    need(static_cast<std::size_t>(size), what);
    std::uint64_t v = 0;
    for (int i = 0; i < size; ++i)
      v |= static_cast<std::uint64_t>(data_[pos_ + static_cast<std::size_t>(i)]) << (8 * i);
    pos_ += static_cast<std::size_t>(size);
    return v;
  }
  unsigned u8(const char* what) { return static_cast<unsigned>(get_unsigned(1, what)); }
  unsigned u16(const char* what) { return static_cast<unsigned>(get_unsigned(2, what)); }
  std::uint32_t u32(const char* what) { return static_cast<std::uint32_t>(get_unsigned(4, what)); }
  std::int32_t i32(const char* what) { return static_cast<std::int32_t>(u32(what)); }
  std::int64_t i64(const char* what) { return static_cast<std::int64_t>(get_unsigned(8, what)); }
  float f32(const char* what) { return bit_cast<float>(u32(what)); }
  double f64(const char* what) { return bit_cast<double>(get_unsigned(8, what)); }
  bool boolean(const char* what) {
    const unsigned v = u8(what);
    if (v > 1) fail(std::string(what) + " is byte " + std::to_string(v) + ", not 0 or 1");
    return v == 1;
  }
  std::string str(const char* what, std::size_t limit) {
    const std::size_t n = u16(what);
    if (n > limit)
      fail(std::string(what) + " is " + std::to_string(n) + " bytes long, the limit is " + std::to_string(limit));
    need(n, what);
    std::string s(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return s;
  }
  std::size_t remaining() const noexcept { return size_ - pos_; }
  std::size_t position() const noexcept { return pos_; }

  [[noreturn]] static void fail(const std::string& what) { throw scaler_state_error("scaler state: " + what); }

 private:
  void need(std::size_t n, const char* what) const {
    if (size_ - pos_ < n) {
      fail("truncated: " + std::string(what) + " at payload byte " + std::to_string(pos_) + " needs " +
           std::to_string(n) + " bytes, " + std::to_string(size_ - pos_) + " left");
    }
  }
  const std::uint8_t* data_;
  std::size_t size_, pos_ = 0;
};

// Tags of option values, and the visitors that write and read them.
template <class T>
constexpr unsigned option_tag() {
  if constexpr (std::is_same<T, float>::value) return 1;
  if constexpr (std::is_same<T, double>::value) return 2;
  if constexpr (std::is_same<T, int>::value) return 3;
  if constexpr (std::is_same<T, bool>::value) return 4;
  if constexpr (std::is_enum<T>::value) return 5;
  return 0;
}

struct option_writer {
  state_writer& out;
  template <class T>
  void operator()(const char* key, T& value) {
    static_assert(option_tag<T>() != 0, "policy options must be float, double, int, bool or an enum");
    out.str(key);
    out.u8(option_tag<T>());
    if constexpr (std::is_same<T, float>::value) out.f32(value);
    if constexpr (std::is_same<T, double>::value) out.f64(value);
    if constexpr (std::is_same<T, int>::value) out.i32(value);
    if constexpr (std::is_same<T, bool>::value) out.u8(value ? 1 : 0);
    if constexpr (std::is_enum<T>::value) out.i32(static_cast<std::int32_t>(value));
  }
};

struct option_counter {
  unsigned count = 0;
  template <class T>
  void operator()(const char*, T&) {
    ++count;
  }
};

struct option_reader {
  state_reader& in;
  const char* policy;
  unsigned index = 0;
  template <class T>
  void operator()(const char* key, T& value) {
    const std::string saved = in.str("option key", state_name_limit);
    if (saved != key) {
      state_reader::fail("option " + std::to_string(index) + " is '" + saved + "', " + policy + " expects '" + key +
                         "'");
    }
    const unsigned tag = in.u8("option tag");
    if (tag != option_tag<T>()) {
      state_reader::fail("option '" + saved + "' has type tag " + std::to_string(tag) + ", " + policy + " expects " +
                         std::to_string(option_tag<T>()));
    }
    if constexpr (std::is_same<T, float>::value) value = in.f32("option value");
    if constexpr (std::is_same<T, double>::value) value = in.f64("option value");
    if constexpr (std::is_same<T, int>::value) value = in.i32("option value");
    if constexpr (std::is_same<T, bool>::value) value = in.boolean("option value");
    if constexpr (std::is_enum<T>::value) value = static_cast<T>(in.i32("option value"));
    ++index;
  }
};

// The frame every saved state of the library shares: 8 bytes of magic, u32 version, u32 payload
// size, the payload, a CRC-32 of everything before it.  begin/end write it around a payload.
inline void begin_state_frame(state_writer& w, const char (&magic)[8], std::uint32_t version) {
  w.bytes.assign(magic, magic + 8);
  w.u32(version);
  w.u32(0);  // payload size, filled in by end_state_frame
}

inline void end_state_frame(state_writer& w) {
  const auto payload = static_cast<std::uint32_t>(w.bytes.size() - state_header_size);
  for (int i = 0; i < 4; ++i) w.bytes[12 + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(payload >> (8 * i));
  w.u32(crc32(w.bytes.data(), w.bytes.size()));
}

// Checks the frame (size, magic, version, declared size, checksum, in that order) and returns
// the payload size; throws scaler_state_error naming `subject` ("scaler state", ...).
inline std::uint32_t check_state_frame(const std::uint8_t* data, std::size_t size, const char (&magic)[8],
                                       std::uint32_t version, const std::string& subject) {
  const auto fail = [&](const std::string& what) { throw scaler_state_error(subject + ": " + what); };
  if (data == nullptr && size > 0) fail("null data pointer with size " + std::to_string(size));
  if (size < state_header_size + state_checksum_size) {
    fail(std::to_string(size) + " bytes, shorter than the " + std::to_string(state_header_size + state_checksum_size) +
         "-byte frame");
  }
  if (std::memcmp(data, magic, 8) != 0) fail("does not start with the magic '" + std::string(magic, 8) + "'");
  state_reader header(data + 8, 8);
  const std::uint32_t saved_version = header.u32("version");
  if (saved_version != version) {
    throw scaler_state_error(subject + " is version " + std::to_string(saved_version) + ", this build reads up to " +
                             std::to_string(version));
  }
  const std::uint32_t payload = header.u32("payload size");
  const std::size_t expected = state_header_size + std::size_t{payload} + state_checksum_size;
  if (size != expected) {
    fail("declares a " + std::to_string(payload) + "-byte payload (" + std::to_string(expected) +
         " bytes in all) but holds " + std::to_string(size) + " bytes" +
         (size < expected ? ": truncated" : ": trailing bytes"));
  }
  const std::uint32_t stored = state_reader(data + size - 4, 4).u32("checksum");
  const std::uint32_t computed = crc32(data, size - 4);
  if (stored != computed) {
    fail("checksum mismatch (stored " + std::to_string(stored) + ", content gives " + std::to_string(computed) +
         "): the state is corrupt");
  }
  return payload;
}

}  // namespace detail

template <class Policy>
std::vector<std::uint8_t> encode_scaler_state(const scaler_snapshot<Policy>& snap) {
  detail::state_writer w;
  detail::begin_state_frame(w, detail::state_magic, scaler_state_version);
  w.str(Policy::name);
  Policy policy = snap.policy;
  detail::option_counter counter;
  if constexpr (detail::has_options<Policy>::value) policy.visit_options(counter);
  w.u16(counter.count);
  if constexpr (detail::has_options<Policy>::value) policy.visit_options(detail::option_writer{w});
  const scale_state& s = snap.state;
  w.f64(s.scale);
  w.i64(s.growth_tracker);
  w.i64(s.hysteresis_tracker);
  w.i64(s.iteration);
  w.i64(s.last_overflow_iteration);
  const scaler_options& o = snap.options;
  w.f32(o.min_scale);
  w.f32(o.max_scale);
  w.u8(static_cast<unsigned>(o.at_floor));
  w.i64(o.max_consecutive_skips);
  w.u32(static_cast<std::uint32_t>(o.history_capacity));
  w.u8(static_cast<unsigned>(o.unscale.gradient_rounding));
  const scaler_counters& c = snap.counters;
  for (const std::int64_t v :
       {c.steps, c.skipped_steps, c.overflow_count, c.consecutive_skips, c.longest_skip_run, c.floor_hits}) {
    w.i64(v);
  }
  w.u32(static_cast<std::uint32_t>(snap.history.size()));
  for (const scale_change& h : snap.history) {
    w.i64(h.iteration);
    w.f64(h.from);
    w.f64(h.to);
    w.u8(static_cast<unsigned>(h.reason));
  }
  detail::end_state_frame(w);
  return w.bytes;
}

namespace detail {

// The counters and history agree with each other and with the state.
inline void check_snapshot(const char* policy_name, const scale_state& s, const scaler_options& o,
                           const scaler_counters& c, const std::deque<scale_change>& history) {
  const auto require = [&](bool ok, const std::string& what) {
    if (!ok) state_reader::fail(std::string(policy_name) + ": " + what);
  };
  require(c.steps >= 0 && c.steps < (std::int64_t{1} << 62), "steps " + std::to_string(c.steps) + " out of range");
  require(c.skipped_steps >= 0 && c.skipped_steps <= c.steps,
          "skipped_steps " + std::to_string(c.skipped_steps) + " not in [0, steps " + std::to_string(c.steps) + "]");
  require(
      c.consecutive_skips >= 0 && c.consecutive_skips <= c.longest_skip_run && c.longest_skip_run <= c.skipped_steps,
      "consecutive_skips " + std::to_string(c.consecutive_skips) + " and longest_skip_run " +
          std::to_string(c.longest_skip_run) + " do not fit skipped_steps " + std::to_string(c.skipped_steps));
  require(
      c.overflow_count >= c.skipped_steps && c.overflow_count < (std::int64_t{1} << 62),
      "overflow_count " + std::to_string(c.overflow_count) + " below skipped_steps " + std::to_string(c.skipped_steps));
  require(c.floor_hits >= 0 && c.floor_hits <= c.skipped_steps,
          "floor_hits " + std::to_string(c.floor_hits) + " not in [0, skipped_steps]");
  require(history.size() <= o.history_capacity, "history of " + std::to_string(history.size()) +
                                                    " entries, above history_capacity " +
                                                    std::to_string(o.history_capacity));
  std::int64_t previous = 0;
  for (const scale_change& h : history) {
    require(h.iteration >= previous && h.iteration <= s.iteration && !std::isnan(h.from) && !std::isnan(h.to),
            "history entry at iteration " + std::to_string(h.iteration) + " out of order or NaN");
    previous = h.iteration;
  }
}

}  // namespace detail

// Reads a saved state.  `current` supplies what is not saved (the floor handler, the thread
// count) and the policy type whose name and options the state must carry.
template <class Policy>
scaler_snapshot<Policy> decode_scaler_state(const std::uint8_t* data, std::size_t size,
                                            const scaler_snapshot<Policy>& current) {
  using detail::state_reader;
  const std::uint32_t payload =
      detail::check_state_frame(data, size, detail::state_magic, scaler_state_version, "scaler state");
  state_reader in(data + detail::state_header_size, payload);
  scaler_snapshot<Policy> snap = current;
  const std::string name = in.str("policy name", detail::state_name_limit);
  if (name != Policy::name) {
    state_reader::fail("saved by policy '" + name + "', this scaler runs '" + Policy::name + "'");
  }
  const unsigned options = in.u16("option count");
  detail::option_counter counter;
  if constexpr (detail::has_options<Policy>::value) snap.policy.visit_options(counter);
  if (options != counter.count) {
    state_reader::fail(std::to_string(options) + " policy options, " + Policy::name + " has " +
                       std::to_string(counter.count));
  }
  if constexpr (detail::has_options<Policy>::value) snap.policy.visit_options(detail::option_reader{in, Policy::name});
  scale_state& s = snap.state;
  s.scale = in.f64("scale");
  s.growth_tracker = in.i64("growth_tracker");
  s.hysteresis_tracker = in.i64("hysteresis_tracker");
  s.iteration = in.i64("iteration");
  s.last_overflow_iteration = in.i64("last_overflow_iteration");
  scaler_options& o = snap.options;
  o.min_scale = in.f32("min_scale");
  o.max_scale = in.f32("max_scale");
  o.at_floor = static_cast<floor_action>(in.u8("at_floor"));
  o.max_consecutive_skips = in.i64("max_consecutive_skips");
  o.history_capacity = in.u32("history_capacity");
  o.unscale.gradient_rounding = static_cast<rounding>(in.u8("gradient_rounding"));
  scaler_counters& c = snap.counters;
  for (std::int64_t* v :
       {&c.steps, &c.skipped_steps, &c.overflow_count, &c.consecutive_skips, &c.longest_skip_run, &c.floor_hits}) {
    *v = in.i64("counters");
  }
  const std::uint32_t entries = in.u32("history count");
  if (entries > scaler_history_limit || entries * std::size_t{25} > in.remaining()) {
    state_reader::fail("history count " + std::to_string(entries) + " does not fit the " +
                       std::to_string(in.remaining()) + " bytes left");
  }
  snap.history.clear();
  for (std::uint32_t i = 0; i < entries; ++i) {
    scale_change h;
    h.iteration = in.i64("history iteration");
    h.from = in.f64("history from");
    h.to = in.f64("history to");
    const unsigned reason = in.u8("history reason");
    if (reason > static_cast<unsigned>(scale_change_reason::manual)) {
      state_reader::fail("history entry " + std::to_string(i) + " has reason " + std::to_string(reason));
    }
    h.reason = static_cast<scale_change_reason>(reason);
    snap.history.push_back(h);
  }
  if (in.remaining() != 0)
    state_reader::fail(std::to_string(in.remaining()) + " unread bytes at the end of the payload");

  try {
    validate_policy(snap.policy);
    validate_scale_state(snap.policy, s);
    detail::validate_scaler_options(o);
  } catch (const invalid_argument& e) {
    state_reader::fail(std::string("holds values out of range: ") + e.what());
  }
  detail::check_snapshot(Policy::name, s, o, c, snap.history);
  return snap;
}

}  // namespace mixprec
