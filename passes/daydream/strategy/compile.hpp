// Defines compile: a strategy of a model on a cluster compiled into a graph of every device it uses.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_STRATEGY_COMPILE_HPP
#define DAYDREAM_STRATEGY_COMPILE_HPP

#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/net/collective_steps.hpp>
#include <daydream/net/fine_collective.hpp>
#include <daydream/resource.hpp>
#include <daydream/strategy/cluster_spec.hpp>
#include <daydream/strategy/compiled.hpp>
#include <daydream/strategy/layer_plan.hpp>
#include <daydream/strategy/model.hpp>
#include <daydream/strategy/options.hpp>
#include <daydream/strategy/stages.hpp>
#include <daydream/strategy/strategy_spec.hpp>
#include <daydream/strategy/tree.hpp>
#include <daydream/strategy/validate.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace daydream::strategy {

/// A ring collective as compile() builds it: one transfer per hop (member j to j + 1 in
/// rank order) carrying what that hop carries over all the ring's steps, and the step
/// count (each transfer pays one latency per step).
struct ring_transfers {
  std::vector<collective_transfer> transfers;
  std::uint32_t steps = 0;
};

/// The pipelined ring of `op` (all-reduce: 2(p-1) steps; reduce-scatter, all-gather: p-1)
/// of `bytes` over `p` members: the steps of collective_transfers' ring merged per hop,
/// as NCCL pipelines a ring's slices so that each link streams. Alone on its links it
/// takes exactly the step-by-step time, steps x (latency + bytes / p / bandwidth) on the
/// slowest hop; sharing a link, a hop runs at its share throughout instead of step by
/// step, and the ring is done (on every member) when its slowest hop is.
inline ring_transfers pipelined_ring(comm_op op, double bytes, std::uint32_t p) {
  ring_transfers r;
  if (p <= 1) return r;
  r.steps = op == comm_op::all_reduce ? 2 * (p - 1) : p - 1;
  const double per_hop = bytes / double(p) * double(r.steps);
  for (std::uint32_t i = 0; i < p; ++i) r.transfers.push_back({0, i, (i + 1) % p, per_hop});
  return r;
}

//! @cond DAYDREAM_INTERNAL
namespace detail {

/// `v` ns rounded to whole nanoseconds, never negative.
inline time_ns ns(double v) { return static_cast<time_ns>(std::llround(std::max(0.0, v))); }

/// By device of a stage (index replica x tp + tensor-parallel rank): a task of each.
using per_device = std::vector<task_id>;

/// What the tasks of one computation or communication are called.
struct task_label {
  std::string_view name;
  std::string_view layer;
  phase ph = phase::other;
};

/// compile() as a state and its steps: the graph and what has been built of it are the
/// members; the devices are added first, then each pipeline stage in turn (its kernels in
/// the schedule's order with their communications, its gradient reduction, its update,
/// its memory), and last the pipeline sends are joined to the kernels that wait for them.
class strategy_compiler {
public:
  /// Compiles `plan` into `out` (validated already).
  strategy_compiler(const strategy_plan& plan, const cluster_spec& c, const model_profile& m,
                    const simulate_options& o, compiled_strategy& out)
      : plan_(plan), m_(m), o_(o), out_(out), g_(out.g), p_(plan.spec.pp), mb_(plan.spec.micro), t_(plan.spec.tp),
        dp_(plan.spec.dp), per_stage_(dp_ * t_), devices_(plan.spec.devices()), none_(per_stage_, no_task) {
    out_.strategy = plan.spec;
    out_.name = plan.name;
    out_.global_batch = o.global_batch > 0 ? o.global_batch : double(devices_) * m.batch;
    out_.micro_share = out_.global_batch / (double(dp_) * mb_ * m.batch);
    share_ = out_.micro_share;
    out_.stages = balance_stages(m, p_, &plan);
    out_.hierarchy = link_hierarchy::of(c.links, devices_);
    out_.intra_name = c.links.nvlink.present() ? "NVLink" : "PCIe";
    for (std::size_t i = 0; i < m.layers.size(); ++i) plans_.push_back(plan_layer(plan, m, i, share_));
    total_params_ = double(m.param_bytes());
    recorded_rest_ = recorded_rest();
    f_first_.assign(p_, std::vector<per_device>(mb_, none_));
    f_arrive_ = f_first_;
    b_first_ = f_first_;
    b_arrive_ = f_first_;
  }

