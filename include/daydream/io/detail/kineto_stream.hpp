// Defines io::detail::kineto_streamer and stream_kineto: a Kineto trace (plain or gzip) decoded a window of events at a time.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_KINETO_STREAM_HPP
#define DAYDREAM_IO_DETAIL_KINETO_STREAM_HPP

#include <daydream/config.hpp>
#include <daydream/io/detail/kineto_decode.hpp>
#include <daydream/io/detail/kineto_events.hpp>
#include <daydream/io/detail/kineto_scan.hpp>
#include <daydream/io/detail/kineto_window_workers.hpp>
#include <daydream/io/detail/trace_file.hpp>
#include <daydream/io/detail/trace_reader.hpp>

#include <simdjson.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

namespace daydream::io::detail {

/// The window size stream_kineto uses when none is given: the text of the events it
/// decodes at once (simdjson's index of it is about as large again).
inline constexpr std::size_t default_window_bytes = std::size_t(4) << 20;

//! @cond DAYDREAM_INTERNAL
/// Finds the events of a Kineto trace in its text as it streams past, and decodes them a
/// window at a time. The events are those of the first `traceEvents` key of the
/// top-level object whose value is an array (or, in the array form, the top-level array);
/// in that array, a scanner that knows strings and their escapes and counts brackets finds
/// the commas between events, and each window of whole events is decoded as the array
/// `[e1,...,ek]`. The rest of the document (with the events' array left empty) is kept
/// and decoded last, as a whole. The decoder checks everything the scanner does not.
class kineto_streamer {
public:
  /// `window`: bytes of events decoded at once (0: default_window_bytes, or less to give
  /// every thread several windows of a smaller input); `threads`: threads that decode,
  /// this one included (0: one per core; 1: this one alone).
  kineto_streamer(trace_reader& in, decoded_trace& out, std::size_t window, unsigned threads = 1)
      : in_(in), out_(out), dec_(in.name(), out, std::size_t(-1)), window_(window == 0 ? default_window_bytes : window),
        threads_(thread_count(threads)) {
    if (window == 0 && threads_ > 1 && in_.size_hint() > 0)
      window_ = std::clamp<std::size_t>(in_.size_hint() / (32 * std::size_t(threads_)), min_parallel_window, window_);
  }

  /// Reads the whole input and decodes it into the output. Throws daydream::error.
  void run() {
    simdjson::ondemand::parser parser;
    parser_ = &parser;
    dec_.reserve_for(in_.size_hint());
    dec_.set_input_size(in_.size_hint());
    if (in_.gzip()) dec_.set_input_end([this] { return in_.size_to_end(); });
    // A file smaller than the window gets a window of its size (plus room for the '[').
    if (in_.size_hint() > 0 && in_.size_hint() < window_ && !in_.gzip()) window_ = in_.size_hint() + 1;
    // Worth workers when there are several windows to decode.
    if (threads_ > 1 && (in_.size_hint() == 0 || in_.size_hint() > 2 * window_)) {
      par_ = std::make_unique<window_workers>(in_.name(), out_, threads_ - 1, // and this thread
                                              [this](window_workers::job& j) { merge(j); });
      if (!par_->running()) par_.reset();
    }
    win_.reserve(window_ + 1);
    std::size_t len = 0;
    const bool at_events = find_events(len);
    if (at_events) events(parser, len);
    par_.reset(); // every window is merged: the workers go, their strings stay
    win_ = padded_buffer();
    read_rest();
    if (skel_.size() == 0) throw error("daydream: " + in_.name() + ": empty file");
    dec_.set_input_size(in_.bytes_read());
    dec_.set_text(skel_.data(), skel_.size() - (closed_ ? 1 : 0), 0, gap_at_, gap_len_);
    dec_.run(parser, skel_.padded(), at_events);
  }

private:
  static constexpr std::size_t npos = std::size_t(-1);
  /// Windows are not made smaller than this to share an input among threads.
  static constexpr std::size_t min_parallel_window = std::size_t(1) << 20;

