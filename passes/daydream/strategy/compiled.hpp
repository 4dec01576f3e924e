// Defines compiled_strategy: a strategy compiled into a graph of every device it uses, and what it records (communication volumes, stage memory, queue uses, transfers).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_STRATEGY_COMPILED_HPP
#define DAYDREAM_STRATEGY_COMPILED_HPP

#include <daydream/graph.hpp>
#include <daydream/net/collective_steps.hpp>
#include <daydream/net/fine_collective.hpp>
#include <daydream/resource.hpp>
#include <daydream/strategy/strategy_spec.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace daydream::strategy {

/// Bytes each device sends in one iteration, by kind, averaged over the devices.
struct comm_bytes {
  double dp = 0;   ///< gradient reduction (ring all-reduce; ZeRO: reduce-scatter)
  double tp = 0;   ///< tensor-parallel all-reduces of activations and their gradients
  double pp = 0;   ///< pipeline sends of activations and their gradients
  double zero = 0; ///< ZeRO's parameter all-gathers
  double total() const noexcept { return dp + tp + pp + zero; }
};

/// The memory of one device of a pipeline stage, at its peak.
struct stage_memory {
  double params = 0, gradients = 0, optimizer = 0, activations = 0;
  std::uint32_t in_flight = 0; ///< micro-batches whose activations it holds at most
  /// The trace's recorded peak less what this model names on one GPU (parameters,
  /// gradients, optimizer state, activations of the traced batch): memory the model does
  /// not name (temporaries, workspaces, buffers), or with a negative sign what it names
  /// in excess (an optimizer that keeps less state than assumed). The same on every
  /// device; 0 when the trace recorded no [memory] events.
  double recorded_rest = 0;
  /// The device's peak: the parts, never less than its parameters, gradients and
  /// optimizer state.
  double total() const noexcept {
    const double fixed = params + gradients + optimizer;
    return std::max(fixed, fixed + activations + recorded_rest);
  }
};

/// What a communication carries.
enum class comm_kind : std::uint8_t {
  tp,   ///< tensor-parallel all-reduces of activations and their gradients
  pp,   ///< pipeline sends of activations and their gradients
  dp,   ///< data-parallel gradient reduction (all-reduce; ZeRO: reduce-scatter)
  zero, ///< ZeRO's parameter all-gathers
};

/// The queue of a device a communication runs on (Proteus' HTAE): activations and their
/// gradients (tensor-parallel all-reduces, pipeline sends) on the feature queue,
/// parameter gradients and parameters (data-parallel reduction, ZeRO's gathers) on the
/// gradient queue.
enum class device_queue : std::uint8_t { features, gradients };

/// One communication on one device: issued on its queue when the queue is free and its
/// input is ready, done on the device when its last transfer there ends.
struct queue_use {
  task_id issue = no_task;   ///< zero-time task on the device's queue (name, layer, phase, op, bytes)
  task_id done = no_task;    ///< zero-time task (no resource): the communication is done on the device
  std::uint32_t device = 0;  ///< its rank
  device_queue queue = device_queue::features;
  comm_kind kind = comm_kind::tp;
};

/// The transfer tasks of one communication (all its participants): ids [first, last).
struct transfer_range {
  task_id first = no_task, last = no_task;
  comm_kind kind = comm_kind::tp;
};

/// A strategy compiled into a graph of every device it uses (dp x tp x pp; rank =
/// (stage x dp + replica) x tp + tensor-parallel rank, machine = rank / devices per
/// machine): per device a computation stream and a feature- and a gradient-communication
/// queue; every communication as its algorithm's chunk transfers on the cluster's links
/// (add_fine_transfers: each device's port to its machine, each machine's NIC; fair-share,
/// so communications crossing one link at once split it).
struct compiled_strategy {
  strategy_spec strategy;
  std::string name;          ///< strategy_plan::name (the spec for a uniform one)
  graph g;
  std::vector<std::pair<std::size_t, std::size_t>> stages; ///< [first, last) layers of each stage
  std::vector<stage_memory> memory;                        ///< by stage
  comm_bytes comm;
  double global_batch = 0;   ///< samples per iteration, all replicas
  double micro_share = 1;    ///< a micro-batch's size over the profiled batch
  link_hierarchy hierarchy;  ///< the links the transfers cross, ranks placed on machines
  std::string intra_name;    ///< "NVLink" or "PCIe": what a device's port to its machine is
  fine_links links;          ///< the link resources (ports by rank, NICs by machine)
  std::vector<resource_id> compute, features, gradients; ///< by device (rank)
  std::vector<std::uint32_t> stage_of;                   ///< by device: its pipeline stage
  std::vector<queue_use> queue_uses;      ///< every communication on every device, in issue order per queue
  std::vector<transfer_range> transfers;  ///< every communication's transfer tasks
};

} // namespace daydream::strategy

#endif
