// Defines the gpu pass: the trace's GPU work rescaled to another GPU of the device catalogue.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASSES_GPU_HPP
#define DAYDREAM_PASSES_GPU_HPP

#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/launch.hpp>
#include <daydream/net/cluster.hpp>
#include <daydream/net/collective.hpp>
#include <daydream/pass.hpp>
#include <daydream/report.hpp>
#include <daydream/select.hpp>
#include <daydream/update.hpp>
#include <daydream/semantics/device.hpp>
#include <daydream/semantics/device_catalogue.hpp>
#include <daydream/semantics/estimate.hpp>
#include <daydream/semantics/format.hpp>
#include <daydream/semantics/kernel_classifier.hpp>
#include <daydream/semantics/kernel_family.hpp>
#include <daydream/semantics/retarget.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

namespace daydream::passes {

/// "What if this ran on another GPU?": every GPU task of the trace rescaled from the GPU
/// it was recorded on (the source) to `target`, both looked up in `catalogue`.
///
/// Cost model (docs/cross_gpu.md):
///
/// - **Kernels.** Each kernel is classified by its FLOPs and bytes against each GPU's ridge
///   point when the ingest derived them from its operator's shapes (roofline_ratio: the
///   ratio of its roofline times), else by name (kernel_classifier, as AMP does)
///   and its precision read from its name (a precision the name does not show is the
///   trace's dominant compute precision, else FP32). retarget_kernel gives the factor:
///   the limiting resource's ratio (memory bandwidth for memory-bound kernels; peak
///   FLOP/s at the kernel's precision for compute-bound ones, an FP32 convolution
///   running on TF32 tensor cores where the target has them, as PyTorch's cuDNN default
///   does; the FP32 rate for unclassified ones), with wave quantization when the trace
///   recorded the launch (blocks per SM recomputed on both devices from registers,
///   shared memory and block size); a small kernel (one wave on both devices, fewer blocks than
///   the recorded GPU has SMs) scales with the clock alone (a null clock: the one the FP32 peak implies, clock_of). A kernel recorded without
///   registers (ROCm) or on a device without occupancy rules (AMD entries) falls back to
///   the class ratio; the report counts kernels by rule. A compute-bound kernel takes at
///   least its operator's tensor bytes (recorded shapes) at the target's memory
///   bandwidth, capped at its own time at the bandwidth ratio: the roofline's memory term,
///   which binds when the kernel's intensity lies below the target's ridge point.
/// - **Floor.** No kernel gets shorter than `launch_floor` (or its own time, if that was
///   shorter): a launch's fixed latency does not shrink with a faster GPU.
/// - **Copies.** Host copies scale with the host link (PCIe bandwidth ratio), device
///   copies and memsets with memory bandwidth, peer copies with the interconnect.
/// - **Collectives** (communication tasks and kernels) scale with the interconnect
///   bandwidth (NVLink, xGMI); unchanged when a figure is null. With `cluster` (the
///   distributed passes' cluster keys), each recorded collective whose operation, bytes
///   and group (two ranks or more) are known is priced on it instead, with the cost
///   functions the distributed passes use (net/collective.hpp): its group laid out on
///   the cluster's machines (collective_time), its time the model's, as a distributed
///   pass's collectives are.
/// - **CPU** work is unchanged unless `cpu` says the target's host is faster (`cpu=2`:
///   every CPU slice and gap takes half the time).
///
/// The source is `source` when given, else the trace's `deviceProperties`
/// (graph::devices) matched by name (device_catalogue::find_kineto). Target the same
/// device and the pass changes nothing (with `cpu` = 1).
///
///     auto pass = daydream::passes::gpu{.target = "H100",
///                                        .catalogue = daydream::io::bundled_device_catalogue()};
///     daydream::apply(g, pass);
struct gpu {
  static constexpr std::string_view name = "gpu"; ///< the --pass name
  std::string target;        ///< the GPU to predict, a name or alias of `catalogue`
  std::string source;        ///< the recorded GPU; empty: from the trace's deviceProperties
  double cpu = 1;            ///< speed of the target's host CPU relative to the recorded one
  time_ns launch_floor = 1'000; ///< the shortest a kernel gets (the shortest Hopper kernels run 0.6-1 us)
  device_catalogue catalogue{}; ///< where names are looked up (the bundled catalogue, plus a user's file)
  kernel_classifier classifier = kernel_classifier::defaults(); ///< decides the class of a kernel
  /// The target's cluster (machines, GPUs per machine, NIC, NVLink, PCIe), which prices
  /// the recorded collectives; empty: they scale with the catalogue's interconnect.
  std::optional<daydream::cluster> cluster{};
  all_reduce_algorithm algorithm = all_reduce_algorithm::ring; ///< how all-reduces are priced on `cluster`