  /// Before the events: reads windows, keeping their text, until the events' opening
  /// bracket. Returns whether it was found; then window bytes [0, len) hold a '[' of
  /// their own and the first bytes of the events.
  bool find_events(std::size_t& len) {
    for (;;) {
      len = in_.read(win_.data(), window_);
      if (len == 0) return false;
      std::size_t i = 0;
      const bool at_events = head_scan_.scan(win_.data(), len, i);
      append(skel_, win_.data(), at_events ? i + 1 : len); // up to the '[' of the events
      if (at_events) {
        // The rest of the window: the events' first bytes, behind a '[' of their own.
        const std::size_t rest = len - (i + 1);
        std::memmove(win_.data() + 1, win_.data() + i + 1, rest);
        win_.data()[0] = '[';
        len = rest + 1;
        gap_at_ = skel_.size() - 1;
        file_pos_ = skel_.size();
        return true;
      }
    }
  }

  /// After the events (or a document with none to stream): the rest, kept whole.
  void read_rest() {
    for (;;) {
      if (skel_.capacity() - skel_.size() < window_)
        skel_.reserve(skel_.size() + std::max(window_, skel_.size() / 2));
      const std::size_t k = in_.read(skel_.data() + skel_.size(), window_);
      skel_.set_size(skel_.size() + k);
      if (k == 0) break;
    }
  }

  /// Appends a window a worker decoded to the output, in order. One that failed is
  /// decoded here instead, which throws the error a single decoder reports.
  void merge(window_workers::job& j) {
    if (!j.failed) {
      dec_.absorb(j.part, j.ids);
      return;
    }
    decode_window(dec_, *parser_, j.text, j.e, j.shift);
  }
  /// Merges every window handed to the workers (before this thread decodes or reports).
  void flush() {
    if (par_) par_->drain();
  }
  /// The window is full: its whole events, window bytes [0, cut), go to a worker, and
  /// the bytes after the cut start the next window.
  void hand_off(std::size_t cut, std::size_t len) {
    window_workers::job& j = par_->next();
    const std::size_t cap = win_.capacity();
    std::swap(j.text, win_);
    j.e = cut;
    j.shift = static_cast<std::int64_t>(file_pos_) - 1;
    j.text.data()[cut] = ']';
    win_.reserve(cap); // the slot's earlier buffer, or a new one
    win_.data()[0] = '[';
    std::memcpy(win_.data() + 1, j.text.data() + cut + 1, len - (cut + 1));
    par_->submit();
  }

  static void append(padded_buffer& b, const char* p, std::size_t n) {
    if (b.capacity() - b.size() < n) b.reserve(b.size() + std::max(n, b.size() / 2));
    std::memcpy(b.data() + b.size(), p, n);
    b.set_size(b.size() + n);
  }

  /// Whether window bytes (0, e) are whitespace only: no event before a comma at e.
  bool empty_element(std::size_t e) const noexcept {
    const char* p = win_.data();
    std::size_t k = 1;
    while (k < e && is_json_space(p[k])) ++k;
    return k == e;
  }

  /// Decodes window bytes [0, e] ('[', whole events, and the ']' at e). `last`: e closes
  /// the events' array.
  void decode(simdjson::ondemand::parser& parser, std::size_t e, bool last) {
    flush();
    char* p = win_.data();
    if (empty_element(e)) {
      // No event before this bracket: an empty array is fine, an empty element is not
      // (`[{...},]`, `[{...},,{...}]`).
      if (last && !cut_before_) return;
      dec_.syntax_at(simdjson::TAPE_ERROR, file_pos_ + e - 1, true);
    }
    p[e] = ']';
    decode_window(dec_, parser, win_, e, static_cast<std::int64_t>(file_pos_) - 1);
  }