  /// Builds the graph and fills the communication volumes and the memory.
  void run() {
    add_devices();
    for (std::uint32_t k = 0; k < p_; ++k) compile_stage(k);
    join_pipeline();
    out_.comm = {sum_.dp / p_, sum_.tp / p_, sum_.pp / p_, sum_.zero / p_};
  }

private:
  // ---- the whole strategy

  /// Per device: its computation stream and its feature and gradient queues.
  void add_devices() {
    for (std::uint32_t d = 0; d < devices_; ++d) {
      const auto sd = "device " + std::to_string(d);
      const auto node = static_cast<std::int32_t>(d);
      out_.compute.push_back(
          g_.add_resource({sd + " compute", resource_kind::gpu_stream, sharing::exclusive, node, node}));
      out_.features.push_back(g_.add_resource({sd + " features", resource_kind::other, sharing::exclusive, node, node}));
      out_.gradients.push_back(
          g_.add_resource({sd + " gradients", resource_kind::other, sharing::exclusive, node, node}));
      out_.stage_of.push_back(d / per_stage_);
    }
  }

  /// What the recorded peak holds beyond this model's one-GPU memory (see stage_memory).
  double recorded_rest() const {
    if (!(m_.recorded_peak > 0)) return 0;
    double one_gpu = total_params_ * (2 + o_.optimizer_bytes_per_param / o_.bytes_per_param);
    for (auto& l : m_.layers) one_gpu += double(l.held());
    return m_.recorded_peak - one_gpu;
  }

  /// Layer `i`'s share of the update time on one device.
  double update_of(std::size_t i) const {
    const auto& l = m_.layers[i];
    double u = total_params_ > 0 ? double(m_.update) * double(l.param_bytes) / total_params_
                                 : double(m_.update) / double(m_.layers.size());
    if (plan_.layers[i].split) u /= t_;
    if (plan_.spec.zero >= 1) u /= dp_;
    return u;
  }

  /// The bytes of layer `i`'s input activation (per profiled batch).
  double input_bytes(std::size_t i) const {
    return double(i > 0 ? m_.layers[i - 1].output_bytes : m_.layers[0].stash_bytes);
  }

  /// Each pipeline send arrives before the first kernel of the micro-batch on its stage.
  void join_pipeline() {
    for (std::uint32_t k = 0; k < p_; ++k)
      for (std::uint32_t j = 0; j < mb_; ++j)
        for (std::uint32_t i = 0; i < per_stage_; ++i) {
          if (k > 0) g_.add_dependency(f_arrive_[k][j][i], f_first_[k][j][i], dep_kind::comm);
          if (k + 1 < p_) g_.add_dependency(b_arrive_[k][j][i], b_first_[k][j][i], dep_kind::comm);
        }
  }

  // ---- one stage

  /// Stage `k`: its kernels and communications, then its memory.
  void compile_stage(std::uint32_t k) {
    begin_stage(k);
    if (m_.other > 0) kernel({"outside the layers", "", phase::other}, double(m_.other));
    gather_forward_parameters();
    run_schedule();
    update(reduce_gradients());
    out_.memory.push_back(stage_memory_of());
  }

  void begin_stage(std::uint32_t k) {
    k_ = k;
    first_ = out_.stages[k].first;
    last_ = out_.stages[k].second;
    prev_ = gate_ = fq_ = gq_ = none_;
    const std::size_t n = m_.layers.size();
    gather_f_.assign(n, {});
    gather_b_.assign(n, {});
    last_forward_.assign(n, {});
    ready_.assign(n, {});
  }

