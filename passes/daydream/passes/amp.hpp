// Defines the amp pass: automatic mixed precision, modeled by kernel class.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASSES_AMP_HPP
#define DAYDREAM_PASSES_AMP_HPP

#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/launch.hpp>
#include <daydream/params.hpp>
#include <daydream/pass.hpp>
#include <daydream/select.hpp>
#include <daydream/update.hpp>
#include <daydream/passes/support/format.hpp>
#include <daydream/passes/support/kernel_classifier.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace daydream::passes {

/// Automatic mixed precision (Daydream, Zhu et al., ATC'20, §6): training in FP16 with
/// FP32 master weights.
///
/// Cost model: every GPU kernel is classified by name (kernel_classifier). Compute-bound
/// kernels (GEMM, convolution) run on tensor cores and take 1/`compute` of their time;
/// memory-bound kernels (elementwise, normalization, activation, reduction, softmax,
/// device copies and memsets) move half the bytes and take 1/`memory` of their time.
/// Communication and unknown kernels, host<->device copies (the input batch stays FP32)
/// and every CPU task are unchanged. The loss-scaling kernels AMP adds are not modeled
/// (one small elementwise kernel per step). Memory: what the forward and backward
/// allocate and free (their tasks' mem_delta: activations and their gradients, now
/// FP16) is scaled by `activations`. Everything else keeps its size: weight gradients
/// (autocast keeps the parameters FP32, so the memory an `AccumulateGrad` operator
/// allocates, found by the name of the task, of its operator or of the call that
/// launched it, is not scaled), the optimizer step's allocations, and the memory
/// allocated before the trace begins (weights, optimizer state), which is not in any
/// task's mem_delta.
///
/// A CPU-bound model gains nothing: shorter kernels only make the GPU wait longer for
/// the launches. The report gives kernels and time per class, before and after, and
/// the names it could not classify, so a user can tell where the model is blind.
///
///     daydream::apply(g, daydream::passes::amp{});             // 3x / 2x
///     daydream::apply(g, daydream::passes::amp{.compute = 2}); // an older GPU
struct amp {
  static constexpr std::string_view name = "amp"; ///< the --pass name
  /// One line for daydream-whatif --help.
  static constexpr std::string_view help =
      "mixed precision: compute-bound kernels /compute, memory-bound /memory, CPU unchanged, "
      "activation memory x activations. params: compute=3, memory=2, activations=0.5";
  double compute = 3;       ///< speedup of compute-bound kernels
  double memory = 2;        ///< speedup of memory-bound kernels
  double activations = 0.5; ///< scale of the memory the forward and backward allocate
  kernel_classifier classifier = kernel_classifier::defaults(); ///< decides the class of a kernel
  std::size_t list_unclassified = 20; ///< at most this many unclassified names in the report

  /// Reads `compute`, `memory` and `activations`.
  static amp from_params(const pass_params& p) {
    amp a;
    a.compute = p.get_double("compute", a.compute);
    a.memory = p.get_double("memory", a.memory);
    a.activations = p.get_double("activations", a.activations);
    p.finish();
    if (!(a.compute > 0) || !(a.memory > 0))
      throw error("daydream: pass 'amp': compute and memory must be positive speedups");
    return a;
  }

  /// Whether `g` has GPU kernels.
  static bool applicable(const graph& g) {
    auto kernels = tasks<gpu_kernel>(g);
    return kernels.begin() != kernels.end();
  }

