// Defines the amp pass: automatic mixed precision, modeled by kernel class.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASSES_AMP_HPP
#define DAYDREAM_PASSES_AMP_HPP

#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/launch.hpp>
#include <daydream/pass.hpp>
#include <daydream/report.hpp>
#include <daydream/select.hpp>
#include <daydream/update.hpp>
#include <daydream/insert.hpp>
#include <daydream/trace_order.hpp>
#include <daydream/semantics/edit.hpp>
#include <daydream/semantics/estimate.hpp>
#include <daydream/semantics/format.hpp>
#include <daydream/semantics/kernel_classifier.hpp>
#include <daydream/semantics/device_catalogue.hpp>
#include <daydream/semantics/kernel_family.hpp>
#include <daydream/semantics/retarget.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <regex>
#include <unordered_map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace daydream::passes {

/// Automatic mixed precision (Daydream, Zhu et al., ATC'20, §6), as PyTorch's autocast
/// runs it: training in FP16 or BF16 with FP32 master weights.
///
/// Cost model, in four parts.
///
/// 1. **What the run already has.** Every GPU kernel is classified by name
///    (kernel_classifier) and its precision read from its name (precision_of_kernel:
///    `sgemm`, `h884gemm`, `bf16`, `__nv_bfloat16`, `e4m3`, ...). When at least `already`
///    (half) of the compute-bound kernel time is in FP16, BF16 or FP8, the run is
///    already in reduced precision: the pass changes nothing and says so. Otherwise
///    kernels already in reduced precision are left as they are.
/// 2. **Kernels.** Compute-bound kernels (GEMM, convolution) run on tensor cores: those
///    in FP32 on the CUDA cores get `compute` times faster, those the trace already runs
///    on TF32 tensor cores (`tf32`, `s1688gemm` in their names: PyTorch's default for FP32
///    convolutions on Ampere and later) `tf32` times. Both default to the trace GPU's
///    datasheet (the device catalogue, data/devices.json, found by the trace's
///    deviceProperties name): its dense FP16/BF16 tensor-core peak over its FP32 peak
///    (14.8x on the H100 and H200, 16x on the A100, 8x on the V100 and MI300X) and over
///    its TF32 peak (2x); on a GPU the catalogue does not know, 3x and 2x. Memory-bound
///    kernels (elementwise, normalization, activation, reduction, softmax, device copies
///    and memsets) get `memory` times faster: 1.25x, what the recorded pairs show (ViT-B/16
///    elementwise 1.22x, ResNet-50 fp16 normalization 1.26x on an H100), not the 2x of
///    halving every byte, because autocast runs in 16 bits only what follows a GEMM or
///    convolution and keeps normalization, softmax, losses and an FP32 residual stream in
///    FP32 (and bf16 batch norm leaves cuDNN: 0.75x on ResNet-50). Only the part of a
///    kernel's time beyond `overhead` shrinks: a kernel's launch latency, pipeline fill
///    and drain do not depend on its arithmetic (a 5 us FP32 GEMM of a batch of 32 runs
///    in about 3 us in FP16 on an H200, not 0.4 us). The optimizer step is left as
///    it is: autocast keeps the weights, their gradients and the optimizer's state in
///    FP32 (the master weights), so the weight-update phase's kernels move the same
///    bytes. Communication and unknown kernels, host<->device copies and the CPU work of
///    the traced operators are unchanged.
/// 3. **The casts autocast adds** (`casts`, on by default). Before each forward GEMM or
///    convolution operator (the operator that launches a compute-bound kernel) autocast
///    casts its FP32 inputs: the weight (one cast per use; `aten::addmm`, a linear
///    layer with a bias, casts the bias too) and the input activation when it is FP32
///    (the first GEMM of the step, and one after an operator autocast runs in FP32:
///    layer/group norm, softmax, losses). Each cast is an operator (`aten::to` around
///    `aten::_to_copy` and `aten::copy_`) with one elementwise kernel; in the backward
///    each cast of a tensor that needs a gradient (all but the step's input) casts the
///    gradient back, after the layer's last backward GEMM. A cast's CPU cost is twice
///    the median CPU time of the trace's own one-kernel elementwise operators (the cast
///    nests two dispatches around an allocation and a copy); its kernel takes the
///    trace's elementwise time per byte over the reads and writes of half the
///    operator's recorded input bytes (the median elementwise kernel when the trace has
///    no shapes), at most the GEMM's own time (a cast reads what the GEMM reads). So a CPU-bound loop gets *slower*: more operators to dispatch, no
///    shorter CPU work.
/// 4. **GradScaler** (`scaler`, with dtype=fp16): before each optimizer step the
///    gradients are unscaled and checked (`_amp_foreach_non_finite_check_and_unscale_`:
///    one operator and a kernel reading every gradient once, a fifth of the step's
///    weight-update GPU time) and the CPU waits for the result (`found_inf.item()`):
///    a sync that makes the optimizer's launches wait for the backward to finish.
///    BF16 needs no loss scaling.
///
/// Memory: what the forward and backward allocate and free (their tasks' mem_delta:
/// activations and their gradients, now 16-bit) is scaled by `activations`. Weight
/// gradients (`AccumulateGrad`), the optimizer step's allocations and the memory
/// allocated before the trace keep their size.
///
/// Not modelled: the autocast dispatch key's own overhead on every operator, the
/// weight-cast cache across several uses of one weight in a step (each use is cast),
/// the loss scaling multiply and the scale update (two small operators a step).
///
///     daydream::apply(g, daydream::passes::amp{.catalogue = daydream::io::bundled_device_catalogue()});
///     daydream::apply(g, daydream::passes::amp{});                  // fp16: 3x / 2x, casts, GradScaler
///     daydream::apply(g, daydream::passes::amp{.dtype = "bf16"});   // no GradScaler
///     daydream::apply(g, daydream::passes::amp{.compute = 2});      // an older GPU
struct amp {
  static constexpr std::string_view name = "amp"; ///< the --pass name
  /// Speedup of FP32 compute-bound kernels; 0: the GPU's 16-bit tensor-core peak over its
  /// FP32 peak from `catalogue` (3 when the catalogue does not know the trace's GPU).
  double compute = 0;
  /// Speedup of compute-bound kernels already on TF32 tensor cores; 0: the GPU's 16-bit
  /// peak over its TF32 peak (2 when unknown).
  double tf32 = 0;
  /// Speedup of memory-bound kernels: 1.25, as measured (autocast runs only what follows
  /// a GEMM or convolution in 16 bits; normalization, softmax, losses and an FP32 residual
  /// stream stay FP32), not the 2 of halving every byte.
  double memory = 1.25;
  time_ns overhead = 2'000; ///< the part of a kernel's time that does not shrink (launch latency, fill, drain)
  device_catalogue catalogue; ///< the GPUs whose peaks give `compute` and `tf32` (the command line's: the bundled one)
  double activations = 0.5; ///< scale of the memory the forward and backward allocate
  std::string dtype = "fp16"; ///< the reduced precision: "fp16" or "bf16"
  bool casts = true;        ///< model the cast operators autocast adds
  bool scaler = true;       ///< model GradScaler's unscale and sync (dtype fp16 only)
  /// Share of compute-bound kernel time already in reduced precision from which the run
  /// counts as already mixed precision (nothing to gain).
  double already = 0.5;
  kernel_classifier classifier = kernel_classifier::defaults(); ///< decides the class of a kernel
  std::size_t list_unclassified = 20; ///< at most this many unclassified names in the report