  /// The rank of device `i` of the stage.
  std::uint32_t rank(std::uint32_t i) const { return k_ * per_stage_ + i; }

  bool zero3() const { return plan_.spec.zero == 3 && dp_ > 1; }

  /// ZeRO-3 gathers each layer's parameters before its first forward.
  void gather_forward_parameters() {
    if (!zero3()) return;
    for (auto i = first_; i < last_; ++i) {
      gather_f_[i] = collective(device_queue::gradients, comm_kind::zero, comm_op::all_gather, plans_[i].params, none_,
                                {"zero-3 all-gather", m_.layers[i].name, phase::forward});
      sum_.zero += (dp_ - 1.0) / dp_ * plans_[i].params;
    }
  }

  /// The micro-batches' forwards and backwards in the schedule's order: GPipe, or 1F1B
  /// (warm-up forwards, then one forward and one backward in turn, then the last backwards).
  void run_schedule() {
    if (plan_.spec.schedule == pipeline_schedule::gpipe) {
      for (std::uint32_t j = 0; j < mb_; ++j) forward(j);
      for (std::uint32_t j = 0; j < mb_; ++j) backward(j);
      return;
    }
    const std::uint32_t warm = std::min(p_ - k_ - 1, mb_);
    for (std::uint32_t j = 0; j < warm; ++j) forward(j);
    for (std::uint32_t j = 0; j + warm < mb_; ++j) {
      forward(j + warm);
      backward(j);
    }
    for (std::uint32_t j = mb_ - warm; j < mb_; ++j) backward(j);
  }

  void forward(std::uint32_t j) {
    for (auto i = first_; i < last_; ++i) forward_layer(i, j);
  }

  /// Layer `i`'s forward of micro-batch `j`, its tensor-parallel collectives, and the send
  /// of the stage's output to the next stage.
  void forward_layer(std::size_t i, std::uint32_t j) {
    const auto& l = m_.layers[i];
    const auto& pl = plans_[i];
    auto x = kernel({"forward", l.name, phase::forward}, pl.forward);
    if (i == first_) f_first_[k_][j] = x;
    if (!gather_f_[i].empty() && j == 0)
      for (std::uint32_t d = 0; d < per_stage_; ++d) g_.add_dependency(gather_f_[i][d], x[d], dep_kind::comm);
    last_forward_[i] = x;
    if (pl.fwd_all_reduce > 0) {
      gate_ = collective(device_queue::features, comm_kind::tp, comm_op::all_reduce, pl.fwd_all_reduce, x,
                         {"tp all-reduce", l.name, phase::forward});
      sum_.tp += 2.0 * (t_ - 1) / t_ * pl.fwd_all_reduce;
    }
    if (pl.fwd_all_gather > 0) {
      gate_ = collective(device_queue::features, comm_kind::tp, comm_op::all_gather, pl.fwd_all_gather, after_gate(x),
                         {"tp all-gather", l.name, phase::forward});
      sum_.tp += (t_ - 1.0) / t_ * pl.fwd_all_gather;
    }
    if (i + 1 == last_ && k_ + 1 < p_) {
      const double bytes = double(l.output_bytes) * share_;
      f_arrive_[k_ + 1][j] = send(k_ + 1, bytes, after_gate(x), {"pp send activations", l.name, phase::forward});
      sum_.pp += bytes;
    }
  }

  void backward(std::uint32_t j) {
    for (auto i = last_; i-- > first_;) backward_layer(i, j);
  }

