// Defines the compile pass: runs of memory-bound kernels fused as a compiler (torch.compile) would fuse them.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASSES_COMPILE_HPP
#define DAYDREAM_PASSES_COMPILE_HPP

#include <daydream/config.hpp>
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/launch.hpp>
#include <daydream/pass.hpp>
#include <daydream/report.hpp>
#include <daydream/select.hpp>
#include <daydream/trace_order.hpp>
#include <daydream/semantics/edit.hpp>
#include <daydream/semantics/estimate.hpp>
#include <daydream/semantics/format.hpp>
#include <daydream/semantics/kernel_classifier.hpp>
#include <daydream/semantics/kernel_family.hpp>
#include <daydream/semantics/layers.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace daydream::passes {

/// Compiler fusion: what if the model were compiled (`torch.compile(model)`, Inductor),
/// so that the memory-bound kernels between two GEMMs run as one generated kernel.
///
/// Cost model, over the forward and backward (the optimizer step stays eager, as
/// `torch.compile(model)` leaves it):
///
/// 1. **Runs.** A run is a sequence of consecutive kernels on one GPU stream (nothing else
///    on the stream between them) that are memory bound by the kernel classifier
///    (elementwise, activation, normalization, reduction, softmax; not copies, optimizer
///    or communication kernels, nor one of the GEMM family, family_of_kernel), of one
///    layer (`scope = "layer"`, the default; `"phase"` lets a run cross layers, as
///    Inductor fuses across modules), phase and iteration, launched from one CPU thread.
///    Any other kernel ends a run: a GEMM or convolution, and an attention kernel unless
///    `attention = "fuse"`, where it joins the run around it (a template kernel with the
///    neighbouring pointwise work as prologue and epilogue). With `layers`, only kernels
///    of the layers whose whole name matches fuse (another layer's kernel ends a run). A
///    run of one kernel stays.
/// 2. **One kernel per run**, whose time is the run's distinct bytes over the bandwidth
///    the trace's own memory-bound kernels achieve. Bytes come from the recorded input
///    shapes (`record_shapes=True`): kernel j of a run of n reads its operator's inputs,
///    I_j (launch_tensor_bytes); what it hands to the next is taken as T_{j+1} =
///    min(I_j, I_{j+1}) (the next one reads it, and a memory-bound kernel writes no more
///    than it reads), and the last one writes T_{n+1} = T_n (I_1 for a run of one). The
///    eager kernels moved E = sum(I_j) + T_2 + ... + T_{n+1}; the fused kernel reads the
///    intermediates from registers and moves D = sum(I_j) - (T_2 + ... + T_n) + T_{n+1}.
///    Sizes are per operator, without tensor identities: a tensor several members read
///    (the input of a pointwise chain) counts once per member, so D errs high. The
///    bandwidth is sum(E) over the summed time of every memory-bound kernel of the
///    forward and backward whose sizes
///    are known, each in its maximal run (a run of one included): large kernels weigh
///    most. The fused kernel takes D / bandwidth, at least the run's shortest kernel and
///    at most the run's summed time (plus the attention kernels' own time, which stays,
///    with `attention = "fuse"`). A run with a kernel whose sizes are unknown (a trace
///    without shapes) takes the time of its longest kernel instead: a fused kernel moves
///    at least what that kernel moved, and a pointwise chain over one activation about as
///    much. `bandwidth` > 0 replaces the measured bandwidth.
/// 3. **One call per fused kernel.** The CPU tasks of the fused operators (their time
///    slices and runtime calls, operator_tasks) are removed when they launch nothing
///    else, and the fused kernel is launched by one call that costs what the run's first
///    launch call did (replace_with_kernels): the compiled code launches a kernel where
///    eager PyTorch dispatched an operator.
///
/// Not modelled, and said in the report: GEMMs (Inductor's autotuned or padded GEMMs and
/// template kernels can be much faster or slower than the eager library's), fusion across
/// phases (and, at the default scope, layers), the recomputation the min-cut partitioner moves to the backward,
/// graph breaks (here every run is compiled), the CPU overhead of the compiled wrappers
/// (`CompiledFunction`), and compilation time. A trace whose memory-bound kernel time is
/// mostly Triton kernels already is left alone.
///
///     daydream::apply(g, daydream::passes::compile{});
///     daydream::apply(g, daydream::passes::compile{.layers = ".*mlp.*"});
struct compile {
  static constexpr std::string_view name = "compile"; ///< the --pass name
  std::string layers = {};         ///< whole-name layer regex (layer_filter); empty: every layer
  std::string scope = "layer";     ///< "layer": a run stays in one layer; "phase": runs cross layers
  std::string attention = "keep";  ///< "keep": attention kernels end runs; "fuse": they join them
  double bandwidth = -1;           ///< bytes/s of the fused kernels; <= 0: measured from the trace