  /// The GEMM and convolution time of `g` (compute-bound kernels, by `classes`) and how
  /// much of it already runs in reduced precision, with the precisions found ("bf16 (12)").
  struct precision_found {
    time_ns compute_time = 0, reduced_time = 0;
    std::string which;
  };
  static precision_found precision_of(const graph& g, classified& classes, kernel_families& fam) {
    precision_found p;
    std::map<std::string, std::size_t> reduced_names;
    for (auto k : tasks<gpu_kernel>(g)) {
      if (classes(k) != kernel_class::compute_bound) continue;
      p.compute_time += g.duration(k);
      if (reduced_precision(fam.precision(k))) {
        p.reduced_time += g.duration(k);
        ++reduced_names[std::string(to_string(fam.precision(k)))];
      }
    }
    for (auto& [n, c] : reduced_names) p.which += (p.which.empty() ? "" : ", ") + n + " (" + std::to_string(c) + ")";
    return p;
  }

  /// Why the pass at its defaults changes nothing on `g` ("" when it does): no GPU
  /// kernel, or the GEMMs and convolutions run in reduced precision already.
  static std::string not_applicable(const graph& g) {
    auto kernels = tasks<gpu_kernel>(g);
    if (kernels.begin() == kernels.end())
      return "the trace has no GPU kernel: AMP changes how long kernels take";
    const amp a;
    classified classes(g, a.classifier);
    kernel_families fam(g);
    const auto p = precision_of(g, classes, fam);
    if (p.compute_time > 0 && double(p.reduced_time) >= a.already * double(p.compute_time))
      return a.already_reduced(p);
    if (auto s = grad_scaler_found(g); !s.empty()) return already_scaled(s);
    return {};
  }