  /// Layer `i`'s backward of micro-batch `j` (after ZeRO-3's gather of its parameters),
  /// its tensor-parallel collectives, and the send of the stage's input gradient to the
  /// previous stage.
  void backward_layer(std::size_t i, std::uint32_t j) {
    const auto& l = m_.layers[i];
    const auto& pl = plans_[i];
    const bool gathered = gather_b_[i].empty() && zero3();
    if (gathered) {
      gather_b_[i] = collective(device_queue::gradients, comm_kind::zero, comm_op::all_gather, pl.params,
                                last_forward_[i], {"zero-3 all-gather", l.name, phase::backward});
      sum_.zero += (dp_ - 1.0) / dp_ * pl.params;
    }
    auto x = kernel({"backward", l.name, phase::backward}, pl.backward);
    if (gathered)
      for (std::uint32_t d = 0; d < per_stage_; ++d) g_.add_dependency(gather_b_[i][d], x[d], dep_kind::comm);
    if (i + 1 == last_) b_first_[k_][j] = x;
    ready_[i] = x;
    if (pl.bwd_all_reduce > 0) {
      gate_ = collective(device_queue::features, comm_kind::tp, comm_op::all_reduce, pl.bwd_all_reduce, x,
                         {"tp all-reduce", l.name, phase::backward});
      sum_.tp += 2.0 * (t_ - 1) / t_ * pl.bwd_all_reduce;
      ready_[i] = gate_;
    }
    if (pl.bwd_all_gather > 0) {
      gate_ = collective(device_queue::features, comm_kind::tp, comm_op::all_gather, pl.bwd_all_gather, after_gate(x),
                         {"tp all-gather", l.name, phase::backward});
      sum_.tp += (t_ - 1.0) / t_ * pl.bwd_all_gather;
      ready_[i] = gate_;
    }
    if (i == first_ && k_ > 0) {
      const double bytes = input_bytes(i) * share_;
      b_arrive_[k_ - 1][j] = send(k_ - 1, bytes, ready_[i], {"pp send gradients", l.name, phase::backward});
      sum_.pp += bytes;
    }
  }

  /// Gradient reduction in buckets, in the order the last micro-batch's backward makes
  /// them ready. Returns, by device, when the last bucket is reduced (none_ without
  /// data parallelism).
  per_device reduce_gradients() {
    per_device last_bucket = none_;
    if (dp_ <= 1) return last_bucket;
    double bucket = 0;
    const per_device* bucket_ready = nullptr;
    for (auto i = last_; i-- > first_;) {
      bucket += plans_[i].params;
      bucket_ready = &ready_[i];
      if (bucket >= double(o_.bucket_bytes)) {
        last_bucket = reduce_bucket(bucket, *bucket_ready);
        bucket = 0;
        bucket_ready = nullptr;
      }
    }
    if (bucket > 0 || bucket_ready != nullptr) last_bucket = reduce_bucket(bucket, bucket_ready ? *bucket_ready : none_);
    return last_bucket;
  }

  /// One bucket of `bytes` reduced after `ready`: all-reduce, or ZeRO's reduce-scatter.
  per_device reduce_bucket(double bytes, const per_device& ready) {
    const bool rs = plan_.spec.zero >= 1;
    auto done = collective(device_queue::gradients, comm_kind::dp, rs ? comm_op::reduce_scatter : comm_op::all_reduce,
                           bytes, ready, {rs ? "dp reduce-scatter" : "dp all-reduce", "", phase::backward});
    sum_.dp += (rs ? 1.0 : 2.0) * (dp_ - 1.0) / dp_ * bytes;
    return done;
  }

  /// The stage's weight update after its last bucket, then ZeRO-1/2's gather of the
  /// updated parameters.
  void update(const per_device& last_bucket) {
    double time = 0;
    for (auto i = first_; i < last_; ++i) time += update_of(i);
    auto u = kernel({"weight update", "", phase::weight_update}, time);
    for (std::uint32_t d = 0; d < per_stage_; ++d)
      if (last_bucket[d] != no_task) g_.add_dependency(last_bucket[d], u[d], dep_kind::comm);
    if (!((plan_.spec.zero == 1 || plan_.spec.zero == 2) && dp_ > 1)) return;
    double bytes = 0;
    for (auto i = first_; i < last_; ++i) bytes += plans_[i].params;
    collective(device_queue::gradients, comm_kind::zero, comm_op::all_gather, bytes, u,
               {"zero all-gather", "", phase::weight_update});
    sum_.zero += (dp_ - 1.0) / dp_ * bytes;
  }