  /// The time of collective `op` of `bytes` (comm_task::bytes) among `group` ranks on
  /// cluster `c`, or empty when it cannot be priced (a group of one, no bytes, an
  /// operation without a cost function: push, pull, other). The group fills machines of
  /// `c.workers_per_machine` GPUs (a group no larger than that stays in one machine, on
  /// NVLink or PCIe), and its ring runs at its slowest link (cluster::ring_link): all-reduce
  /// by `a`, reduce-scatter, all-gather, all-to-all and broadcast/reduce by their
  /// functions in net/collective.hpp, send and recv one message (latency + bytes /
  /// bandwidth).
  static std::optional<time_ns> collective_time(comm_op op, double bytes, std::uint32_t group,
                                                const daydream::cluster& c, all_reduce_algorithm a) {
    if (group <= 1 || !(bytes > 0)) return std::nullopt;
    daydream::cluster s = c;
    s.workers_per_machine = std::max<std::uint32_t>(1, std::min(group, c.workers_per_machine));
    s.machines = (group + s.workers_per_machine - 1) / s.workers_per_machine;
    const link_spec l = s.ring_link();
    switch (op) {
    case comm_op::all_reduce: case comm_op::reduce_scatter: case comm_op::all_gather: case comm_op::all_to_all:
    case comm_op::broadcast: case comm_op::reduce: return collective_cost(op, bytes, group, l, a);
    case comm_op::send: case comm_op::recv: return time_ns(std::llround(l.latency + l.transfer_ns(bytes)));
    default: return std::nullopt;
    }
  }

  /// Why the pass does nothing on `g` ("" when it applies): a graph without GPU work.
  static std::string not_applicable(const graph& g) {
    for (auto t : tasks(g))
      if (!g.is<cpu_task>(t)) return {};
    return "the trace has no GPU work: there is nothing a GPU runs to rescale";
  }
  /// Whether `g` has GPU work.
  static bool applicable(const graph& g) { return not_applicable(g).empty(); }

  /// Throws daydream::usage_error for an unusable setting: no target, a target or source
  /// the catalogue does not know (listing the names it knows), cpu <= 0, a negative floor.
  void check() const {
    if (catalogue.size() == 0)
      throw usage_error("daydream: pass 'gpu': no device catalogue (set catalogue = "
                        "daydream::io::bundled_device_catalogue())");
    if (target.empty())
      throw usage_error("daydream: pass 'gpu': give target=NAME, the GPU to predict (" + known() + ")");
    lookup(target, "target");
    if (!source.empty()) lookup(source, "source");
    if (!(cpu > 0) || !std::isfinite(cpu))
      throw usage_error("daydream: pass 'gpu': cpu must be a positive speed factor (got " + std::to_string(cpu) + ")");
    if (launch_floor < 0) throw usage_error("daydream: pass 'gpu': launch_floor must not be negative");
  }

  /// The recorded GPU of `g` as a catalogue entry: `source` when given; else the
  /// trace's first recorded device. Throws daydream::usage_error when the trace records
  /// none, or one the catalogue does not describe.
  const device& source_of(const graph& g) const {
    if (!source.empty()) return lookup(source, "source");
    if (g.devices().empty())
      throw usage_error("daydream: pass 'gpu': the trace records no deviceProperties, so the GPU it ran on is "
                        "unknown: give source=NAME (" + known() + ")");
    const auto& rec = g.devices().front();
    if (auto* d = catalogue.find_kineto(rec.name)) return *d;
    throw usage_error("daydream: pass 'gpu': the trace ran on '" + rec.name +
                      "', which the device catalogue does not describe: give source=NAME of a catalogued GPU (" +
                      known() + "), or add it with a catalogue file");
  }