  /// Whether `g` has GPU kernels whose GEMMs and convolutions are not in reduced
  /// precision already.
  static bool applicable(const graph& g) { return not_applicable(g).empty(); }

  /// Scales every classified kernel not yet in reduced precision and the
  /// forward/backward memory, inserts the casts and GradScaler's work; returns the
  /// counts and times per class, the precision found and what was inserted.
  /// Invalidates nothing.
  pass_report operator()(graph& g) const {
    check_dtype();
    if (!(compute >= 0) || !(tf32 >= 0) || !(memory > 0) || !std::isfinite(compute) || !std::isfinite(tf32) ||
        !std::isfinite(memory) || overhead < 0)
      throw error("daydream: pass 'amp': compute and tf32 must be speedups (0: from the GPU's peaks), memory a "
                  "positive speedup and overhead not negative");
    pass_report rep;
    rep.pass = std::string(name);
    classified classes(g, classifier);
    kernel_families fam(g);
    // 1. The precision the run already has.
    const auto found = precision_of(g, classes, fam);
    if (found.compute_time > 0 && double(found.reduced_time) >= already * double(found.compute_time)) {
      rep.add("compute-bound time already in reduced precision",
              fmt_share(found.reduced_time, found.compute_time) + " (" + found.which + " kernels)",
              report_value::of_ratio(double(found.reduced_time) / double(std::max<time_ns>(found.compute_time, 1))));
      rep.not_applied(already_reduced(found));
      return rep;
    }
    if (auto scaler_op = grad_scaler_found(g); !scaler_op.empty()) {
      rep.not_applied(already_scaled(scaler_op));
      return rep;
    }
    const auto speed = speedups(g);
    rep.add("speedups (" + speed.source + ")",
            fmt_factor(speed.fp32) + " FP32, " + fmt_factor(speed.tf32) + " TF32 compute-bound; " +
                fmt_factor(memory) + " memory-bound; " + format_time(overhead) + " of each kernel unchanged",
            report_value::of_ratio(speed.fp32));
    std::array<std::size_t, kernel_class_count> count{};
    std::array<time_ns, kernel_class_count> before{}, after{};
    std::map<std::string, std::size_t> unknown;
    std::size_t kept_reduced = 0, on_tf32 = 0, optimizer = 0;
    time_ns optimizer_time = 0;
    auto scale = [&](task_id t) {
      auto c = classes(t);
      auto i = static_cast<std::size_t>(c);
      ++count[i];
      before[i] += g.duration(t);
      const bool scalable = c == kernel_class::compute_bound || c == kernel_class::memory_bound;
      if (reduced_precision(fam.precision(t))) ++kept_reduced;
      else if (scalable && g.phase_of(t) == phase::weight_update) {
        ++optimizer; // FP32 master weights: the optimizer's kernels are unchanged
        optimizer_time += g.duration(t);
      } else if (c == kernel_class::compute_bound) {
        const bool tf = fam.precision(t) == numeric_precision::tf32;
        on_tf32 += tf;
        shrink(g, t, tf ? speed.tf32 : speed.fp32);
      } else if (c == kernel_class::memory_bound) shrink(g, t, memory);
      else if (c == kernel_class::unknown) ++unknown[std::string(g.name(t))];
      after[i] += g.duration(t);
    };
    // The casts go next to the original kernels: find them before anything is inserted.
    const auto plan = plan_casts(g, classes, fam, casts);
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
              std::to_string(count[i]) + " kernels, " + format_time(before[i]) + " -> " + format_time(after[i]),
              report_value::of_change(report_kind::time, double(before[i]), double(after[i]))
                  .with_count(std::int64_t(count[i])));
    if (on_tf32 > 0) rep.add_count("compute-bound kernels already on TF32 tensor cores (/tf32)", std::int64_t(on_tf32));
    if (optimizer > 0)
      rep.add("weight-update kernels (FP32 master weights, unchanged)",
              std::to_string(optimizer) + " kernels, " + format_time(optimizer_time),
              report_value::of_time(double(optimizer_time)).with_count(std::int64_t(optimizer)));
    rep.add_count("host copies (unchanged)", std::int64_t(host_copies));
    if (mem_before > 0)
      rep.add("forward/backward allocations", format_bytes(double(mem_before)) + " -> " + format_bytes(double(mem_after)),
              report_value::of_change(report_kind::bytes, double(mem_before), double(mem_after)));
    if (grad_mem > 0)
      rep.add("weight-gradient allocations (FP32, unchanged)", format_bytes(double(grad_mem)),
              report_value::of_bytes(double(grad_mem)));
    if (kept_reduced > 0) rep.add_count("kernels already in reduced precision (unchanged)", std::int64_t(kept_reduced));
    std::size_t changed = 0;
    for (int i = 0; i < kernel_class_count; ++i)
      if (before[i] != after[i]) ++changed;
    reserve_insertions(g, plan);
    const std::size_t inserted = casts ? insert_casts(g, plan, rep) : 0;
    const std::size_t scaled = dtype == "fp16" && scaler ? insert_scaler(g, plan, rep) : 0;
    if (changed == 0 && mem_before == mem_after && inserted + scaled == 0)
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
      rep.add("unclassified kernels", names, report_value::of_text().with_count(std::int64_t(unknown.size())));
      rep.note(std::to_string(unknown.size()) +
               " kernel names matched no rule of the classifier and were left unchanged");
    }
    return rep;
  }

  /// The speedups a run of `g` gets: `compute` and `tf32` when set, else from the trace
  /// GPU's peaks in `catalogue`, else 3 and 2; `source` says which.
  struct speedup_source {
    double fp32 = 3, tf32 = 2;
    std::string source;
  };
  speedup_source speedups(const graph& g) const {
    speedup_source out;
    const device* d = g.devices().empty() ? nullptr : catalogue.find_kineto(g.devices().front().name);
    std::optional<double> fp32_rate, tf32_rate, half_rate;
    if (d) {
      auto p = dtype == "bf16" ? numeric_precision::bf16 : numeric_precision::fp16;
      half_rate = compute_rate(*d, p);
      auto f = numeric_precision::fp32;
      fp32_rate = compute_rate(*d, f);
      tf32_rate = d->tf32_flops;
    }
    out.fp32 = compute > 0 ? compute : (half_rate && fp32_rate ? *half_rate / *fp32_rate : 3.0);
    out.tf32 = tf32 > 0 ? tf32 : (half_rate && tf32_rate ? *half_rate / *tf32_rate : 2.0);
    if (compute > 0 && tf32 > 0) {
      out.source = "as given";
    } else if (!d) {
      out.source = g.devices().empty() ? "the trace names no GPU: defaults 3x and 2x"
                                       : "'" + g.devices().front().name + "' is not in the device catalogue: defaults 3x and 2x";
    } else {
      std::string given = compute > 0 ? "FP32 as given" : tf32 > 0 ? "TF32 as given" : "";
      std::string missing;
      if (compute <= 0 && !(half_rate && fp32_rate)) missing += "no FP32 or 16-bit peak: 3x";
      if (tf32 <= 0 && !(half_rate && tf32_rate)) missing += std::string(missing.empty() ? "" : "; ") + "no TF32 peak: 2x";
      out.source = "the " + d->name + "'s datasheet peaks" + (given.empty() ? "" : "; " + given) +
                   (missing.empty() ? "" : "; " + missing);
    }
    return out;
  }

  /// Throws daydream::usage_error unless `dtype` is one the pass models (fp16, bf16); the
  /// call operator checks it too.
  void check_dtype() const {
    if (dtype != "fp16" && dtype != "bf16")
      throw usage_error("daydream: pass 'amp': dtype must be fp16 or bf16 (got '" + dtype +
                        "'); the reverse question, a reduced-precision run in FP32, is not modelled");
  }