  /// The memory of one device of the stage. Re-computed layers keep their input, and the
  /// largest of them its stash while it runs again; the others keep their stash.
  stage_memory stage_memory_of() const {
    const auto& s = plan_.spec;
    stage_memory mem;
    double stash = 0, inputs = 0, largest = 0;
    for (auto i = first_; i < last_; ++i) {
      mem.params += plans_[i].params;
      if (!plans_[i].recompute) {
        stash += double(m_.layers[i].held()) * share_;
        continue;
      }
      inputs += input_bytes(i) * share_;
      largest = std::max(largest, double(m_.layers[i].held()) * share_);
    }
    mem.recorded_rest = recorded_rest_;
    mem.gradients = mem.params;
    mem.optimizer = mem.params / o_.bytes_per_param * o_.optimizer_bytes_per_param;
    if (s.zero >= 1) mem.optimizer /= dp_;
    if (s.zero >= 2) mem.gradients /= dp_;
    if (s.zero >= 3) mem.params /= dp_;
    mem.in_flight = s.schedule == pipeline_schedule::gpipe ? mb_ : std::min(p_ - k_, mb_);
    mem.activations = mem.in_flight * (inputs + stash) + largest;
    return mem;
  }

  // ---- tasks of the stage

  /// Computation on every device of the stage, after the previous kernel and what it
  /// waits for (the gate).
  per_device kernel(const task_label& l, double dur) {
    per_device x(per_stage_);
    const time_ns at = clock_++;
    for (std::uint32_t i = 0; i < per_stage_; ++i) {
      x[i] = g_.add(gpu_kernel{.device = std::int32_t(rank(i))},
                    {.name = l.name, .duration = ns(dur), .resource = out_.compute[rank(i)], .trace_start = at,
                     .layer = l.layer, .phase = l.ph})
                 .id;
      if (prev_[i] != no_task) g_.add_dependency(prev_[i], x[i], dep_kind::stream_order);
      if (gate_[i] != no_task) g_.add_dependency(gate_[i], x[i], dep_kind::comm);
    }
    prev_ = x;
    gate_ = none_;
    return x;
  }

  /// By device, the last communication on queue `q`.
  per_device& queue_last(device_queue q) { return q == device_queue::features ? fq_ : gq_; }

  /// Issues `op` on queue `q` of device rank(i) after `input`; returns the issue task.
  task_id issue(std::uint32_t i, device_queue q, comm_op op, double bytes, std::uint32_t group, task_id input,
                const task_label& l, time_ns at) {
    const auto d = rank(i);
    const auto last = queue_last(q)[i];
    auto x = g_.add(comm_task{.op = op, .bytes = std::uint64_t(std::llround(bytes)), .group_size = group,
                              .device = std::int32_t(d)},
                    {.name = l.name, .duration = 0,
                     .resource = q == device_queue::features ? out_.features[d] : out_.gradients[d],
                     .trace_start = at, .layer = l.layer, .phase = l.ph})
                 .id;
    if (input != no_task) g_.add_dependency(input, x, dep_kind::comm);
    if (last != no_task) g_.add_dependency(last, x, dep_kind::control);
    return x;
  }

  /// A zero-time task (no resource) after every task of `after`.
  task_id done_task(const std::vector<task_id>& after, const task_label& l, time_ns at) {
    auto x = g_.add(cpu_task{}, {.name = l.name, .duration = 0, .resource = no_resource, .trace_start = at,
                                 .layer = l.layer, .phase = l.ph})
                 .id;
    for (auto a : after) g_.add_dependency(a, x, dep_kind::comm);
    return x;
  }

  static fine_transfer_options transfer_options(comm_op op, const task_label& l, time_ns at) {
    fine_transfer_options fo;
    fo.op = op;
    fo.name = l.name;
    fo.trace_start = at;
    fo.iteration = 0;
    fo.layer = l.layer;
    fo.ph = l.ph;
    return fo;
  }