  /// Decodes the events: window bytes [0, len) hold '[' and the first bytes read.
  void events(simdjson::ondemand::parser& parser, std::size_t len) {
    std::size_t scan = 1, cut = npos;
    for (;;) {
      const std::size_t end = event_scan_.scan(win_.data(), scan, len, cut);
      scan = len;
      if (end != npos) {
        decode(parser, end, true);
        // The ']' and what follows go on with the rest of the document.
        gap_len_ = file_pos_ + end - 1 - (gap_at_ + 1);
        append(skel_, "]", 1);
        append(skel_, win_.data() + end + 1, len - end - 1);
        return;
      }
      if (len < win_.capacity()) {
        const std::size_t k = in_.read(win_.data() + len, win_.capacity() - len);
        if (k > 0) { len += k; continue; }
        end_of_input(parser, len, cut);
        return;
      }
      if (cut != npos) {
        // The window is full: decode its whole events, keep the rest for the next one.
        const std::size_t rest = len - (cut + 1);
        if (par_ && !empty_element(cut)) {
          hand_off(cut, len);
        } else {
          decode(parser, cut, false);
          std::memmove(win_.data() + 1, win_.data() + cut + 1, rest);
        }
        cut_before_ = true;
        file_pos_ += cut;
        len = rest + 1;
        scan = len;
        cut = npos;
      } else {
        win_.reserve(win_.capacity() * 2); // one event larger than the window
      }
    }
  }

  /// The input ends inside the events: window bytes [0, len) hold '[' and the events
  /// read since the last window decoded, `cut` the last comma between two of them (or
  /// npos). An array form left open is the trace; anything else is cut short.
  void end_of_input(simdjson::ondemand::parser& parser, std::size_t len, std::size_t cut) {
    flush();
    dec_.set_input_size(in_.bytes_read());
    if (event_scan_.in_string() || event_scan_.in_element() || !head_scan_.top_array()) {
      // Cut short: the whole events before the cut are decoded first, so that the
      // error is the same whatever the window (an error in them comes first).
      if (cut != npos) decode(parser, cut, false);
    }
    if (event_scan_.in_string()) dec_.syntax_at(simdjson::UNCLOSED_STRING, in_.bytes_read(), false);
    if (event_scan_.in_element() || !head_scan_.top_array())
      dec_.syntax_at(simdjson::INCOMPLETE_ARRAY_OR_OBJECT, in_.bytes_read(), false);
    // Chrome's JSON Array Format may leave the array open (a tracer killed mid-run
    // leaves `[{...},{...},`): the events read are the trace; one trailing comma is fine.
    std::size_t e = len;
    while (e > 1 && is_json_space(win_.data()[e - 1])) --e;
    if (cut != npos && e == cut + 1) e = cut;
    if (len == win_.capacity()) win_.reserve(len + 1); // room for the ']'
    if (e > 1) decode(parser, e, true); // else only whitespace after the last comma
    gap_len_ = in_.bytes_read() - (gap_at_ + 1);
    append(skel_, "]", 1);
    closed_ = true;
  }

  trace_reader& in_;
  decoded_trace& out_;
  kineto_decoder dec_;
  std::size_t window_;
  unsigned threads_;
  simdjson::ondemand::parser* parser_ = nullptr;
  std::unique_ptr<window_workers> par_; ///< when windows are decoded on other threads
  padded_buffer win_, skel_;
  std::size_t gap_at_ = npos, gap_len_ = 0;
  std::size_t file_pos_ = 0;   ///< input byte of window byte 1
  bool cut_before_ = false;    ///< a window of events was decoded before this one
  bool closed_ = false;        ///< the array form's ']' was added
  head_scanner head_scan_;     ///< before the events
  events_scanner event_scan_;  ///< in the events
};

/// Decodes the trace `in` into `out`, `window` bytes of events at a time (0: the
/// default), on `threads` threads (0: one per core; the output is the same whatever
/// the window and the threads).
inline void stream_kineto(trace_reader& in, decoded_trace& out, std::size_t window = 0, unsigned threads = 1) {
  kineto_streamer s(in, out, window, threads);
  s.run();
}
//! @endcond

} // namespace daydream::io::detail

#endif
