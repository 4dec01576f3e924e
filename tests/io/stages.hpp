// Defines helpers for the tests of single ingest stages: a decoded trace kept alive with its buffer.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_TESTS_IO_STAGES_HPP
#define DAYDREAM_TESTS_IO_STAGES_HPP

#include <daydream/io/detail/kineto_decode.hpp>
#include <daydream/io/detail/kineto_flatten.hpp>
#include <daydream/io/detail/kineto_iterations.hpp>
#include <daydream/io/detail/kineto_links.hpp>
#include <daydream/io/detail/kineto_threads.hpp>
#include <daydream/io/detail/trace_file.hpp>

#include <simdjson.h>

#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>

namespace daydream::testing {

/// A decoded trace and the buffers its string views point into.
struct decoded {
  io::detail::padded_buffer buf;
  simdjson::ondemand::parser parser;
  io::detail::decoded_trace d;
};

/// Decodes a trace text (the first stage every other stage reads).
inline std::unique_ptr<decoded> decode(std::string_view json) {
  auto p = std::make_unique<decoded>();
  p->buf = io::detail::padded_buffer::copy_of(json);
  io::detail::decode_kineto(p->parser, p->buf.padded(), "test.json", p->d);
  return p;
}

/// The index of the first CPU event named `name` (at `ts_us` if given), or no_index.
/// A decoded trace through stage 4 (threads grouped, GPU ops linked, iterations found,
/// threads flattened): what the flattening tests check and the cut stages start from.
struct flattened {
  std::unique_ptr<decoded> src;
  io::detail::thread_table tt;
  io::detail::gpu_links L;
  io::detail::warning_log w;
  io::detail::iteration_table its;
  io::detail::flat_events F;
  explicit flattened(std::unique_ptr<decoded> t) : src(std::move(t)) {
    tt = io::detail::group_threads(src->d);
    L = io::detail::link_gpu_ops(src->d, tt);
    its = io::detail::find_iterations(src->d, w);
    F = io::detail::flatten_threads(src->d, tt, L, its);
  }
};

inline std::uint32_t cpu_named(const io::detail::decoded_trace& d, std::string_view name, time_ns ts_us = -1) {
  for (std::uint32_t i = 0; i < d.cpu.size(); ++i)
    if (d.cpu[i].name == name && (ts_us < 0 || d.cpu[i].ts == ts_us * 1000)) return i;
  return io::detail::no_index;
}
/// The index of the GPU event named `name`, or no_index.
inline std::uint32_t gpu_named(const io::detail::decoded_trace& d, std::string_view name) {
  for (std::uint32_t i = 0; i < d.gpu.size(); ++i)
    if (d.gpu[i].name == name) return i;
  return io::detail::no_index;
}

} // namespace daydream::testing

#endif