  /// Collective `op` of `bytes` per device on queue `q` of every device of the stage,
  /// after `input`, among each tensor-parallel group (kind tp) or each data-parallel
  /// group (the same tensor-parallel rank of every replica); ring in rank order.
  /// Returns when it is done, by device.
  per_device collective(device_queue q, comm_kind kind, comm_op op, double bytes, const per_device& input,
                        const task_label& l) {
    const std::uint32_t size = kind == comm_kind::tp ? t_ : dp_;
    const time_ns at = clock_++;
    per_device issued(per_stage_), done(per_stage_);
    for (std::uint32_t i = 0; i < per_stage_; ++i) issued[i] = issue(i, q, op, bytes, size, input[i], l, at);
    // A ring pipelines its steps: each hop (member j to j + 1) is one transfer of all the
    // bytes it carries over the steps, paying one latency per step (pipelined_ring).
    const auto ring = pipelined_ring(op, bytes, size);
    auto fo = transfer_options(op, l, at);
    fo.latency_count = ring.steps;
    const std::string done_name = std::string(l.name) + " done";
    for (std::uint32_t grp = 0; grp < per_stage_ / size; ++grp) {
      const auto members = group_members(kind, grp, size);
      const auto all = add_ring(members, issued, ring, fo, kind, {done_name, l.layer, l.ph}, at);
      for (auto i : members) {
        done[i] = all;
        queue_last(q)[i] = all;
        out_.queue_uses.push_back({issued[i], all, rank(i), q, kind});
      }
    }
    return done;
  }

  /// The devices of the stage in group `grp` of a collective of `size` members.
  std::vector<std::uint32_t> group_members(comm_kind kind, std::uint32_t grp, std::uint32_t size) const {
    std::vector<std::uint32_t> members(size);
    for (std::uint32_t j = 0; j < size; ++j) members[j] = kind == comm_kind::tp ? grp * t_ + j : j * t_ + grp;
    return members;
  }

  /// The transfers of one ring among `members` (each starting after its member's issue
  /// task); returns the task that marks it done on every member, when its slowest hop is:
  /// the ring's data flows through all.
  task_id add_ring(const std::vector<std::uint32_t>& members, const per_device& issued, const ring_transfers& ring,
                   const fine_transfer_options& fo, comm_kind kind, const task_label& done_label, time_ns at) {
    std::vector<std::int32_t> ranks;
    std::vector<task_id> starts;
    for (auto i : members) {
      ranks.push_back(std::int32_t(rank(i)));
      starts.push_back(issued[i]);
    }
    auto built = add_fine_transfers(g_, out_.links, out_.hierarchy, ranks, ring.transfers, starts, fo);
    out_.transfers.push_back({built.first_task, task_id(g_.id_bound()), kind});
    std::vector<task_id> hops;
    for (auto& l : built.last) hops.insert(hops.end(), l.begin(), l.end());
    std::sort(hops.begin(), hops.end());
    hops.erase(std::unique(hops.begin(), hops.end()), hops.end());
    return done_task(hops, done_label, at);
  }

  /// Sends `bytes` from every device of the stage to its peer (same replica and
  /// tensor-parallel rank) of stage `to`, on the sender's feature queue after `input`.
  /// Returns, by device, when it has arrived (and the sender's queue is free again).
  per_device send(std::uint32_t to, double bytes, const per_device& input, const task_label& l) {
    const time_ns at = clock_++;
    per_device arrived(per_stage_);
    const std::vector<collective_transfer> steps{{0, 0, 1, bytes}};
    const auto fo = transfer_options(comm_op::send, l, at);
    const std::string done_name = std::string(l.name) + " done";
    for (std::uint32_t i = 0; i < per_stage_; ++i) {
      const auto x = issue(i, device_queue::features, comm_op::send, bytes, 2, input[i], l, at);
      auto built = add_fine_transfers(g_, out_.links, out_.hierarchy,
                                      {std::int32_t(rank(i)), std::int32_t(to * per_stage_ + i)}, steps, {x, no_task},
                                      fo);
      out_.transfers.push_back({built.first_task, task_id(g_.id_bound()), comm_kind::pp});
      arrived[i] = done_task(built.last[0], {done_name, l.layer, l.ph}, at);
      fq_[i] = arrived[i];
      out_.queue_uses.push_back({x, arrived[i], rank(i), device_queue::features, comm_kind::pp});
    }
    return arrived;
  }

