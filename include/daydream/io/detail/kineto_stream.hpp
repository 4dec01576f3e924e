// Defines io::detail::trace_reader and stream_kineto: a Kineto trace (plain or gzip) decoded a window of events at a time.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_KINETO_STREAM_HPP
#define DAYDREAM_IO_DETAIL_KINETO_STREAM_HPP

#include <daydream/config.hpp>
#include <daydream/io/detail/kineto_decode.hpp>
#include <daydream/io/detail/kineto_events.hpp>
#include <daydream/io/detail/trace_file.hpp>

#include <simdjson.h>
#include <zlib.h>

#if defined(__SSE2__)
#  include <emmintrin.h> // the event scanner looks at 64 bytes at a time
#endif

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace daydream::io::detail {

/// The bytes of a trace, in order, whatever holds them: a plain file (read with
/// fread, never mapped nor held whole), a gzip file (inflated as it is read, every
/// member of a multi-member file) or a string in memory.
class trace_reader {
public:
  /// Opens a trace file. Gzip is recognised by its magic bytes (1f 8b), whatever the file
  /// is called; a file whose name ends in `.gz` without them is refused, as is an empty
  /// file or a directory. Throws daydream::error naming the file and the reason.
  static trace_reader open(const std::filesystem::path& path) {
    trace_reader r;
    r.what_ = path.string();
    r.file_.reset(std::fopen(r.what_.c_str(), "rb"));
    if (!r.file_) throw error("daydream: " + r.what_ + ": cannot open: " + std::strerror(errno));
    std::error_code ec;
    auto st = std::filesystem::status(path, ec);
    if (!ec && std::filesystem::is_directory(st)) throw error("daydream: " + r.what_ + ": is a directory, not a trace file");
    std::FILE* f = r.file_.get();
    std::size_t size = 0;
    if (std::fseek(f, 0, SEEK_END) == 0) {
      long pos = std::ftell(f);
      if (pos > 0) size = static_cast<std::size_t>(pos);
      std::fseek(f, 0, SEEK_SET);
    }
    char head[2] = {0, 0};
    const std::size_t got = std::fread(head, 1, 2, f);
    if (got == 0) throw error("daydream: " + r.what_ + ": empty file");
    r.gz_ = is_gzip({head, got});
    const auto name = path.filename().string();
    if (!r.gz_ && name.size() >= 3 && name.compare(name.size() - 3, 3, ".gz") == 0)
      throw error("daydream: " + r.what_ + ": the name ends in .gz but the file is not gzip data "
                  "(it does not start with the gzip magic bytes 1f 8b)");
    if (r.gz_) {
      // ISIZE, the last 4 bytes of a gzip member: the uncompressed size modulo 2^32, a
      // hint only (a multi-member file, a file over 4 GiB, a corrupt or hostile one).
      if (size >= 18 && std::fseek(f, -4, SEEK_END) == 0) {
        unsigned char t[4];
        if (std::fread(t, 1, 4, f) == 4)
          r.size_hint_ = std::size_t(t[0]) | std::size_t(t[1]) << 8 | std::size_t(t[2]) << 16 | std::size_t(t[3]) << 24;
        if (r.size_hint_ < size) r.size_hint_ = size * 4;
        // Only the tables' first reservation follows it: a claim beyond 64:1 (Kineto JSON
        // compresses about 18:1; deflate allows 1032:1) is not believed, the tables grow.
        r.size_hint_ = std::min(r.size_hint_, size * 64);
      }
      std::fseek(f, 0, SEEK_SET);
      r.zs_ = std::make_unique<zstate>();
      if (inflateInit2(&r.zs_->z, 15 + 32) != Z_OK) {
        r.zs_.reset();
        throw error("daydream: " + r.what_ + ": cannot initialise zlib");
      }
      r.zs_->live = true;
      r.zs_->in = std::make_unique<unsigned char[]>(zchunk);
    } else {
      r.size_hint_ = size;
      std::memcpy(r.pending_, head, got);
      r.pending_size_ = got;
    }
    return r;
  }

  /// A reader of `text` (not copied: it must outlive the reader).
  static trace_reader of_memory(std::string_view text, std::string_view name) {
    trace_reader r;
    r.what_ = std::string(name);
    r.mem_ = text;
    r.size_hint_ = text.size();
    return r;
  }

  /// Reads up to `n` bytes into `p`; fewer only at the end of the input (0 then).
  /// Throws daydream::error on a read error and on corrupt or truncated gzip data.
  std::size_t read(char* p, std::size_t n) {
    std::size_t done = 0;
    if (file_ == nullptr) {
      done = std::min(n, mem_.size());
      if (done) std::memcpy(p, mem_.data(), done);
      mem_.remove_prefix(done);
    } else if (!gz_) {
      while (pending_size_ && done < n) { p[done++] = pending_[0]; pending_[0] = pending_[1]; --pending_size_; }
      while (done < n) {
        const std::size_t k = std::fread(p + done, 1, n - done, file_.get());
        done += k;
        if (k == 0) break;
      }
      if (std::ferror(file_.get())) throw error("daydream: " + what_ + ": read error: " + std::strerror(errno));
    } else {
      done = inflate_into(p, n);
      if (done == 0 && total_ == 0)
        throw error("daydream: " + what_ + ": empty file (no JSON inside the gzip data)");
    }
    total_ += done;
    return done;
  }

  /// The expected size of the text (the file's size; for gzip ISIZE within 64 times the
  /// file's size, or a guess), 0 if unknown.
  std::size_t size_hint() const noexcept { return size_hint_; }
  /// Bytes of text read so far.
  std::size_t bytes_read() const noexcept { return total_; }
  /// The name of the input in errors.
  const std::string& name() const noexcept { return what_; }
  /// Whether the input is gzip data.
  bool gzip() const noexcept { return gz_; }

private:
  trace_reader() = default;
  static constexpr std::size_t zchunk = 1 << 20;
  struct zstate {
    z_stream z{};
    bool live = false;
    bool ended = false; // the last member ended and nothing followed yet
    bool finished = false;
    std::size_t consumed = 0;
    std::unique_ptr<unsigned char[]> in;
    ~zstate() { if (live) inflateEnd(&z); }
  };

  std::size_t inflate_into(char* p, std::size_t n) {
    auto& s = *zs_;
    std::size_t produced = 0;
    while (produced < n && !s.finished) {
      if (s.z.avail_in == 0) {
        const std::size_t k = std::fread(s.in.get(), 1, zchunk, file_.get());
        if (std::ferror(file_.get())) throw error("daydream: " + what_ + ": read error: " + std::strerror(errno));
        if (k == 0) {
          if (!s.ended)
            throw error("daydream: " + what_ + ": truncated gzip data: the compressed stream ends after " +
                        std::to_string(s.consumed) + " bytes without its end marker");
          s.finished = true;
          break;
        }
        s.z.next_in = s.in.get();
        s.z.avail_in = static_cast<uInt>(k);
      }
      if (s.ended) {
        // Another gzip member may follow; anything else after a complete member (zero
        // padding written by some tools) is ignored, as gzip itself does.
        if (s.z.avail_in < 2 || s.z.next_in[0] != 0x1f || s.z.next_in[1] != 0x8b) { s.finished = true; break; }
        if (inflateReset(&s.z) != Z_OK) throw error("daydream: " + what_ + ": cannot reset zlib");
        s.ended = false;
      }
      s.z.next_out = reinterpret_cast<unsigned char*>(p + produced);
      s.z.avail_out = static_cast<uInt>(std::min<std::size_t>(n - produced, std::numeric_limits<uInt>::max()));
      const auto before_out = s.z.avail_out;
      const auto before_in = s.z.avail_in;
      const int rc = inflate(&s.z, Z_NO_FLUSH);
      produced += before_out - s.z.avail_out;
      s.consumed += before_in - s.z.avail_in;
      if (rc == Z_STREAM_END) { s.ended = true; continue; }
      if (rc == Z_NEED_DICT || rc == Z_DATA_ERROR || rc == Z_MEM_ERROR || rc == Z_STREAM_ERROR)
        throw error("daydream: " + what_ + ": corrupt gzip data after " + std::to_string(s.consumed) +
                    " compressed bytes (" + (s.z.msg ? s.z.msg : "zlib error") + ")");
    }
    return produced;
  }

  std::string what_;
  std::unique_ptr<std::FILE, file_closer> file_;
  std::string_view mem_;
  bool gz_ = false;
  char pending_[2] = {0, 0};
  std::size_t pending_size_ = 0;
  std::unique_ptr<zstate> zs_;
  std::size_t size_hint_ = 0, total_ = 0;
};

/// The window size stream_kineto uses when none is given: the text of the events it
/// decodes at once (simdjson's index of it is about as large again).
inline constexpr std::size_t default_window_bytes = std::size_t(4) << 20;

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
//! @endcond

//! @cond DAYDREAM_INTERNAL
/// Threads to use for a count of `threads` where 0 means one per core.
inline unsigned thread_count(unsigned threads) noexcept {
  return threads != 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
}

/// Decodes bytes [0, e] of a window held in `text` ('[', whole events and the ']' at
/// e), whose byte 0 is input byte `shift`, with `dec`.
inline void decode_window(kineto_decoder& dec, simdjson::ondemand::parser& parser, const padded_buffer& text,
                          std::size_t e, std::int64_t shift) {
  dec.set_text(text.data(), e + 1, shift);
  dec.window(parser, text.padded_prefix(e + 1));
}

/// Decodes windows of events on worker threads while the reader goes on: each window
/// into tables of its own, which are appended to the output in window order (the
/// decoder's absorb), so the output is the one a single decoder gives, whatever the
/// threads. The reading thread decodes queued windows too whenever it would otherwise
/// wait for one. A window that fails is decoded again by the caller's decoder, in order,
/// so that the error (the event number in it) is the one the single decoder reports.
class window_workers {
public:
  /// A window: text bytes [0, e] hold '[', whole events and ']'; byte 0 is input byte
  /// `shift`.
  struct job {
    padded_buffer text;
    std::size_t e = 0;
    std::int64_t shift = 0;
    decoded_trace part;
    std::vector<std::string_view> ids; ///< the part's string ids, in order
    std::exception_ptr failed;
    bool done = false;
  };

  /// `merge` appends a decoded window to the output; it is called on the caller's
  /// thread, in window order.
  window_workers(std::string_view source, decoded_trace& out, unsigned workers, std::function<void(job&)> merge)
      : source_(source), out_(out), merge_(std::move(merge)), jobs_(2 * std::size_t(workers) + 2), pools_(workers + 1) {
    threads_.reserve(workers);
    for (unsigned w = 0; w < workers; ++w) {
      try {
        threads_.emplace_back([this, w] { work(w); });
      } catch (const std::system_error&) {
        break; // no more threads to be had: the ones started do the work
      }
    }
  }
  window_workers(const window_workers&) = delete;
  window_workers& operator=(const window_workers&) = delete;
  /// Stops the workers after the windows they hold; the output keeps the strings they stored.
  ~window_workers() {
    {
      std::lock_guard lock(m_);
      stop_ = true;
    }
    work_cv_.notify_all();
    for (auto& t : threads_) t.join();
    for (auto& p : pools_) out_.strings.adopt(std::move(p));
  }

  /// Whether any worker started.
  bool running() const noexcept { return !threads_.empty(); }

  /// The slot of the next window, once one is free (windows done are merged, in order,
  /// until one is). Fill its `text`, `e` and `shift`, then submit().
  job& next() {
    if (submitted_ - merged_ == jobs_.size()) merge_one();
    return jobs_[submitted_ % jobs_.size()];
  }
  /// Hands the slot next() gave to the workers; then merges what is done already.
  void submit() {
    {
      std::lock_guard lock(m_);
      jobs_[submitted_ % jobs_.size()].done = false;
      queue_.push_back(submitted_++);
    }
    work_cv_.notify_one();
    for (;;) {
      {
        std::lock_guard lock(m_);
        if (merged_ == submitted_ || !jobs_[merged_ % jobs_.size()].done) return;
      }
      merge_one();
    }
  }
  /// Merges every window submitted, in order.
  void drain() {
    while (merged_ < submitted_) merge_one();
  }

private:
  /// Waits for the oldest window to be decoded, decoding queued ones on this thread
  /// meanwhile (rather than leave a core idle), and merges it.
  void merge_one() {
    job& j = jobs_[merged_ % jobs_.size()];
    for (std::unique_lock lock(m_); !j.done;) {
      if (queue_.empty()) {
        done_cv_.wait(lock);
        continue;
      }
      const std::size_t k = queue_.front();
      queue_.pop_front();
      lock.unlock();
      decode(jobs_[k % jobs_.size()], parser_, pools_.back());
      lock.lock();
    }
    ++merged_; // before merge: a merge that throws leaves nothing to wait for
    merge_(j);
  }
  void work(unsigned w) {
    simdjson::ondemand::parser parser;
    for (;;) {
      std::size_t k;
      {
        std::unique_lock lock(m_);
        work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (stop_) return;
        k = queue_.front();
        queue_.pop_front();
      }
      decode(jobs_[k % jobs_.size()], parser, pools_[w]);
    }
  }
  /// Decodes window `j` into its tables, storing strings in `pool` (one per thread, so
  /// that a thread stores each string once), and marks it done.
  void decode(job& j, simdjson::ondemand::parser& parser, string_pool& pool) {
    j.failed = nullptr;
    j.part.strings = std::move(pool);
    try {
      kineto_decoder dec(source_, j.part, std::size_t(-1));
      decode_window(dec, parser, j.text, j.e, j.shift);
      j.ids = dec.string_ids_in_order();
    } catch (...) {
      j.failed = std::current_exception();
    }
    pool = std::move(j.part.strings);
    {
      std::lock_guard lock(m_);
      j.done = true;
    }
    done_cv_.notify_all();
  }

  std::string_view source_;
  decoded_trace& out_;
  std::function<void(job&)> merge_;
  std::vector<job> jobs_;
  std::vector<string_pool> pools_; ///< one per worker, and the caller's last
  simdjson::ondemand::parser parser_; ///< the caller's, when it decodes a window
  std::deque<std::size_t> queue_;
  std::size_t submitted_ = 0, merged_ = 0;
  bool stop_ = false;
  std::mutex m_;
  std::condition_variable work_cv_, done_cv_;
  std::vector<std::thread> threads_;
};

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
    // A file smaller than the window gets a window of its size (plus room for the '[').
    if (in_.size_hint() > 0 && in_.size_hint() < window_ && !in_.gzip()) window_ = in_.size_hint() + 1;
    // Worth workers when there are several windows to decode.
    if (threads_ > 1 && (in_.size_hint() == 0 || in_.size_hint() > 2 * window_)) {
      par_ = std::make_unique<window_workers>(in_.name(), out_, threads_ - 1, // and this thread
                                              [this](window_workers::job& j) { merge(j); });
      if (!par_->running()) par_.reset();
    }
    win_.reserve(window_ + 1);
    // Before the events: read windows and look for the events' opening bracket.
    std::size_t len = 0;
    bool at_events = false;
    while (!at_events) {
      len = in_.read(win_.data(), window_);
      if (len == 0) break;
      std::size_t i = 0;
      at_events = scan_head(win_.data(), len, i);
      append(skel_, win_.data(), at_events ? i + 1 : len); // up to the '[' of the events
      if (at_events) {
        // The rest of the window: the events' first bytes, behind a '[' of their own.
        const std::size_t rest = len - (i + 1);
        std::memmove(win_.data() + 1, win_.data() + i + 1, rest);
        win_.data()[0] = '[';
        len = rest + 1;
        gap_at_ = skel_.size() - 1;
        file_pos_ = skel_.size();
      }
    }
    if (at_events) events(parser, len);
    par_.reset(); // every window is merged: the workers go, their strings stay
    win_ = padded_buffer();
    // After the events (or a document with none to stream): the rest, kept whole.
    for (;;) {
      if (skel_.capacity() - skel_.size() < window_)
        skel_.reserve(skel_.size() + std::max(window_, skel_.size() / 2));
      const std::size_t k = in_.read(skel_.data() + skel_.size(), window_);
      skel_.set_size(skel_.size() + k);
      if (k == 0) break;
    }
    if (skel_.size() == 0) throw error("daydream: " + in_.name() + ": empty file");
    dec_.set_input_size(in_.bytes_read());
    dec_.set_text(skel_.data(), skel_.size() - (closed_ ? 1 : 0), 0, gap_at_, gap_len_);
    dec_.run(parser, skel_.padded(), at_events);
  }