private:
  /// `t` gets `factor` times faster in the part of its time beyond `overhead`.
  void shrink(graph& g, task_id t, double factor) const {
    const time_ns d = g.duration(t);
    const time_ns fixed = std::min(overhead, d);
    set_duration(g, t, fixed + time_ns(std::llround(double(d - fixed) / factor)));
  }

  static std::string fmt_factor(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3gx", x);
    return buf;
  }

  /// The name of a GradScaler operator the trace runs (its unscale and inf check, or its
  /// scale update), or "" when it runs none.
  static std::string grad_scaler_found(const graph& g) {
    for (auto t : tasks<cpu_task>(g)) {
      const auto n = g.name(t);
      if (n.find("_amp_foreach_non_finite_check_and_unscale_") != std::string_view::npos ||
          n.find("_amp_update_scale") != std::string_view::npos)
        return std::string(n);
    }
    return {};
  }
  static std::string already_scaled(const std::string& op) {
    return "already mixed precision: the trace runs GradScaler (" + op +
           "), which only an autocast run with loss scaling has: nothing to gain from AMP";
  }

  static std::string already_reduced(const precision_found& p) {
    return "already reduced precision: " + fmt_share(p.reduced_time, p.compute_time) +
           " of the GEMM/convolution time runs in " + p.which + " kernels (by their names): nothing to gain from AMP";
  }

  static std::string fmt_share(time_ns part, time_ns whole) {
    return std::to_string(int(std::lround(100.0 * double(part) / double(std::max<time_ns>(whole, 1))))) + "%";
  }

  /// One forward GEMM/convolution operator that autocast feeds casts.
  struct cast_site {
    task_id first_cpu = no_task; ///< the operator's first CPU slice: the casts' calls go before it
    task_id kernel = no_task;    ///< its first compute-bound kernel: the cast kernels go before it
    task_id backward = no_task;  ///< the layer's last backward compute-bound kernel of the iteration, if any
    int casts = 0;               ///< forward casts
    int grad_casts = 0;          ///< backward casts (of the tensors that need a gradient)
    time_ns kernel_time = 0;     ///< one cast kernel's duration
  };
  struct cast_plan {
    std::vector<cast_site> sites;
    time_ns cpu_cost = 0;     ///< one cast operator's CPU time
    std::size_t cost_samples = 0;
    time_ns step_kernel = 0;  ///< the median elementwise kernel, for casts without shapes
  };

  /// Measures what a cast (and any small operator) costs on this trace and, when
  /// `sites` is set, finds where autocast would cast.
  static cast_plan plan_casts(const graph& g, classified& classes, kernel_families& fam, bool sites) {
    cast_plan plan;
    // The cost of a cast: twice the median one-kernel elementwise operator.
    std::vector<time_ns> op_times, kernel_times;
    std::set<task_id> seen_calls;
    for (auto k : tasks<gpu_kernel>(g)) {
      if (g.phase_of(k) != phase::forward || fam.family(k) != kernel_family::elementwise) continue;
      kernel_times.push_back(g.duration(k));
      auto call = launch_of(g, k);
      if (call == no_task || !seen_calls.insert(call).second) continue;
      if (launched_by(g, call).size() != 1) continue;
      auto run = operator_tasks(g, call);
      if (run.size() < 2) continue; // a bare launch: no operator around it
      std::size_t launches = 0;
      time_ns t = 0;
      for (std::size_t i = 0; i < run.size(); ++i) {
        t += g.duration(run[i]) + (i + 1 < run.size() ? g.gap(run[i]) : 0);
        if (auto h = g.as<cpu_task>(run[i]); h && g.payload(h).call == cpu_call::launch) ++launches;
      }
      if (launches == 1) op_times.push_back(t);
    }
    auto median = [](std::vector<time_ns> v, time_ns fallback) {
      if (v.empty()) return fallback;
      std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(v.size() / 2), v.end());
      return v[v.size() / 2];
    };
    plan.cost_samples = op_times.size();
    plan.cpu_cost = 2 * median(op_times, 10'000);
    plan.step_kernel = median(kernel_times, 2'000);
    if (!sites) return plan;
    const auto rate = measure_rate(g);
    // The layer's last backward compute-bound kernel, per (iteration, layer).
    std::map<std::pair<std::int32_t, name_id>, task_id> last_backward;
    const trace_order before(g);
    for (auto k : tasks<gpu_kernel>(g)) {
      if (g.phase_of(k) != phase::backward || classes(k) != kernel_class::compute_bound) continue;
      if (reduced_precision(fam.precision(k))) continue;
      auto& slot = last_backward[{g.iteration(k), g.layer_id(k)}];
      if (slot == no_task || before(slot, k)) slot = k;
    }
    // Forward compute-bound kernels in trace order; between two of them on a thread, an
    // operator autocast runs in FP32 makes the next one's input FP32 again.
    static const std::regex fp32_ops("layer_?norm|group_?norm|softmax|loss|nll|cross_entropy",
                                     std::regex::ECMAScript | std::regex::icase | std::regex::optimize);
    // Once per distinct kernel name: a step runs the same kernels many times over.
    std::unordered_map<name_id, bool> fp32_named;
    auto runs_fp32 = [&](name_id id) {
      auto [at, fresh] = fp32_named.try_emplace(id, false);
      if (fresh) {
        const auto n = g.str(id);
        at->second = std::regex_search(n.begin(), n.end(), fp32_ops);
      }
      return at->second;
    };
    std::vector<task_id> forward;
    for (auto k : tasks<gpu_kernel>(g))
      if (g.phase_of(k) == phase::forward && g.iteration(k) >= 0) forward.push_back(k);
    std::sort(forward.begin(), forward.end(), before);
    std::map<std::int32_t, bool> fp32_input; // per iteration: whether the next GEMM's input is FP32
    std::set<task_id> sites_seen;
    std::set<std::int32_t> started; // iterations whose first GEMM was seen
    for (auto k : forward) {
      const auto it = g.iteration(k);
      if (!fp32_input.count(it)) fp32_input[it] = true; // the step's input batch
      const auto cls = classes(k);
      // Autocast casts the inputs of GEMMs and convolutions, not of every compute-bound kernel.
      if (cls != kernel_class::compute_bound || fam.family(k) != kernel_family::gemm) {
        if (runs_fp32(g.name_id_of(k))) fp32_input[it] = true;
        continue;
      }
      if (reduced_precision(fam.precision(k))) continue;
      const auto call = launch_of(g, k);
      if (call == no_task) continue;
      const auto run = operator_tasks(g, call);
      const auto first = run.front();
      if (!sites_seen.insert(first).second) continue; // one operator, several kernels
      cast_site s;
      s.first_cpu = first;
      s.kernel = k;
      const auto op = g.payload(g.as<cpu_task>(call)).op;
      const bool bias = op != no_name && g.str(op).find("addmm") != std::string_view::npos;
      const bool input = fp32_input[it];
      const bool first_of_step = started.insert(it).second; // its input is the batch: no gradient
      s.casts = 1 + (bias ? 1 : 0) + (input ? 1 : 0);
      s.grad_casts = s.casts - (first_of_step && input ? 1 : 0);
      fp32_input[it] = false;
      const auto bytes = launch_tensor_bytes(g, k);
      // A cast reads what the GEMM reads: it takes at most the GEMM's own time.
      s.kernel_time = bytes > 0 && rate.samples > 0
                          ? std::max<time_ns>(rate.estimate(bytes * 3 / 8, 1e12) / std::max(1, s.casts), 1)
                          : plan.step_kernel;
      s.kernel_time = std::min(s.kernel_time, std::max<time_ns>(g.duration(k), 1));
      if (auto b = last_backward.find({it, g.layer_id(k)}); b != last_backward.end()) s.backward = b->second;
      else s.grad_casts = 0;
      plan.sites.push_back(s);
    }
    return plan;
  }
  /// Room for every task the casts and the scaler insert, at once: a copied graph (a
  /// what-if's) has none to spare, and growing by doubling would hold its arrays twice.
  /// A cast is a call and a kernel; the scaler, per iteration, a call, a kernel and a sync;
  /// each has a few links.
  void reserve_insertions(graph& g, const cast_plan& plan) const {
    std::size_t calls = 0, kernels = 0;
    if (casts)
      for (auto& s : plan.sites) kernels += std::size_t(s.casts) + std::size_t(s.grad_casts);
    calls = kernels;
    if (dtype == "fp16" && scaler) {
      std::vector<std::int32_t> its;
      g.for_each_task([&](task_id t) {
        if (g.iteration(t) >= 0 && (its.empty() || its.back() != g.iteration(t))) its.push_back(g.iteration(t));
      });
      std::sort(its.begin(), its.end());
      const auto steps = std::size_t(std::unique(its.begin(), its.end()) - its.begin());
      calls += 2 * steps;
      kernels += steps;
    }
    if (calls + kernels == 0) return;
    g.reserve(g.id_bound() + calls + kernels);
    g.reserve<cpu_task>(calls);
    g.reserve<gpu_kernel>(kernels);
    g.reserve_dependencies(4 * (calls + kernels));
  }

  /// Inserts the planned casts; returns how many operators it added.
  std::size_t insert_casts(graph& g, const cast_plan& plan, pass_report& rep) const {
    std::size_t fwd = 0, bwd = 0;
    time_ns cpu = 0, gpu = 0;
    const std::string kname = "autocast: cast to " + std::string(dtype == "bf16" ? "bfloat16" : "float16") +
                              " (elementwise copy)";
    const std::string gname = "autocast: gradient cast to float32 (elementwise copy)";
    for (auto& s : plan.sites) {
      const auto kp = g.payload(g.as<gpu_kernel>(s.kernel)); // a copy: inserting moves the payloads
      for (int c = 0; c < s.casts; ++c) {
        task_fields f{.name = kname, .duration = s.kernel_time, .trace_start = g.trace_start(s.kernel),
                      .layer = g.layer(s.kernel), .phase = phase::forward, .iteration = g.iteration(s.kernel)};
        insert_launched(g, gpu_kernel{.device = kp.device, .stream = kp.stream}, f, just_before(s.kernel),
                        just_before(s.first_cpu), launch_call{.name = "aten::to", .duration = plan.cpu_cost});
        ++fwd;
        cpu += plan.cpu_cost;
        gpu += s.kernel_time;
      }
      // Gradient casts right after the backward kernel, launched like it.
      if (s.backward == no_task || s.grad_casts == 0 || launch_of(g, s.backward) == no_task) continue;
      const auto bp = g.payload(g.as<gpu_kernel>(s.backward));
      for (int c = 0; c < s.grad_casts; ++c) {
        task_fields f{.name = gname, .duration = s.kernel_time, .trace_start = g.trace_start(s.backward),
                      .layer = g.layer(s.backward), .phase = phase::backward, .iteration = g.iteration(s.backward)};
        insert_launched_like(g, gpu_kernel{.device = bp.device, .stream = bp.stream}, f, just_after(s.backward),
                             launch_call{.name = "aten::to", .duration = plan.cpu_cost});
        ++bwd;
        cpu += plan.cpu_cost;
        gpu += s.kernel_time;
      }
    }
    if (fwd + bwd == 0) return 0;
    rep.add("casts added (autocast)",
            std::to_string(fwd) + " forward + " + std::to_string(bwd) + " backward cast operators at " +
                format_time(plan.cpu_cost) + " of CPU each (" +
                (plan.cost_samples ? "2x the median of " + std::to_string(plan.cost_samples) +
                                         " one-kernel elementwise operators of the trace"
                                   : std::string("no one-kernel elementwise operator in the trace: 2x 10 us")) +
                "): +" + format_time(cpu) + " CPU, +" + format_time(gpu) + " GPU",
            report_value::of_count(std::int64_t(fwd + bwd)));
    return fwd + bwd;
  }

  /// Inserts GradScaler's unscale and its sync before each iteration's optimizer step.
  std::size_t insert_scaler(graph& g, const cast_plan& plan, pass_report& rep) const {
    // Per iteration: the first weight-update CPU task, the last backward GPU kernel, and
    // the weight-update GPU time.
    struct step {
      task_id opt = no_task, last_bwd = no_task;
      time_ns wu_gpu = 0;
    };
    std::map<std::int32_t, step> steps;
    const trace_order before(g);
    for (auto t : tasks(g)) {
      const auto it = g.iteration(t);
      if (it < 0) continue;
      auto& s = steps[it];
      if (g.is<cpu_task>(t)) {
        if (g.phase_of(t) == phase::weight_update && (s.opt == no_task || before(t, s.opt))) s.opt = t;
      } else if (g.is<gpu_kernel>(t)) {
        if (g.phase_of(t) == phase::backward && (s.last_bwd == no_task || before(s.last_bwd, t))) s.last_bwd = t;
        if (g.phase_of(t) == phase::weight_update) s.wu_gpu += g.duration(t);
      }
    }
    std::size_t n = 0, without_backward = 0;
    for (auto& [it, s] : steps) {
      if (s.opt != no_task && s.last_bwd == no_task) ++without_backward;
      if (s.opt == no_task || s.last_bwd == no_task) continue;
      // The optimizer must not be what the backward waits for (a graph whose order says
      // otherwise is no training step): a sync there would close a cycle.
      if (reaches(g, s.opt, s.last_bwd)) continue;
      // The unscale kernel is launched just before the optimizer: on the stream it runs
      // after every op launched before that (a stream runs its ops in launch order), so
      // after the ops a sync between the backward and the optimizer waits for too (the
      // loss's .item(), gradient clipping, a GradScaler already in the trace).
      task_id after = s.last_bwd;
      for (auto u = next_on_resource(g, after); u != no_task; u = next_on_resource(g, u)) {
        const auto call = launch_of(g, u);
        if (call == no_task || !before(call, s.opt)) break;
        after = u;
      }
      const auto kp = g.payload(g.as<gpu_kernel>(s.last_bwd));
      // Phase other: scaler.step() runs it before the optimizer's own annotation.
      task_fields f{.name = "GradScaler: unscale and inf check (_amp_foreach_non_finite_check_and_unscale_)",
                    .duration = std::max<time_ns>(s.wu_gpu / 5, plan.step_kernel),
                    .trace_start = g.trace_start(s.opt), .layer = g.layer(s.opt), .phase = phase::other,
                    .iteration = it};
      auto un = insert_launched(g, gpu_kernel{.device = kp.device, .stream = kp.stream}, f, just_after(after),
                                just_before(s.opt),
                                launch_call{.name = "aten::_amp_foreach_non_finite_check_and_unscale_",
                                            .duration = std::max<time_ns>(plan.cpu_cost, 1)});
      insert_at(g, cpu_task{cpu_call::sync},
                {.name = "GradScaler: found_inf.item() (cudaStreamSynchronize)", .duration = 5'000,
                 .layer = g.layer(s.opt), .phase = phase::other, .iteration = it},
                just_before(s.opt), {edge_from(un.task, dep_kind::sync)});
      ++n;
    }
    if (n > 0)
      rep.add("GradScaler (fp16)",
              std::to_string(n) + " optimizer steps wait for the gradients' unscale and "
                                  "inf check (found_inf.item(): the CPU waits for the backward to finish)",
              report_value::of_count(std::int64_t(n)));
    else if (without_backward > 0)
      rep.note("GradScaler not modelled: the optimizer steps have no backward kernel before them to wait for");
    return n;
  }

  /// Whether a path of dependencies or program order leads from `from` to `to`. O(V + E).
  static bool reaches(const graph& g, task_id from, task_id to) {
    std::vector<task_id> stack{from};
    std::vector<bool> seen(g.id_bound(), false);
    seen[from] = true;
    auto visit = [&](task_id u) {
      if (u != no_task && !seen[u]) {
        seen[u] = true;
        stack.push_back(u);
      }
    };
    while (!stack.empty()) {
      const auto t = stack.back();
      stack.pop_back();
      if (t == to) return true;
      for (auto d : g.successors(t)) visit(d.to);
      visit(next_on_resource(g, t));
    }
    return false;
  }

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