  /// By device, what the next kernel waits for: the gate where there is one, else `x`.
  per_device after_gate(const per_device& x) const {
    per_device v(per_stage_);
    for (std::uint32_t i = 0; i < per_stage_; ++i) v[i] = gate_[i] != no_task ? gate_[i] : x[i];
    return v;
  }

  const strategy_plan& plan_;
  const model_profile& m_;
  const simulate_options& o_;
  compiled_strategy& out_;
  graph& g_;
  const std::uint32_t p_, mb_, t_, dp_;      // stages, micro-batches, tensor- and data-parallel degrees
  const std::uint32_t per_stage_, devices_;  // devices of a stage, of the strategy
  const per_device none_;                    // no task on any device of a stage
  double share_ = 1;                         // a micro-batch over the profiled batch
  double total_params_ = 0;                  // parameter bytes of the model
  double recorded_rest_ = 0;                 // recorded_rest()
  std::vector<layer_plan> plans_;            // by layer
  time_ns clock_ = 0;                        // trace_start of the next computation or communication
  comm_bytes sum_;                           // bytes sent, all stages
  // By stage and micro-batch: the pipeline arrivals and the first kernels waiting for
  // them, joined once every stage exists (forward and backward).
  std::vector<std::vector<per_device>> f_first_, f_arrive_, b_first_, b_arrive_;
  // The stage being compiled: its index and layers [first_, last_); by device its last
  // kernel, what its next kernel waits for (the gate) and the last communication on each
  // queue; by layer ZeRO-3's gathers before the forward and the backward, its last
  // forward, and when its gradient is ready.
  std::uint32_t k_ = 0;
  std::size_t first_ = 0, last_ = 0;
  per_device prev_, gate_, fq_, gq_;
  std::vector<per_device> gather_f_, gather_b_, last_forward_, ready_;
};

} // namespace detail
//! @endcond

/// Compiles strategy `s` of model `m` on cluster `c` into a graph of every device the
/// strategy uses (compiled_strategy). Per device, Proteus' HTAE queues: a computation
/// stream whose order the schedule (1F1B or GPipe) fixes, a feature-communication queue
/// (tensor-parallel all-reduces, pipeline sends) and a gradient-communication queue
/// (data-parallel buckets, ZeRO's gathers). A communication is issued on its queue when
/// the queue is free (the previous one on it is done on this device) and its input is
/// ready; its transfers start when both their ends have issued it (and finished their
/// earlier steps); computation that needs it waits until it is done on its device. A
/// pipeline send holds the sender's feature queue only. Also fills the analytic
/// communication volumes and memory. Validates first (validate()). See docs/strategy.md.
///
/// Each layer follows its plan (strategy_plan, plan_layer: tensor-parallel split, the
/// tensor-parallel collectives after its forward and backward, re-computation, stage
/// pin); compile(strategy_spec) runs the uniform plan of the spec.
inline compiled_strategy compile(const strategy_plan& plan, const cluster_spec& c, const model_profile& m,
                                 const simulate_options& o = {}) {
  validate(plan, c, m, o);
  compiled_strategy out;
  detail::strategy_compiler(plan, c, m, o, out).run();
  return out;
}

/// compile() of the uniform plan of `s` (uniform_plan: every layer as the spec says).
inline compiled_strategy compile(const strategy_spec& s, const cluster_spec& c, const model_profile& m,
                                 const simulate_options& o = {}) {
  return compile(uniform_plan(s, m), c, m, o);
}

} // namespace daydream::strategy

#endif