  /// Rescales every GPU task (and the CPU with `cpu`); returns the counts by rule and
  /// class and what bounds the target run. Invalidates nothing.
  pass_report operator()(graph& g) const {
    check();
    pass_report rep;
    rep.pass = std::string(name);
    const device& from = source_of(g);
    const device& to = lookup(target, "target");
    rep.add("source -> target", from.name + " -> " + to.name, report_value::of_text());
    if (from.name == to.name && cpu == 1 && !cluster) {
      rep.not_applied("the target is the recorded GPU (" + to.name + "): nothing changes");
      return rep;
    }
    tally t;
    if (from.name != to.name) scale_kernels(g, from, to, t); // the same GPU: only the cluster's collectives change
    scale_transfers(g, from, to, t, rep);
    if (cpu != 1)
      for (auto c : tasks<cpu_task>(g)) {
        scale_duration(g, c, 1.0 / cpu);
        set_gap(g, c, time_ns(std::llround(double(g.gap(c)) / cpu)));
      }
    report(g, from, to, t, rep);
    return rep;
  }

private:
  /// What scaling found, for the report.
  struct tally {
    std::array<std::size_t, retarget_rule_count> rule_count{};
    std::array<time_ns, retarget_rule_count> rule_before{}, rule_after{};
    std::array<time_ns, kernel_class_count> class_before{}, class_after{};
    std::array<std::size_t, kernel_class_count> class_count{};
    std::size_t floored = 0, clock_fallback = 0, no_shape = 0, no_rules = 0, comm = 0, copies = 0, memory_on_target = 0;
    time_ns floored_time = 0, latency_time = 0;
    std::array<std::size_t, kernel_class_count> by_shape{}; ///< classified by FLOPs and bytes, by class on the target
    std::size_t shape_changed = 0;                          ///< of those, of another class on the source
    time_ns shape_before = 0, shape_after = 0;
    std::string dominant;
  };

  std::string known() const {
    std::string s = "known: ";
    bool first = true;
    for (auto& d : catalogue) {
      s += (first ? "" : ", ") + d.name;
      first = false;
    }
    return s;
  }

  const device& lookup(std::string_view n, std::string_view what) const {
    if (auto* d = catalogue.find(n)) return *d;
    if (auto* d = catalogue.find_kineto(n)) return *d;
    throw usage_error("daydream: pass 'gpu': unknown " + std::string(what) + " GPU '" + std::string(n) + "' (" +
                      known() + ")");
  }

  /// The precision of the trace's compute-bound kernels by time, among those whose
  /// names show one (unknown when none does).
  static numeric_precision dominant_precision(const graph& g, classified& classes, kernel_families& fam) {
    std::map<numeric_precision, time_ns> by;
    for (auto k : tasks<gpu_kernel>(g))
      if (classes(k) == kernel_class::compute_bound && fam.precision(k) != numeric_precision::unknown)
        by[fam.precision(k)] += g.duration(k);
    numeric_precision best = numeric_precision::unknown;
    time_ns most = -1;
    for (auto& [p, t] : by)
      if (t > most) { most = t; best = p; }
    return best;
  }

