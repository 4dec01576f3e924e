// Defines io::detail::parallel_for: the build stages' per-thread and per-stream work spread over a few threads.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_KINETO_PARALLEL_HPP
#define DAYDREAM_IO_DETAIL_KINETO_PARALLEL_HPP

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <system_error>
#include <thread>
#include <vector>

namespace daydream::io::detail {

//! @cond DAYDREAM_INTERNAL

/// Calls `fn(i)` once for every i in [0, n), on up to `workers` threads (the calling
/// thread is one of them; 0 or 1: all on the calling thread, in order). Items are handed
/// out in index order as threads free up, so list the largest first. `fn` must write only
/// what item i owns: the result is then the same whatever the threads. If calls throw,
/// the exception of the lowest index is rethrown once all threads are done (the same
/// error as on one thread, which stops at it).
template <class Fn> void parallel_for(std::size_t n, unsigned workers, Fn&& fn) {
  const std::size_t used = std::min<std::size_t>(workers ? workers : 1, n);
  if (used <= 1) {
    for (std::size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<std::size_t> next{0};
  std::vector<std::exception_ptr> failed(n);
  auto work = [&] {
    for (std::size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;) {
      try {
        fn(i);
      } catch (...) {
        failed[i] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(used - 1);
  try {
    for (std::size_t k = 1; k < used; ++k) pool.emplace_back(work);
  } catch (const std::system_error&) {
    // no more threads to be had: the ones started and this one do the rest
  }
  work();
  for (auto& t : pool) t.join();
  for (auto& e : failed)
    if (e) std::rethrow_exception(e);
}

/// Indices [0, n) ordered by decreasing `size(i)` (ties by index): the order in which to
/// hand uneven items to parallel_for.
template <class Size> std::vector<std::size_t> largest_first(std::size_t n, Size&& size) {
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return size(a) > size(b); });
  return order;
}

//! @endcond

} // namespace daydream::io::detail

#endif
