// Defines io::detail::window_workers: windows of Kineto events decoded on worker threads, their tables appended to the output in window order.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_KINETO_WINDOW_WORKERS_HPP
#define DAYDREAM_IO_DETAIL_KINETO_WINDOW_WORKERS_HPP

#include <daydream/io/detail/kineto_decode.hpp>
#include <daydream/io/detail/kineto_events.hpp>
#include <daydream/io/detail/trace_file.hpp>

#include <simdjson.h>

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace daydream::io::detail {

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
//! @endcond

} // namespace daydream::io::detail

#endif