  void scale_kernels(graph& g, const device& from, const device& to, tally& t) const {
    classified classes(g, classifier);
    kernel_families fam(g);
    const auto dominant = dominant_precision(g, classes, fam);
    t.dominant = std::string(to_string(dominant));
    static const std::regex conv("conv|cudnn|winograd|implicit_gemm|implicit_convolve|fprop|dgrad|wgrad",
                                 std::regex::ECMAScript | std::regex::icase | std::regex::optimize);
    std::map<name_id, bool> is_conv;
    const bool rules = missing_occupancy_fields(from).empty() && missing_occupancy_fields(to).empty();
    const std::optional<double> link = from.interconnect_bandwidth && to.interconnect_bandwidth
                                           ? std::optional<double>(*from.interconnect_bandwidth / *to.interconnect_bandwidth)
                                           : std::nullopt;
    for (auto k : tasks<gpu_kernel>(g)) {
      const auto c = classes(k);
      const auto ci = std::size_t(c);
      const time_ns before = g.duration(k);
      ++t.class_count[ci];
      t.class_before[ci] += before;
      if (c == kernel_class::communication) {
        ++t.comm;
        if (link) scale_duration(g, k, *link);
        t.class_after[ci] += g.duration(k);
        continue;
      }
      auto p = fam.precision(k);
      if (p == numeric_precision::unknown) p = dominant;
      auto [it, fresh] = is_conv.try_emplace(g.name_id_of(k), false);
      if (fresh) {
        auto n = g.name(k);
        it->second = std::regex_search(n.begin(), n.end(), conv);
      }
      const kernel_launch launch = k.payload().launch;
      // FLOPs and bytes from the operator's recorded shapes: the class on each GPU by
      // the kernel's intensity against its ridge points, not by name.
      const auto shape = roofline_ratio(from, to, p, it->second, double(k.payload().flops), double(k.payload().bytes));
      const auto r = retarget_kernel(from, to, c, p, it->second, launch, shape);
      if (r.rule == retarget_rule::class_ratio) {
        if (!launch.has_resources()) ++t.no_shape;
        else if (!rules) ++t.no_rules;
      }
      t.clock_fallback += r.clock_fallback;
      time_ns after = before;
      if (r.rule != retarget_rule::unscaled) {
        after = time_ns(std::llround(double(before) * r.factor));
        if (!shape && c == kernel_class::compute_bound && to.memory_bandwidth && from.memory_bandwidth) {
          // The roofline's other term: the operator's tensors (from its recorded shapes)
          // read at the target's bandwidth, at most the source's time at the bandwidth
          // ratio. A kernel compute-bound on the source whose intensity lies below the
          // target's ridge point is memory-bound there.
          // Only for a launch of one kernel: a graph launch (cudaGraphLaunch) carries
          // the bytes of everything it replays.
          const auto call = launch_of(g, k);
          const double bytes =
              call != no_task && launched_by(g, call).size() == 1 ? double(launch_tensor_bytes(g, k)) : 0.0;
          const double memory = std::min(bytes / *to.memory_bandwidth * 1e9,
                                         double(before) * *from.memory_bandwidth / *to.memory_bandwidth);
          if (bytes > 0 && memory > double(after)) {
            after = time_ns(std::llround(memory));
            ++t.memory_on_target;
          }
        }
        const time_ns floor = std::min(before, launch_floor);
        if (after < floor) {
          after = floor;
          ++t.floored;
          t.floored_time += after;
        }
        set_duration(g, k, after);
      }
      if (r.rule == retarget_rule::one_wave) t.latency_time += after;
      const auto ri = std::size_t(r.rule);
      ++t.rule_count[ri];
      t.rule_before[ri] += before;
      t.rule_after[ri] += after;
      if (shape) {
        // Counted in the class it has on the target.
        const auto si = std::size_t(shape->on_target);
        ++t.class_count[si], --t.class_count[ci];
        t.class_before[si] += before, t.class_before[ci] -= before;
        t.class_after[si] += after;
        ++t.by_shape[si];
        t.shape_before += before, t.shape_after += after;
        t.shape_changed += shape->on_source != shape->on_target;
      } else {
        t.class_after[ci] += after;
      }
    }
  }

