// Defines io::detail::assign_op_work: the FLOPs and bytes of GEMM, convolution and attention operators shared out to the kernels they launched.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_KINETO_FLOPS_HPP
#define DAYDREAM_IO_DETAIL_KINETO_FLOPS_HPP

#include <daydream/graph.hpp>
#include <daydream/io/detail/kineto_events.hpp>
#include <daydream/io/detail/kineto_flatten.hpp>
#include <daydream/io/detail/kineto_links.hpp>
#include <daydream/io/detail/op_flops.hpp>
#include <daydream/kinds.hpp>

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace daydream::io::detail {

//! @cond DAYDREAM_INTERNAL

/// Whether a kernel an operator launched is a helper of its GEMM, convolution or
/// attention rather than the work itself: elementwise and fill kernels, copies and
/// layout transposes, split-K reductions, casts. Case-blind search of the name.
inline bool helper_kernel(std::string_view n) noexcept {
  static constexpr std::string_view words[] = {"elementwise", "fill", "copy", "memset", "memcpy", "splitkreduce",
                                               "reduce_kernel", "transpose", "nchwtonhwc", "nhwctonchw", "cast",
                                               "convert", "softmax", "dropout"};
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; };
  for (auto w : words)
    for (std::size_t i = 0; i + w.size() <= n.size(); ++i) {
      std::size_t j = 0;
      while (j < w.size() && lower(n[i + j]) == w[j]) ++j;
      if (j == w.size()) return true;
    }
  return false;
}

/// Sets `gpu_kernel::flops` and `bytes` on the kernels launched by operators whose work
/// follows from their recorded shapes (op_flops): the operator is the innermost one
/// around the kernel's launch (a kernel under `aten::matmul`'s `aten::mm` counts the
/// mm's work, a copy `matmul` makes counts nothing), the launch launches that kernel
/// alone (a CUDA graph replay carries no operator's work), and among the operator's
/// kernels the helpers (helper_kernel) get none; the others share its FLOPs and bytes in
/// proportion to their recorded durations (all of it to one kernel, exactly). Returns
/// the kernels given FLOPs.
inline std::size_t assign_op_work(const decoded_trace& d, const gpu_links& L, const flat_events& F,
                                  const std::vector<task_id>& gpu_task, daydream::graph& g) {
  std::unordered_map<std::uint32_t, std::vector<std::uint32_t>> by_op; // operator event -> its work kernels
  for (std::uint32_t o = 0; o < d.gpu.size(); ++o) {
    if (gpu_task[o] == no_task || !g.as<gpu_kernel>(gpu_task[o])) continue;
    const auto r = L.launch_of[o];
    if (r == no_index || L.ops_begin[r + 1] - L.ops_begin[r] != 1) continue;
    const auto op = F.attr[r].op;
    if (op == no_index || d.cpu[op].meta == no_index || helper_kernel(d.gpu[o].name)) continue;
    by_op[op].push_back(o);
  }
  std::size_t given = 0;
  for (auto& [op, kernels] : by_op) {
    const auto& m = d.metas[d.cpu[op].meta];
    const auto w = op_flops(d.cpu[op].name, m.input_dims, m.input_types, m.concrete_inputs);
    if (!w || w->flops == 0) continue;
    double total = 0;
    for (auto o : kernels) total += double(std::max<time_ns>(d.gpu[o].dur, 1));
    std::uint64_t flops_left = w->flops, bytes_left = w->bytes;
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      auto h = g.as<gpu_kernel>(gpu_task[kernels[i]]);
      auto& k = g.payload(h);
      if (i + 1 == kernels.size()) {
        k.flops = flops_left, k.bytes = bytes_left; // the rest, so the shares sum exactly
      } else {
        const double share = double(std::max<time_ns>(d.gpu[kernels[i]].dur, 1)) / total;
        k.flops = std::min(flops_left, std::uint64_t(double(w->flops) * share));
        k.bytes = std::min(bytes_left, std::uint64_t(double(w->bytes) * share));
        flops_left -= k.flops, bytes_left -= k.bytes;
      }
      given += k.flops > 0;
    }
  }
  return given;
}

//! @endcond

} // namespace daydream::io::detail

#endif
