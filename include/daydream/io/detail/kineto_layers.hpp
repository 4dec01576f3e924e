// Defines the layer stage of Kineto ingestion: backward work mapped to its forward operator, and layer names.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_KINETO_LAYERS_HPP
#define DAYDREAM_IO_DETAIL_KINETO_LAYERS_HPP

#include <daydream/graph.hpp>
#include <daydream/io/detail/kineto_events.hpp>
#include <daydream/io/detail/kineto_flatten.hpp>
#include <daydream/io/detail/kineto_threads.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace daydream::io::detail {

//! @cond DAYDREAM_INTERNAL

/// Which forward operator each backward root computes the gradient of.
struct backward_map {
  std::vector<std::uint32_t> forward_of; ///< per cpu event (backward roots only): a forward event, or no_index
  std::vector<std::uint8_t> fwd_state;   ///< per flow (fwdbwd flows only): 1 used, 2 end points match no event
};

/// Stage 5: maps each backward root to the forward operator it differentiates: by the
/// fwdbwd flows (start on the forward op, finish inside the backward one), then, for
/// roots still unmapped, by sequence number (the latest forward op with that number
/// before the backward root).
inline backward_map resolve_backward_layers(const decoded_trace& d, const thread_table& tt, const flat_events& F) {
  backward_map B;
  B.forward_of.assign(d.cpu.size(), no_index);
  B.fwd_state.assign(d.flows.size(), 0);
  std::unordered_map<std::int64_t, std::uint32_t> s_of, f_of;
  for (std::uint32_t i = 0; i < d.flows.size(); ++i) {
    auto& f = d.flows[i];
    if (f.cat != ecat::fwdbwd_flow) continue;
    (f.ph == 's' ? s_of : f_of).emplace(f.id, i);
  }
  for (auto& [id, si] : s_of) {
    auto fit = f_of.find(id);
    if (fit == f_of.end()) continue;
    auto& fs = d.flows[si];
    auto& ff = d.flows[fit->second];
    auto ts = tt.find(fs.where), tf = tt.find(ff.where);
    const bool ts_ok = ts != no_index && !tt.threads[ts].ignored;
    std::uint32_t fe = ts_ok ? F.event_at(d, tt.threads[ts], fs.ts, true) : no_index;
    if (fe == no_index && ts_ok) fe = F.event_at(d, tt.threads[ts], fs.ts, false);
    std::uint32_t be = tf == no_index || tt.threads[tf].ignored ? no_index : F.event_at(d, tt.threads[tf], ff.ts, false);
    if (fe == no_index || be == no_index) { B.fwd_state[si] = B.fwd_state[fit->second] = 2; continue; }
    auto root = F.attr[be].bwd != no_index ? F.attr[be].bwd : be;
    if (B.forward_of[root] == no_index) B.forward_of[root] = fe;
    B.fwd_state[si] = B.fwd_state[fit->second] = 1;
  }
  std::unordered_map<std::int64_t, std::vector<std::uint32_t>> fwd_seq;
  for (std::uint32_t i = 0; i < d.cpu.size(); ++i) {
    auto& x = d.cpu[i];
    if (x.seq < 0 || x.cat != ecat::cpu_op || F.attr[i].bwd != no_index || tt.threads[x.thread].ignored) continue;
    fwd_seq[x.seq].push_back(i);
  }
  for (auto& [k, v] : fwd_seq)
    std::sort(v.begin(), v.end(), [&](auto a, auto b) { return d.cpu[a].ts < d.cpu[b].ts; });
  for (std::uint32_t i = 0; i < d.cpu.size(); ++i) {
    if (F.attr[i].bwd != i || B.forward_of[i] != no_index) continue;
    std::int64_t seq = d.cpu[i].seq;
    if (seq < 0) continue;
    auto it = fwd_seq.find(seq);
    if (it == fwd_seq.end()) continue;
    auto& v = it->second;
    auto p = std::upper_bound(v.begin(), v.end(), d.cpu[i].ts, [&](time_ns t, std::uint32_t e) { return t < d.cpu[e].ts; });
    if (p == v.begin()) continue;
    B.forward_of[i] = *(p - 1);
  }
  return B;
}

/// Names the layer of CPU events, interning names in a graph: a forward event's
/// `nn.Module:` name or `op#k` of its top-level operator; backward work takes the layer
/// of the forward operator it differentiates.
class layer_namer {
public:
  layer_namer(const decoded_trace& d, const flat_events& F, const backward_map& B, daydream::graph& g)
      : d_(d), F_(F), B_(B), g_(g), top_layer_(d.cpu.size(), no_layer) {}

  /// The layer of a forward event: its module, or its top-level operator, or none.
  name_id forward_layer(std::uint32_t e) {
    auto& a = F_.attr[e];
    if (a.module != no_index) return g_.intern(module_layer(a.module));
    if (a.top_op != no_index) {
      if (top_layer_[a.top_op] != no_layer) return top_layer_[a.top_op];
      auto& x = d_.cpu[a.top_op];
      std::string n(x.name);
      n += '#';
      n += std::to_string(F_.top_ordinal[a.top_op]);
      return top_layer_[a.top_op] = g_.intern(n);
    }
    return no_name;
  }

  /// The layer of a CPU event: the forward layer of its backward root, its module, or
  /// its top-level operator. `unmapped` is set for backward work without a forward op.
  name_id layer_of(std::uint32_t e, bool& unmapped) {
    unmapped = false;
    auto& a = F_.attr[e];
    if (a.bwd != no_index) {
      if (B_.forward_of[a.bwd] != no_index) return forward_layer(B_.forward_of[a.bwd]);
      unmapped = true;
      return no_name;
    }
    return forward_layer(e);
  }

private:
  static constexpr name_id no_layer = std::numeric_limits<name_id>::max();
  std::string_view module_layer(std::uint32_t m) const {
    std::string_view n = d_.cpu[m].name;
    if (starts_with(n, "nn.Module:")) n.remove_prefix(10); // else an annotation (decoded_trace::annotation_layers)
    while (!n.empty() && n.front() == ' ') n.remove_prefix(1);
    return n;
  }

  const decoded_trace& d_;
  const flat_events& F_;
  const backward_map& B_;
  daydream::graph& g_;
  std::vector<name_id> top_layer_;
};

//! @endcond

} // namespace daydream::io::detail

#endif