  void scale_transfers(graph& g, const device& from, const device& to, tally& t, pass_report& rep) const {
    auto ratio = [](const std::optional<double>& a, const std::optional<double>& b) {
      return a && b && *b > 0 ? std::optional<double>(*a / *b) : std::nullopt;
    };
    const auto host = ratio(from.pcie_bandwidth, to.pcie_bandwidth);
    const auto memory = ratio(from.memory_bandwidth, to.memory_bandwidth);
    const auto link = ratio(from.interconnect_bandwidth, to.interconnect_bandwidth);
    time_ns before = 0, after = 0;
    std::size_t unscaled = 0;
    for (auto m : tasks<memcpy_task>(g)) {
      const auto d = m.payload().direction;
      const auto r = d == copy_kind::h2d || d == copy_kind::d2h ? host : d == copy_kind::peer ? link : memory;
      before += g.duration(m);
      ++t.copies;
      if (r) scale_duration(g, m, *r);
      else ++unscaled;
      after += g.duration(m);
    }
    time_ns comm_before = 0, comm_after = 0;
    std::size_t comms = 0, priced = 0;
    for (auto c : tasks<comm_task>(g)) {
      comm_before += g.duration(c);
      ++comms;
      const auto& p = c.payload();
      const auto on_cluster =
          cluster ? collective_time(p.op, double(p.bytes), p.group_size, *cluster, algorithm) : std::nullopt;
      if (on_cluster) {
        set_duration(g, c, *on_cluster);
        ++priced;
      } else if (link && from.name != to.name) {
        scale_duration(g, c, *link);
      }
      comm_after += g.duration(c);
    }
    if (t.copies > 0)
      rep.add("copies (host link " + gen(from) + " -> " + gen(to) + ", device memory)",
              std::to_string(t.copies) + " copies, " + format_time(before) + " -> " + format_time(after),
              report_value::of_change(report_kind::time, double(before), double(after)).with_count(std::int64_t(t.copies)));
    if (unscaled > 0) rep.note(std::to_string(unscaled) + " copies unchanged: a bandwidth of the catalogue is null");
    if (comms + t.comm > 0) {
      rep.add("collectives (interconnect " + link_name(from) + " -> " + link_name(to) + ")",
              std::to_string(comms) + " communication tasks, " + format_time(comm_before) + " -> " + format_time(comm_after),
              report_value::of_change(report_kind::time, double(comm_before), double(comm_after)).with_count(std::int64_t(comms)));
      if (cluster)
        rep.add("collectives priced on the cluster (" + cluster->describe() + ", " + std::string(to_string(algorithm)) +
                    " all-reduce)",
                std::to_string(priced) + " of " + std::to_string(comms + t.comm) +
                    " (the others, without an operation, bytes or a group of two, by the interconnect)",
                report_value::of_count(std::int64_t(priced)));
      if (!link && priced < comms + t.comm)
        rep.note("collectives unchanged: the interconnect bandwidth of " + from.name + " or " + to.name + " is null");
    }
  }

  static std::string gen(const device& d) {
    return d.pcie_generation ? "PCIe " + std::to_string(*d.pcie_generation) : std::string("host link ?");
  }
  static std::string link_name(const device& d) { return d.interconnect.empty() ? std::string("none") : d.interconnect; }