  /// Scales every classified kernel and the forward/backward memory; returns the counts
  /// and times per class and the unclassified kernel names. Invalidates nothing.
  pass_report operator()(graph& g) const {
    pass_report rep;
    rep.pass = std::string(name);
    classified classes(g, classifier);
    std::array<std::size_t, kernel_class_count> count{};
    std::array<time_ns, kernel_class_count> before{}, after{};
    std::map<std::string, std::size_t> unknown;
    auto scale = [&](task_id t) {
      auto c = classes(t);
      auto i = static_cast<std::size_t>(c);
      ++count[i];
      before[i] += g.duration(t);
      if (c == kernel_class::compute_bound) scale_duration(g, t, 1.0 / compute);
      else if (c == kernel_class::memory_bound) scale_duration(g, t, 1.0 / memory);
      else if (c == kernel_class::unknown) ++unknown[std::string(g.name(t))];
      after[i] += g.duration(t);
    };
    for (auto k : tasks<gpu_kernel>(g)) scale(k);
    std::size_t host_copies = 0;
    const auto on_device = pred([](const auto& m) {
      return m.payload().direction == copy_kind::d2d || m.payload().direction == copy_kind::memset;
    });
    for (auto m : tasks<memcpy_task>(g) | where(on_device)) scale(m);
    for ([[maybe_unused]] auto m : tasks<memcpy_task>(g) | where(!on_device)) ++host_copies;
    std::int64_t mem_before = 0, mem_after = 0, grad_mem = 0; // what the forward and backward allocate
    const auto allocates = pred([&](const auto& t) { return g.mem_delta(t) != 0; });
    for (auto t : tasks(g) | where(allocates && (in_phase(phase::forward) || in_phase(phase::backward)))) {
      const auto d = g.mem_delta(t);
      if (weight_gradient(g, t)) {
        if (d > 0) grad_mem += d;
        continue;
      }
      g.set_mem_delta(t, std::llround(double(d) * activations));
      if (d > 0) { mem_before += d; mem_after += g.mem_delta(t); }
    }
    for (int i = 0; i < kernel_class_count; ++i)
      rep.add(std::string(to_string(kernel_class(i))),
              std::to_string(count[i]) + " kernels, " + format_time(before[i]) + " -> " +
                  format_time(after[i]));
    rep.add("host copies (unchanged)", std::to_string(host_copies));
    if (mem_before > 0)
      rep.add("forward/backward allocations", format_bytes(double(mem_before)) + " -> " +
                                                  format_bytes(double(mem_after)));
    if (grad_mem > 0) rep.add("weight-gradient allocations (FP32, unchanged)", format_bytes(double(grad_mem)));
    std::size_t changed = 0;
    for (int i = 0; i < kernel_class_count; ++i)
      if (before[i] != after[i]) ++changed;
    if (changed == 0 && mem_before == mem_after)
      rep.not_applied(count[int(kernel_class::compute_bound)] + count[int(kernel_class::memory_bound)] == 0
                          ? "no kernel of the graph is compute- or memory-bound (by name), and no activation "
                            "memory is recorded: nothing runs in half precision"
                          : "the compute- and memory-bound kernels are too short to get shorter");
    if (!unknown.empty()) {
      std::string names;
      std::size_t listed = 0;
      for (auto& [n, k] : unknown) {
        if (listed++ == list_unclassified) { names += "; ..."; break; }
        auto shown = n.size() > 120 ? n.substr(0, 117) + "..." : n;
        names += (names.empty() ? "" : "; ") + shown + " (x" + std::to_string(k) + ")";
      }
      rep.add("unclassified kernels", names);
      rep.note(std::to_string(unknown.size()) +
               " kernel names matched no rule of the classifier and were left unchanged");
    }
    return rep;
  }

private:
  /// Whether the memory task `t` allocates is a weight gradient's: `t`, its operator,
  /// or the call that launched it belongs to an AccumulateGrad.
  static bool weight_gradient(const graph& g, task_id t) {
    auto is_accumulate = [&](std::string_view n) { return n.find("AccumulateGrad") != std::string_view::npos; };
    if (is_accumulate(g.name(t))) return true;
    task_id call = g.is<cpu_task>(t) ? t : launch_of(g, t);
    if (call == no_task) return false;
    if (is_accumulate(g.name(call))) return true;
    auto op = g.payload(g.as<cpu_task>(call)).op;
    return op != no_name && is_accumulate(g.str(op));
  }
};

} // namespace daydream::passes

#endif
