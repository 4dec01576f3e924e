// Defines the gist pass: stashed activations encoded after the forward and decoded before the backward.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASSES_GIST_HPP
#define DAYDREAM_PASSES_GIST_HPP

#include <daydream/graph.hpp>
#include <daydream/insert.hpp>
#include <daydream/kinds.hpp>
#include <daydream/pass.hpp>
#include <daydream/report.hpp>
#include <daydream/semantics/edit.hpp>
#include <daydream/semantics/estimate.hpp>
#include <daydream/semantics/format.hpp>
#include <daydream/semantics/layers.hpp>
#include <daydream/semantics/memory.hpp>

#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

namespace daydream::passes {

/// Gist (Jain et al., "Gist: Efficient Data Encoding for Deep Neural Network Training",
/// ISCA'18; modeled as in Daydream, Zhu et al., ATC'20, §6): the feature maps a layer
/// stashes for its backward are kept encoded in between.
///
/// Cost model: for every layer instance that stashes (forward and backward kernels,
/// recorded tensor sizes, name selected by `layers`), an encode kernel goes right after
/// its last forward kernel on the same stream and a decode kernel right before its first
/// backward kernel, each with a launch call next to the launch of that kernel. Both
/// take as long as an elementwise kernel over the stash (layer_instance::stash(): what
/// the trace's [memory] events show the layer keeping, else its tensor sizes) times the time
/// per byte measured on the trace's elementwise kernels (measure_rate), or over
/// `bandwidth` when the trace has none with recorded sizes. Encoded, the stash takes
/// `ratio` of its size (0.5: Gist's delayed precision reduction to FP16; its binarized
/// ReLU outputs would be 1/32).
///
/// Memory (when the graph has a memory model, see estimate_activation_memory): the
/// encode allocates the encoded copy and releases the stash, the decode allocates the
/// stash again and releases the encoded copy (each netted at its start, as the replay
/// accounts memory; on the launch calls instead when the model charges the layer's memory
/// to its CPU calls, as the trace's [memory] events do). So `stash x (1 - ratio)` less is
/// held from encode to decode,
/// and the replay's peak memory shows what that saves. The report gives the bytes
/// encoded and saved.
///
///     daydream::apply(g, daydream::passes::gist{.ratio = 1.0 / 32, .layers = ".*relu.*"});
struct gist {
  static constexpr std::string_view name = "gist"; ///< the --pass name
  double ratio = 0.5;        ///< encoded size / stashed size
  std::string layers = {};   ///< layers to encode (whole-name regex); empty: every layer
  double bandwidth = 300e9;  ///< bytes/s of encode and decode when nothing can be measured

  /// Why no layer of `g` stashes tensors of known size for its backward ("" when one
  /// does): what the trace lacks and how to record it.
  static std::string not_applicable(const graph& g) {
    return no_stashing_layer_reason(g, layer_instances(g), layer_filter{}, true);
  }
  /// Whether some layer of `g` stashes tensors of known size for its backward.
  static bool applicable(const graph& g) { return not_applicable(g).empty(); }

  /// Inserts the encode and decode kernels (and moves memory when the graph has a
  /// memory model); returns the layers, bytes and time. Invalidates nothing.
  pass_report operator()(graph& g) const {
    pass_report rep;
    rep.pass = std::string(name);
    const layer_filter selected(layers);
    const bool memory = has_memory_accounting(g);
    const auto rate = measure_rate(g);
    std::size_t encoded = 0;
    std::uint64_t bytes = 0, saved = 0;
    std::set<std::int32_t> iterations; // that had a layer acted on
    time_ns added = 0;
    for (auto& l : layer_instances(g)) {
      if (!l.stashes() || l.stash() == 0 || !selected(g.str(l.layer))) continue;
      const auto b = static_cast<std::int64_t>(l.stash());
      const auto enc = static_cast<std::int64_t>(std::llround(double(b) * ratio));
      const time_ns d = rate.estimate(l.stash(), bandwidth);
      const task_id last_fwd = l.forward_gpu.back(), first_bwd = l.backward_gpu.front();
      const auto& model = g.payload(g.as<gpu_kernel>(last_fwd));
      const gpu_kernel k{.device = model.device, .stream = model.stream};
      const auto layer = g.layer(last_fwd);

      // Each launched like its neighbour: the encode right after the last forward kernel
      // (its call right after that kernel's launch), the decode right before the first
      // backward kernel.
      auto e = insert_launched_like(g, k, {.name = "gist_encode", .duration = d, .layer = layer,
                                           .phase = phase::forward, .iteration = l.iteration},
                                    just_after(last_fwd));
      auto dec = insert_launched_like(g, k, {.name = "gist_decode", .duration = d, .layer = layer,
                                             .phase = phase::backward, .iteration = l.iteration},
                                      just_before(first_bwd));
      if (memory) {
        // The stash is freed once the encode is issued and allocated again by the decode,
        // where the model charges this layer's memory: its CPU calls or its kernels.
        const bool host = l.stash_on_cpu && e.launch && dec.launch;
        add_mem_delta(g, host ? release_point(g, e.launch.id) : e.task.id, enc - b);
        add_mem_delta(g, host ? dec.launch.id : dec.task.id, b - enc);
      }
      ++encoded;
      bytes += l.stash();
      iterations.insert(l.iteration);
      saved += l.stash() - static_cast<std::uint64_t>(enc);
      added += 2 * d;
    }
    rep.add_count("layers encoded", std::int64_t(encoded));
    rep.add("stashed bytes encoded", format_bytes_per_iteration(double(bytes), iterations.size()),
            report_value::of_bytes(double(bytes)));
    rep.add("bytes saved while stashed", format_bytes_per_iteration(double(saved), iterations.size()),
            report_value::of_bytes(double(saved)));
    rep.add("encode + decode kernel time", format_time(added), report_value::of_time(double(added)));
    if (rate.samples)
      rep.add("cost per byte",
              std::to_string(rate.ns_per_byte()) + " ns/B from " + std::to_string(rate.samples) + " elementwise kernels",
              report_value::of_ratio(rate.ns_per_byte()).with_count(std::int64_t(rate.samples)));
    else
      rep.add("cost per byte", "no elementwise kernel with sizes: " + format_bytes(bandwidth) + "/s",
              report_value::of_rate(bandwidth));
    if (!memory) rep.note("the graph has no memory model: peak memory not predicted "
                          "(the trace has no [memory] events, profile_memory=True, and no estimate "
                          "from tensor sizes, record_shapes=True)");
    if (encoded == 0)
      rep.not_applied(no_stashing_layer_reason(g, layer_instances(g), selected, true) + ": nothing encoded");
    return rep;
  }
};

} // namespace daydream::passes

#endif