  /// The counts by rule and class, and a sentence on what bounds the target run.
  void report(const graph& g, const device& from, const device& to, const tally& t, pass_report& rep) const {
    static constexpr std::array<std::string_view, retarget_rule_count> rule_text{
        "kernels scaled by waves (launch shape on both GPUs)", "small kernels, one wave on both GPUs (clock)",
        "kernels scaled by their class ratio (no launch shape or occupancy rules)",
        "kernels scaled by their roofline ratio (FLOPs and bytes, no launch shape or occupancy rules)",
        "kernels unchanged (a figure of the catalogue is null)"};
    for (int i = 0; i < retarget_rule_count; ++i) {
      if (t.rule_count[i] == 0) continue;
      rep.add(std::string(rule_text[i]),
              std::to_string(t.rule_count[i]) + " kernels, " + format_time(t.rule_before[i]) + " -> " +
                  format_time(t.rule_after[i]),
              report_value::of_change(report_kind::time, double(t.rule_before[i]), double(t.rule_after[i]))
                  .with_count(std::int64_t(t.rule_count[i])));
    }
    for (int i = 0; i < kernel_class_count; ++i) {
      if (t.class_count[i] == 0) continue;
      rep.add(std::string(to_string(kernel_class(i))),
              std::to_string(t.class_count[i]) + " kernels, " + format_time(t.class_before[i]) + " -> " +
                  format_time(t.class_after[i]),
              report_value::of_change(report_kind::time, double(t.class_before[i]), double(t.class_after[i]))
                  .with_count(std::int64_t(t.class_count[i])));
    }
    if (const auto n = t.by_shape[0] + t.by_shape[1]; n > 0)
      rep.add("kernels classified by shape (their operator's FLOPs and bytes against the ridge points)",
              std::to_string(n) + " kernels (" + std::to_string(t.by_shape[0]) + " compute-bound, " +
                  std::to_string(t.by_shape[1]) + " memory-bound on the target; " + std::to_string(t.shape_changed) +
                  " of another class on the source), " + format_time(t.shape_before) + " -> " + format_time(t.shape_after),
              report_value::of_change(report_kind::time, double(t.shape_before), double(t.shape_after))
                  .with_count(std::int64_t(n)));
    if (t.no_shape > 0)
      rep.add_count("kernels without a recorded launch (grid, block, registers): class ratio", std::int64_t(t.no_shape));
    if (t.no_rules > 0)
      rep.add_count("kernels on a GPU without occupancy rules in the catalogue: class ratio", std::int64_t(t.no_rules));
    if (t.memory_on_target > 0)
      rep.add_count("compute-bound kernels memory-bound on the target (their operator's tensor bytes at its bandwidth)",
                    std::int64_t(t.memory_on_target));
    if (t.floored > 0)
      rep.add("kernels at the launch floor (" + format_time(launch_floor) + ")", std::to_string(t.floored) + " kernels",
              report_value::of_count(std::int64_t(t.floored)));
    if (t.clock_fallback > 0)
      rep.note("the catalogue gives no boost clock for " + (!from.clock_hz ? from.name : to.name) + ": " +
               std::to_string(t.clock_fallback) +
               " one-wave kernels scale with the clock its FP32 peak implies (FP32 FLOP/s / (2 x FP32 lanes per SM x SMs))");
    if (t.dominant != "unknown")
      rep.note("kernels whose names show no precision are taken as " + t.dominant +
               ", the trace's dominant GEMM precision");
    if (cpu != 1) rep.add("CPU work (cpu=)", "x" + std::to_string(1.0 / cpu).substr(0, 5) + " of its time", report_value::of_ratio(1.0 / cpu));
    else rep.add("CPU work", "unchanged (cpu=1: the host is not the GPU)", report_value::of_text());
    rep.add("what bounds the target run", bound_sentence(g, t), report_value::of_text());
  }

  /// "GEMMs take 31% of the GPU's time, one-wave kernels 40%; the busiest CPU thread
  /// works longer than the GPU: the CPU becomes the bottleneck."
  static std::string bound_sentence(const graph& g, const tally& t) {
    time_ns gpu_busy = 0;
    for (auto s : tasks(g))
      if (!g.is<cpu_task>(s)) gpu_busy += g.duration(s);
    std::map<resource_id, time_ns> thread;
    for (auto c : tasks<cpu_task>(g)) thread[g.resource_of(c)] += g.duration(c);
    time_ns cpu_busy = 0;
    for (auto& [r, w] : thread) cpu_busy = std::max(cpu_busy, w);
    auto pct = [&](time_ns x) { return std::to_string(int(std::lround(100.0 * double(x) / double(std::max<time_ns>(gpu_busy, 1))))) + "%"; };
    std::string s = "on the target, compute-bound kernels take " + pct(t.class_after[0]) +
                    " of the GPU's work, memory-bound " + pct(t.class_after[1]) + ", small one-wave kernels " +
                    pct(t.latency_time) + " and kernels at the launch floor " + pct(t.floored_time) + "; ";
    if (cpu_busy > gpu_busy)
      s += "the busiest CPU thread works " + format_time(cpu_busy) + " against the GPU's " + format_time(gpu_busy) +
           ": the CPU becomes the bottleneck";
    else
      s += "the GPU works " + format_time(gpu_busy) + " against the busiest CPU thread's " + format_time(cpu_busy) +
           ": the GPU bounds the run";
    return s;
  }
};

} // namespace daydream::passes

#endif
