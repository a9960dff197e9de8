// The weight-cast cache of autocast: a float weight used many times inside the outermost
// autocast scope is converted once per dtype (the role of the cast cache in
// aten/src/ATen/autocast_mode.cpp, which Apex introduced).
//
// What it guarantees, and how:
// - never stale: an entry records the parameter's version when it was made and is used only
//   while the version is the same and no writer is open (parameter.hpp); a copy whose source
//   changed during the conversion is handed out once and not kept;
// - never confused: entries are keyed by the parameter's id, which no other parameter ever
//   gets, so a new weight at a freed address cannot hit an old entry;
// - no leak: an entry holds only a weak token of its parameter; entries of destroyed
//   parameters are dropped at the next insertion, and the whole cache goes with the outermost
//   scope (scope.hpp);
// - bounded: the bytes kept never exceed the limit of the outermost scope
//   (autocast_options::cache_limit_bytes); the least recently used entries are evicted first,
//   and a copy larger than the limit is converted each time and never kept.
// One cache per thread (it lives in the thread's autocast state): no locks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <utility>

#include "../matrix.hpp"
#include "parameter.hpp"

namespace mixprec {

struct autocast_cache_stats {
  std::size_t hits = 0;       // copies served from the cache
  std::size_t misses = 0;     // conversions made (and kept, when they fit)
  std::size_t bypasses = 0;   // conversions not kept: too large, source being written, cache off
  std::size_t evictions = 0;  // entries dropped to stay within the limit, or because their parameter died
  std::size_t entries = 0;    // entries now
  std::size_t bytes = 0;      // bytes of the copies kept now
};

namespace detail {

class weight_cast_cache {
 public:
  explicit weight_cast_cache(std::size_t limit_bytes) : limit_(limit_bytes) {}

  // p's value converted to `to`: a kept copy when one of p's current version exists; otherwise
  // converted now, and kept when `keep` and it fits.
  template <int = 0>  // compiled where called (docs/design.md): it reaches the dtype dispatch
  std::shared_ptr<const matrix> get(const parameter& p, dtype to, bool keep) {
    const key k{p.id(), to};
    const std::uint64_t version = p.version();
    if (!p.being_written()) {
      const auto found = entries_.find(k);
      if (found != entries_.end() && found->second.version == version && !found->second.alive.expired()) {
        ++stats_.hits;
        found->second.last_use = ++clock_;
        return found->second.value;
      }
    }
    auto converted = std::make_shared<const matrix>(p.value().to(to));
    const bool unchanged = !p.being_written() && p.version() == version;
    if (!keep || !unchanged || converted->bytes() > limit_) {
      ++stats_.bypasses;
      return converted;
    }
    ++stats_.misses;
    erase(k);
    drop_dead_entries();
    while (!entries_.empty() && stats_.bytes + converted->bytes() > limit_) evict_least_recently_used();
    entries_[k] = entry{version, p.alive(), converted, ++clock_};
    stats_.bytes += converted->bytes();
    stats_.entries = entries_.size();
    return converted;
  }

  const autocast_cache_stats& stats() const noexcept { return stats_; }
  std::size_t limit() const noexcept { return limit_; }

 private:
  struct key {
    std::uint64_t id;
    dtype to;
    bool operator==(const key& other) const noexcept { return id == other.id && to == other.to; }
  };
  struct key_hash {
    std::size_t operator()(const key& k) const noexcept {
      return std::hash<std::uint64_t>{}(k.id * 16 + static_cast<std::uint64_t>(k.to));
    }
  };
  struct entry {
    std::uint64_t version;
    std::weak_ptr<const char> alive;
    std::shared_ptr<const matrix> value;
    std::uint64_t last_use;
  };

  void erase(const key& k) {
    const auto found = entries_.find(k);
    if (found == entries_.end()) return;
    stats_.bytes -= found->second.value->bytes();
    entries_.erase(found);
    stats_.entries = entries_.size();
  }
  void drop_dead_entries() {
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (it->second.alive.expired()) {
        stats_.bytes -= it->second.value->bytes();
        it = entries_.erase(it);
        ++stats_.evictions;
      } else {
        ++it;
      }
    }
    stats_.entries = entries_.size();
  }
  void evict_least_recently_used() {
    auto oldest = entries_.begin();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->second.last_use < oldest->second.last_use) oldest = it;
    }
    stats_.bytes -= oldest->second.value->bytes();
    entries_.erase(oldest);
    ++stats_.evictions;
    stats_.entries = entries_.size();
  }

  std::size_t limit_;
  std::uint64_t clock_ = 0;
  std::unordered_map<key, entry, key_hash> entries_;
  autocast_cache_stats stats_;
};

}  // namespace detail
}  // namespace mixprec
