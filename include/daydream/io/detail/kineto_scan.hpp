// Defines io::detail::head_scanner and events_scanner: the events of a Kineto trace found in its text as it streams past, without parsing it.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_KINETO_SCAN_HPP
#define DAYDREAM_IO_DETAIL_KINETO_SCAN_HPP

#if defined(__SSE2__)
#  include <emmintrin.h> // the event scanner looks at 64 bytes at a time
#endif

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace daydream::io::detail {

//! @cond DAYDREAM_INTERNAL
/// What a byte outside a JSON string is to the event scanner: 1 a quote, 2 an opening and
/// 3 a closing bracket, 4 a comma, 0 nothing.
struct json_byte_classes {
  unsigned char t[256] = {};
  constexpr json_byte_classes() {
    t[static_cast<unsigned char>('"')] = 1;
    t[static_cast<unsigned char>('{')] = t[static_cast<unsigned char>('[')] = 2;
    t[static_cast<unsigned char>('}')] = t[static_cast<unsigned char>(']')] = 3;
    t[static_cast<unsigned char>(',')] = 4;
  }
};
inline constexpr json_byte_classes json_classes{};

/// Whether `c` is JSON whitespace.
inline bool is_json_space(char c) noexcept { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

/// Scans the text before the events for the '[' that opens them: the value of the first
/// `traceEvents` key of the top-level object, or the top-level array itself (Chrome's
/// JSON Array Format). It knows strings and their escapes and counts brackets, and
/// gives up on a text that is neither.
class head_scanner {
public:
  /// Scans `n` bytes of the text before the events (state carried from the bytes before).
  /// Returns true with `at` = the index of the events' '[' when it is among them.
  bool scan(const char* p, std::size_t n, std::size_t& at) {
    for (std::size_t i = 0; i < n; ++i) {
      const char c = p[i];
      if (state_ == state::none) return false;
      if (str_) {
        if (esc_) { esc_ = false; key_bad_ = true; }
        else if (c == '\\') { esc_ = true; key_bad_ = true; }
        else if (c == '"') {
          str_ = false;
          if (capturing_) {
            capturing_ = false;
            pending_ = !key_bad_ && std::string_view(key_, key_len_) == "traceEvents";
          }
        } else if (capturing_) {
          if (key_len_ < sizeof key_) key_[key_len_++] = c;
          else key_bad_ = true;
        }
        continue;
      }
      if (is_json_space(c)) continue;
      if (state_ == state::start) {
        if (c == '{') { state_ = state::object; depth_ = 1; expect_key_ = true; continue; }
        if (c == '[') { top_array_ = true; at = i; return true; }
        state_ = state::none; // not a trace: decoded whole, which says what it is
        return false;
      }
      // in the top-level object
      if (depth_ == 1 && colon_) {
        colon_ = false;
        if (c == '[' && pending_) { at = i; return true; }
        pending_ = false;
      }
      switch (c) {
      case '"':
        str_ = true;
        if (depth_ == 1 && expect_key_) { capturing_ = true; key_len_ = 0; key_bad_ = false; expect_key_ = false; }
        break;
      case ':': if (depth_ == 1) colon_ = true; break;
      case ',': if (depth_ == 1) expect_key_ = true; break;
      case '{': case '[': ++depth_; break;
      case '}': case ']':
        if (--depth_ <= 0) { state_ = state::none; return false; }
        break;
      default: break;
      }
    }
    return false;
  }

  /// Whether the events are the top-level array.
  bool top_array() const noexcept { return top_array_; }

private:
  enum class state : std::uint8_t { start, object, none };

  state state_ = state::start;
  bool top_array_ = false;
  bool str_ = false, esc_ = false, expect_key_ = false, capturing_ = false, key_bad_ = false;
  bool pending_ = false, colon_ = false;
  char key_[16] = {};
  std::size_t key_len_ = 0;
  std::int64_t depth_ = 0;
};

/// Scans the events' array for the commas between events and the bracket that closes
/// it, a window at a time: it knows strings and their escapes and counts brackets.
class events_scanner {
public:
  static constexpr std::size_t npos = std::size_t(-1);

  /// Scans window bytes [i, n) of the events (state carried from the bytes before).
  /// Returns the index of the bracket that closes the events' array, or npos; `cut` is
  /// the last comma between two events seen. With SSE2, 64 bytes at a time: bit masks
  /// of the quotes, backslashes, brackets and commas, and only those bytes are looked at.
  std::size_t scan(const char* text, std::size_t i, std::size_t n, std::size_t& cut) {
    const auto* p = reinterpret_cast<const unsigned char*>(text);
    bool in_str = str_;
    std::int64_t depth = depth_;
    std::size_t skip = esc_ ? i : npos; // the byte after a backslash in a string
    esc_ = false;
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), comma = _mm_set1_epi8(',');
    const __m128i open1 = _mm_set1_epi8('{'), open2 = _mm_set1_epi8('['), close1 = _mm_set1_epi8('}'),
                  close2 = _mm_set1_epi8(']');
    auto mask = [](__m128i eq, int k) {
      return std::uint64_t(static_cast<std::uint16_t>(_mm_movemask_epi8(eq))) << (16 * k);
    };
    for (; i + 64 <= n; i += 64) {
      std::uint64_t q = 0, b = 0, o = 0, c = 0, m = 0;
      for (int k = 0; k < 4; ++k) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i + 16 * k));
        q |= mask(_mm_cmpeq_epi8(v, quote), k);
        b |= mask(_mm_cmpeq_epi8(v, backslash), k);
        o |= mask(_mm_or_si128(_mm_cmpeq_epi8(v, open1), _mm_cmpeq_epi8(v, open2)), k);
        c |= mask(_mm_or_si128(_mm_cmpeq_epi8(v, close1), _mm_cmpeq_epi8(v, close2)), k);
        m |= mask(_mm_cmpeq_epi8(v, comma), k);
      }
      if (b == 0 && (skip < i || skip >= i + 64)) {
        // No escape in the block: the bytes inside strings are those after an odd number
        // of quotes (a prefix XOR of the quote mask), and only the brackets and commas
        // outside them are looked at.
        std::uint64_t x = q;
        x ^= x << 1; x ^= x << 2; x ^= x << 4; x ^= x << 8; x ^= x << 16; x ^= x << 32;
        const std::uint64_t inside = in_str ? ~x : x;
        // Only the brackets are visited (a few per event, where commas are a dozen):
        // the commas that count are those while the depth is 0, before a bracket or
        // after the last one, and of those only the last.
        const std::uint64_t commas = m & ~inside;
        std::uint64_t seen = 0; // the bits up to the bracket visited last
        for (std::uint64_t brackets = (o | c) & ~inside; brackets; brackets &= brackets - 1) {
          const int bit = __builtin_ctzll(brackets);
          const std::uint64_t one = std::uint64_t(1) << bit;
          if (depth == 0) {
            if (const std::uint64_t before = commas & (one - 1) & ~seen)
              cut = i + static_cast<std::size_t>(63 - __builtin_clzll(before));
            if (c & one) { str_ = (x >> bit & 1) != in_str; depth_ = depth; return i + static_cast<std::size_t>(bit); }
          }
          depth += (o & one) ? 1 : -1;
          seen = one | (one - 1);
        }
        if (depth == 0)
          if (const std::uint64_t after = commas & ~seen) cut = i + static_cast<std::size_t>(63 - __builtin_clzll(after));
        if (__builtin_popcountll(q) & 1) in_str = !in_str;
        continue;
      }
      for (std::uint64_t special = q | b | o | c | m; special; special &= special - 1) {
        const int bit = __builtin_ctzll(special);
        const std::size_t at = i + static_cast<std::size_t>(bit);
        if (at == skip) continue;
        const std::uint64_t one = std::uint64_t(1) << bit;
        if (in_str) {
          if (q & one) in_str = false;
          else if (b & one) skip = at + 1;
        } else if (q & one) {
          in_str = true;
        } else if (o & one) {
          ++depth;
        } else if (c & one) {
          if (depth == 0) { str_ = in_str; depth_ = depth; return at; }
          --depth;
        } else if ((m & one) && depth == 0) {
          cut = at;
        }
      }
    }
#endif
    for (; i < n; ++i) {
      if (i == skip) continue;
      const unsigned char ch = p[i];
      if (in_str) {
        if (ch == '"') in_str = false;
        else if (ch == '\\') skip = i + 1;
        continue;
      }
      switch (json_classes.t[ch]) {
      case 1: in_str = true; break;
      case 2: ++depth; break;
      case 3:
        if (depth == 0) { str_ = in_str; depth_ = depth; return i; }
        --depth;
        break;
      case 4: if (depth == 0) cut = i; break;
      default: break;
      }
    }
    str_ = in_str;
    depth_ = depth;
    esc_ = skip == n; // the escaped byte comes with the next read
    return npos;
  }

  /// Whether the bytes scanned end inside a string.
  bool in_string() const noexcept { return str_; }
  /// Whether the bytes scanned end inside an element of the events' array.
  bool in_element() const noexcept { return depth_ > 0; }

private:
  bool str_ = false, esc_ = false;
  std::int64_t depth_ = 0;
};
//! @endcond

} // namespace daydream::io::detail

#endif