  /// Whether `g` has a run of memory-bound kernels to fuse.
  static bool applicable(const graph& g) { return not_applicable(g).empty(); }

  /// Why the pass, at its defaults, changes nothing on `g` ("" when it does).
  static std::string not_applicable(const graph& g) { return compile{}.why_not(g); }

  /// Fuses each run; returns the runs, the kernels and CPU tasks they replaced, the times
  /// before and after and the bandwidth used. Invalidates the handles of the removed tasks.
  pass_report operator()(graph& g) const {
    check();
    pass_report rep;
    rep.pass = std::string(name);
    if (auto why = why_not(g); !why.empty()) {
      rep.not_applied(why);
      return rep;
    }
    scan s(*this, g);
    const auto runs = s.runs(true);
    const auto bw = measured_bandwidth(g);
    const double rate = bandwidth > 0 ? bandwidth : bw.second;
    std::size_t kernels = 0, by_bytes = 0, by_longest = 0, cpu_removed = 0;
    time_ns gpu_before = 0, gpu_after = 0, cpu_before = 0, cpu_after = 0;
    for (auto& r : runs) {
      const auto c = cost(g, s, r, rate);
      (c.from_bytes ? by_bytes : by_longest) += 1;
      kernels += r.size();
      auto old = r;
      for (auto t : cpu_of(g, r)) old.push_back(t);
      const auto first = r.front();
      auto res = replace_with_kernels(g, old, {{fused_name(g, r), c.time}},
                                      {.layer = g.layer(first), .phase = g.phase_of(first),
                                       .iteration = g.iteration(first)});
      gpu_before += res.gpu_time;
      cpu_before += res.cpu_time;
      cpu_removed += res.cpu_removed;
      for (auto& k : res.kernels) {
        gpu_after += g.duration(k.task);
        if (k.launch) cpu_after += g.duration(k.launch);
      }
    }
    rep.add("layer pattern", layers.empty() ? "(all layers)" : layers);
    rep.add("scope", scope == "layer" ? "layer: a run stays within one layer"
                                      : "phase: runs cross layer boundaries within a phase");
    rep.add("attention", attention == "fuse" ? "fused with the memory-bound kernels around it"
                                             : "kept: attention kernels end a run");
    rep.add_count("fused kernels (runs)", std::int64_t(runs.size()));
    rep.add_count("kernels fused", std::int64_t(kernels));
    rep.add("GPU time of the runs", format_time(gpu_before) + " -> " + format_time(gpu_after),
            report_value::of_change(report_kind::time, double(gpu_before), double(gpu_after)));
    rep.add("CPU tasks removed", std::to_string(cpu_removed) + ", " + format_time(cpu_before) + " -> " +
                                     format_time(cpu_after) + " (one launch call per fused kernel)",
            report_value::of_change(report_kind::time, double(cpu_before), double(cpu_after))
                .with_count(std::int64_t(cpu_removed)));
    std::string rate_text;
    if (bandwidth > 0) rate_text = fmt::format("{:.0f} GB/s (given)", bandwidth / 1e9);
    else if (bw.first > 0)
      rate_text = fmt::format("{:.0f} GB/s, measured over {} memory-bound kernels with recorded sizes", rate / 1e9,
                              bw.first);
    else rate_text = "none measured: no memory-bound kernel has recorded sizes (record with record_shapes=True)";
    rep.add("bandwidth of the fused kernels", rate_text, report_value::of_rate(rate > 0 ? rate : 0));
    rep.add("runs timed", fmt::format("{} by their bytes over the bandwidth, {} as their longest kernel (sizes "
                                      "unknown)",
                                      by_bytes, by_longest));
    rep.note(std::string("not modelled: GEMMs stay as traced (Inductor's autotuned, padded or template GEMMs can "
                         "differ a lot), no fusion across ") +
             (scope == "layer" ? "layers or phases" : "phases") +
             ", no graph breaks (every run is compiled), nor the memory compilation saves, the CPU cost of the "
             "compiled wrappers (CompiledFunction) or compilation");
    return rep;
  }

  /// Throws daydream::usage_error for an `attention` other than keep or fuse, a `scope`
  /// other than layer or phase or a bad layer pattern, daydream::error for a bandwidth that
  /// is not finite; the call operator checks them too.
  void check() const {
    if (attention != "keep" && attention != "fuse")
      throw usage_error("daydream: pass 'compile': attention must be keep or fuse (got '" + attention + "')");
    if (scope != "layer" && scope != "phase")
      throw usage_error("daydream: pass 'compile': scope must be layer or phase (got '" + scope + "')");
    if (!std::isfinite(bandwidth)) throw error("daydream: pass 'compile': bandwidth must be finite");
    (void)layer_filter(layers);
  }

private:
  /// What a run's fused kernel costs.
  struct run_cost {
    time_ns time = 0;
    bool from_bytes = false;
  };