private:
  static constexpr std::size_t npos = std::size_t(-1);
  /// Windows are not made smaller than this to share an input among threads.
  static constexpr std::size_t min_parallel_window = std::size_t(1) << 20;

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
  static bool is_space(char c) noexcept { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

  /// Scans `n` bytes of the text before the events (state carried from the bytes before).
  /// Returns true with `at` = the index of the events' '[' when it is among them.
  bool scan_head(const char* p, std::size_t n, std::size_t& at) {
    for (std::size_t i = 0; i < n; ++i) {
      const char c = p[i];
      if (head_ == head_state::none) return false;
      if (h_str_) {
        if (h_esc_) { h_esc_ = false; key_bad_ = true; }
        else if (c == '\\') { h_esc_ = true; key_bad_ = true; }
        else if (c == '"') {
          h_str_ = false;
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
      if (is_space(c)) continue;
      if (head_ == head_state::start) {
        if (c == '{') { head_ = head_state::object; depth_ = 1; expect_key_ = true; continue; }
        if (c == '[') { top_array_ = true; at = i; return true; }
        head_ = head_state::none; // not a trace: decoded whole, which says what it is
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
        h_str_ = true;
        if (depth_ == 1 && expect_key_) { capturing_ = true; key_len_ = 0; key_bad_ = false; expect_key_ = false; }
        break;
      case ':': if (depth_ == 1) colon_ = true; break;
      case ',': if (depth_ == 1) expect_key_ = true; break;
      case '{': case '[': ++depth_; break;
      case '}': case ']':
        if (--depth_ <= 0) { head_ = head_state::none; return false; }
        break;
      default: break;
      }
    }
    return false;
  }

  /// Scans window bytes [i, n) of the events (state carried). Returns the index of the
  /// bracket that closes the events' array, or npos; `cut` is the last comma between
  /// two events seen. With SSE2, 64 bytes at a time: bit masks of the quotes,
  /// backslashes, brackets and commas, and only those bytes are looked at.
  std::size_t scan_events(const char* text, std::size_t i, std::size_t n, std::size_t& cut) {
    const auto* p = reinterpret_cast<const unsigned char*>(text);
    bool in_str = e_str_;
    std::int64_t depth = e_depth_;
    std::size_t skip = e_esc_ ? i : npos; // the byte after a backslash in a string
    e_esc_ = false;
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
            if (c & one) { e_str_ = (x >> bit & 1) != in_str; e_depth_ = depth; return i + static_cast<std::size_t>(bit); }
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
          if (depth == 0) { e_str_ = in_str; e_depth_ = depth; return at; }
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
        if (depth == 0) { e_str_ = in_str; e_depth_ = depth; return i; }
        --depth;
        break;
      case 4: if (depth == 0) cut = i; break;
      default: break;
      }
    }
    e_str_ = in_str;
    e_depth_ = depth;
    e_esc_ = skip == n; // the escaped byte comes with the next read
    return npos;
  }

  /// Whether window bytes (0, e) are whitespace only: no event before a comma at e.
  bool empty_element(std::size_t e) const noexcept {
    const char* p = win_.data();
    std::size_t k = 1;
    while (k < e && is_space(p[k])) ++k;
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
      const std::size_t end = scan_events(win_.data(), scan, len, cut);
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
        // The input ends inside the events.
        flush();
        dec_.set_input_size(in_.bytes_read());
        if (e_str_ || e_depth_ > 0 || !top_array_) {
          // Cut short: the whole events before the cut are decoded first, so that the
          // error is the same whatever the window (an error in them comes first).
          if (cut != npos) decode(parser, cut, false);
        }
        if (e_str_) dec_.syntax_at(simdjson::UNCLOSED_STRING, in_.bytes_read(), false);
        if (e_depth_ > 0 || !top_array_) dec_.syntax_at(simdjson::INCOMPLETE_ARRAY_OR_OBJECT, in_.bytes_read(), false);
        // Chrome's JSON Array Format may leave the array open (a tracer killed mid-run
        // leaves `[{...},{...},`): the events read are the trace; one trailing comma is fine.
        std::size_t e = len;
        while (e > 1 && is_space(win_.data()[e - 1])) --e;
        if (cut != npos && e == cut + 1) e = cut;
        if (len == win_.capacity()) win_.reserve(len + 1); // room for the ']'
        if (e > 1) decode(parser, e, true); // else only whitespace after the last comma
        gap_len_ = in_.bytes_read() - (gap_at_ + 1);
        append(skel_, "]", 1);
        closed_ = true;
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

  enum class head_state : std::uint8_t { start, object, none };

  trace_reader& in_;
  decoded_trace& out_;
  kineto_decoder dec_;
  std::size_t window_;
  unsigned threads_;
  simdjson::ondemand::parser* parser_ = nullptr;
  std::unique_ptr<window_workers> par_; ///< when windows are decoded on other threads
  padded_buffer win_, skel_;
  std::size_t gap_at_ = npos, gap_len_ = 0;
  std::size_t file_pos_ = 0; ///< input byte of window byte 1
  bool cut_before_ = false;  ///< a window of events was decoded before this one
  bool closed_ = false;      ///< the array form's ']' was added
  bool top_array_ = false;
  // before the events
  head_state head_ = head_state::start;
  bool h_str_ = false, h_esc_ = false, expect_key_ = false, capturing_ = false, key_bad_ = false;
  bool pending_ = false, colon_ = false;
  char key_[16] = {};
  std::size_t key_len_ = 0;
  std::int64_t depth_ = 0;
  // in the events
  bool e_str_ = false, e_esc_ = false;
  std::int64_t e_depth_ = 0;
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
