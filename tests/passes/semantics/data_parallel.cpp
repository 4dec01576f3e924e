// Tests of the recorded-communication queries of support/data_parallel.hpp: which ranks'
// traffic a single-GPU what-if on one rank leaves out.
// SPDX-License-Identifier: MIT
#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/semantics/data_parallel.hpp>

#include <doctest/doctest.h>

#include <string>

using namespace daydream;
using namespace daydream::passes;

namespace {

/// One rank's recorded collectives, each launched by a CPU call onto the NCCL stream.
struct rank_graph {
  graph g;
  resource_id thread = g.add_resource({"thread 1", resource_kind::cpu_thread});
  resource_id stream = g.add_resource({"stream 20", resource_kind::gpu_stream, sharing::exclusive, 0, 0});
  void recorded(comm_op op, const char* name) {
    auto l = g.add(cpu_task{cpu_call::launch}, {.name = "cudaLaunchKernel", .duration = 5, .resource = thread});
    auto c = g.add(comm_task{.op = op, .bytes = 1 << 20}, {.name = name, .duration = 50, .resource = stream});
    g.add_dependency(l.id, c.id, dep_kind::launch);
  }
};

} // namespace

TEST_CASE("a rank that sends to and receives from particular ranks says its neighbours are not modelled") {
  rank_graph r;
  r.recorded(comm_op::all_reduce, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  CHECK_FALSE(find_neighbour_traffic(r.g).any());
  CHECK(neighbours_note(r.g).empty()); // data parallelism alone: every rank is alike
  r.recorded(comm_op::send, "ncclDevKernel_SendRecv");
  r.recorded(comm_op::other, "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t");
  r.recorded(comm_op::all_to_all, "void deep_ep::intranode::dispatch<8, 768, 8192>(int4*)");
  auto n = find_neighbour_traffic(r.g);
  CHECK(n.point_to_point == 1);
  CHECK(n.send_recv == 1); // no collective named: pipeline sends or NCCL's all-to-all
  CHECK(n.all_to_all == 1);
  CHECK(neighbours_note(r.g) ==
        "this trace is one rank of a job that exchanges data with particular other ranks (1 point-to-point "
        "(pipeline stages), 1 all-to-all (experts, sharded embeddings) and 1 SendRecv (pipeline sends or an "
        "all-to-all: the trace does not name the collective) communication kernels): a single-GPU "
        "scenario changes this rank alone; the ranks it sends to and receives from are not modelled, and its "
        "recorded waits for them stay as traced (give every rank's trace to model the job: daydream whatif DIR)");
  // Communication a pass inserted (on a link, no launch call) is not the trace's.
  graph h;
  auto link = h.add_resource({"nic0", resource_kind::link, sharing::fair, 0, -1, 1e9});
  h.add(comm_task{.op = comm_op::all_to_all, .bytes = 1 << 20}, {.name = "a2a", .duration = 50, .resource = link});
  CHECK(neighbours_note(h).empty());
}