  /// The kernels of `g` by role, classified once per distinct name, and the runs.
  struct scan {
    enum role : std::uint8_t { boundary, member, attention_member };
    const compile* pass;
    const graph* g;
    layer_filter selected;
    kernel_classifier classifier = kernel_classifier::defaults();
    std::unordered_map<name_id, role> roles;
    std::map<name_id, bool> layer_ok;
    time_ns memory_time = 0, triton_time = 0; ///< memory-bound time of the forward and backward

    scan(const compile& p, const graph& gr) : pass(&p), g(&gr), selected(p.layers) {}

    role role_of(task_id t) {
      if (!g->is<gpu_kernel>(t)) return boundary;
      const auto n = g->name_id_of(t);
      auto [it, fresh] = roles.try_emplace(n, boundary);
      if (fresh) {
        const auto s = g->name(t);
        const auto fam = family_of_kernel(s);
        if (fam == kernel_family::attention) it->second = pass->attention == "fuse" ? attention_member : boundary;
        else if (fam != kernel_family::gemm && fam != kernel_family::copy && fam != kernel_family::optimizer &&
                 fam != kernel_family::communication && classifier.classify(s) == kernel_class::memory_bound)
          it->second = member;
      }
      return it->second;
    }
    bool in_model(task_id t) const {
      const auto ph = g->phase_of(t);
      return (ph == phase::forward || ph == phase::backward) && g->iteration(t) >= 0;
    }
    /// What must be equal for two kernels to be in one run.
    auto key(task_id t) const {
      const auto call = launch_of(*g, t);
      return std::tuple(pass->scope == "layer" ? g->layer_id(t) : no_name, g->phase_of(t), g->iteration(t),
                        call == no_task ? no_resource : g->resource_of(call));
    }

    /// The maximal runs of the forward and backward, in trace order; with `fusing`, only
    /// those of selected layers with two kernels or more (and a memory-bound one).
    std::vector<std::vector<task_id>> runs(bool fusing) {
      std::map<resource_id, std::vector<task_id>> streams;
      g->for_each_task([&](task_id t) {
        if (g->is<gpu_kernel>(t) || g->is<memcpy_task>(t)) streams[g->resource_of(t)].push_back(t);
      });
      std::vector<std::vector<task_id>> out;
      for (auto& [r, ts] : streams) {
        sort_in_trace_order(*g, ts);
        std::vector<task_id> cur;
        auto close = [&] {
          std::size_t mem = 0;
          for (auto k : cur) mem += role_of(k) == member;
          if (!cur.empty() && (!fusing || (cur.size() >= 2 && mem > 0)))
            out.push_back(cur);
          cur.clear();
        };
        for (auto t : ts) {
          const auto ro = role_of(t);
          if (!fusing && ro == member && in_model(t)) {
            memory_time += g->duration(t);
            if (g->name(t).substr(0, 7) == "triton_") triton_time += g->duration(t);
          }
          if (ro == boundary || !in_model(t) || (fusing && !layer_selected(t))) {
            close();
            continue;
          }
          if (!cur.empty() && key(cur.back()) != key(t)) close();
          cur.push_back(t);
        }
        close();
      }
      std::sort(out.begin(), out.end(), [before = trace_order(*g)](auto& a, auto& b) {
        return before(a.front(), b.front());
      });
      return out;
    }
    bool layer_selected(task_id t) {
      if (pass->layers.empty()) return true;
      auto [it, fresh] = layer_ok.try_emplace(g->layer_id(t), false);
      if (fresh) it->second = selected(g->layer(t));
      return it->second;
    }
  };

  /// Why nothing fuses on `g` ("" when something does).
  std::string why_not(const graph& g) const {
    scan s(*this, g);
    const auto all = s.runs(false);
    if (s.memory_time == 0)
      return "no memory-bound kernel (elementwise, normalization, activation, reduction) in the forward or "
             "backward: nothing a compiler would fuse";
    if (2 * s.triton_time >= s.memory_time)
      return fmt::format("the trace already runs {:.0f}% of its memory-bound kernel time in Triton kernels: the "
                         "model is compiled",
                         100.0 * double(s.triton_time) / double(s.memory_time));
    if (!s.runs(true).empty()) return {};
    const std::string of = scope == "layer" ? "one layer and phase" : "one phase";
    return layers.empty() ? "no two memory-bound kernels of " + of + " follow each other on a stream (GEMMs, " +
                                (scope == "layer" ? "attention or layer boundaries" : "attention or phase boundaries") +
                                " between every pair): nothing to fuse"
                          : "no two memory-bound kernels of " + of + " in layers matching '" + layers +
                                "' follow each other on a stream: nothing to fuse";
  }

  /// The eager bytes (E) and fused bytes (D) of a run, 0 when a member's sizes are unknown.
  static std::pair<double, double> run_bytes(const graph& g, scan& s, const std::vector<task_id>& r) {
    std::vector<double> in; // I_j of the memory-bound members; an attention kernel keeps its own time
    for (auto k : r) {
      if (s.role_of(k) != scan::member) continue;
      const auto b = double(launch_tensor_bytes(g, k));
      if (b <= 0) return {0, 0};
      in.push_back(b);
    }
    if (in.empty()) return {0, 0};
    double sum = 0, passed = 0; // passed: T_2 + ... + T_n, what members hand to the next
    for (std::size_t j = 0; j < in.size(); ++j) {
      sum += in[j];
      if (j > 0) passed += std::min(in[j - 1], in[j]);
    }
    const double last = in.size() > 1 ? std::min(in[in.size() - 2], in.back()) : in.back(); // T_{n+1}
    return {sum + passed + last, sum - passed + last};
  }

  /// (kernels measured, bytes/s) of the forward's and backward's memory-bound kernels.
  static std::pair<std::size_t, double> measured_bandwidth(const graph& g) {
    const compile plain{}; // every layer, attention kept: the trace's memory-bound kernels as they are
    scan all(plain, g);
    std::size_t n = 0;
    double bytes = 0;
    time_ns time = 0;
    for (auto& r : all.runs(false)) {
      std::vector<task_id> mem;
      for (auto k : r)
        if (all.role_of(k) == scan::member) mem.push_back(k);
      const auto e = run_bytes(g, all, mem).first;
      if (e <= 0) continue;
      n += mem.size();
      bytes += e;
      for (auto k : mem) time += g.duration(k);
    }
    return {n, time > 0 ? bytes / double(time) * 1e9 : 0.0};
  }

  /// The fused kernel's time (see the class comment).
  static run_cost cost(const graph& g, scan& s, const std::vector<task_id>& r, double rate) {
    time_ns sum = 0, longest = 0, shortest = -1, kept = 0;
    for (auto k : r) {
      if (s.role_of(k) != scan::member) {
        kept += g.duration(k);
        continue;
      }
      const auto d = g.duration(k);
      sum += d;
      longest = std::max(longest, d);
      shortest = shortest < 0 ? d : std::min(shortest, d);
    }
    const auto d = run_bytes(g, s, r).second;
    if (d <= 0 || rate <= 0) return {kept + longest, false};
    const auto t = static_cast<time_ns>(std::llround(d / rate * 1e9));
    return {kept + std::clamp<time_ns>(t, std::max<time_ns>(shortest, 0), sum), true};
  }

  /// The CPU tasks that go with run `r`: each member's operator, when its CPU tasks
  /// launch nothing but members; else its launch call alone when that launches nothing
  /// else; else nothing.
  static std::vector<task_id> cpu_of(const graph& g, const std::vector<task_id>& r) {
    const std::set<task_id> members(r.begin(), r.end());
    auto only_members = [&](task_id c) {
      for (auto k : launched_by(g, c))
        if (!members.count(k)) return false;
      return true;
    };
    std::set<task_id> out;
    for (auto k : r) {
      const auto call = launch_of(g, k);
      if (call == no_task || out.count(call) || !only_members(call)) continue;
      auto ops = operator_tasks(g, call);
      if (!std::all_of(ops.begin(), ops.end(), only_members)) ops = {call};
      out.insert(ops.begin(), ops.end());
    }
    return {out.begin(), out.end()};
  }

  /// An Inductor-like name: triton_red_fused_ when the run reduces or normalizes, else
  /// triton_poi_fused_, then its operators' names (without `aten::`), at most four.
  static std::string fused_name(const graph& g, const std::vector<task_id>& r) {
    bool reduces = false;
    std::vector<std::string> ops;
    for (auto k : r) {
      const auto f = family_of_kernel(g.name(k));
      reduces = reduces || f == kernel_family::reduction || f == kernel_family::normalization;
      const auto call = launch_of(g, k);
      auto op = call == no_task ? std::string_view{} : g.str(g.payload(g.as<cpu_task>(call)).op);
      if (op.substr(0, 6) == "aten::") op.remove_prefix(6);
      if (!op.empty() && std::find(ops.begin(), ops.end(), op) == ops.end() && ops.size() < 4) ops.emplace_back(op);
    }
    std::string n = reduces ? "triton_red_fused" : "triton_poi_fused";
    for (auto& o : ops) n += "_" + o;
    return n;
  }
};

} // namespace daydream::passes

#endif
