// Tests of the cluster model, the collective cost models, shared links, the overlap slowdown and the distributed passes.
// SPDX-License-Identifier: MIT
#include <daydream/net/cluster.hpp>
#include <daydream/net/collective.hpp>
#include <daydream/daydream.hpp>
#include <daydream/passes/blueconnect.hpp>
#include <daydream/passes/ddp.hpp>
#include <daydream/passes/dgc.hpp>
#include <daydream/passes/p3.hpp>
#include <daydream/registry/cluster_params.hpp>
#include <daydream/registry/specs/blueconnect.hpp>
#include <daydream/registry/specs/ddp.hpp>
#include <daydream/registry/specs/dgc.hpp>
#include <daydream/registry/specs/p3.hpp>
#include <daydream/registry/specs/tensor_fusion.hpp>
#include <daydream/registry/specs/tensor_partition.hpp>
#include <daydream/registry/specs/tictac.hpp>
#include <daydream/semantics/data_parallel.hpp>
#include <daydream/semantics/gradients.hpp>
#include <daydream/registry/registry.hpp>
#include <daydream/passes/tensor_fusion.hpp>
#include <daydream/passes/tensor_partition.hpp>
#include <daydream/passes/tictac.hpp>

#include <support/pass_laws.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace daydream;
namespace dp = daydream::passes;

namespace {

// 25 Gbit/s, 5 us: 3.125e9 bytes/s, 0.32 ns per byte.
const link_spec nic25{25e9 / 8, 5'000};

cluster make_cluster(const std::string& spec) {
  return cluster_from_params(pass_params::parse("test", spec));
}

// One iteration on one stream, no CPU: forward kernel 1000 ns, backward kernels of the
// layers in `layers` (reverse order, 2000 ns each), an optimizer kernel of 500 ns.
struct gpu_iteration {
  graph g;
  resource_id stream = no_resource;
  std::vector<task_id> backward; // in execution order
  task_id optimizer = no_task;
};

gpu_iteration make_gpu_iteration(const std::vector<std::string>& layers) {
  gpu_iteration it;
  auto& g = it.g;
  it.stream = g.add_resource({"stream 7", resource_kind::gpu_stream});
  time_ns at = 0;
  task_id prev = no_task;
  auto add = [&](std::string_view name, time_ns d, std::string_view layer, phase ph) {
    auto k = g.add(gpu_kernel{}, {.name = name, .duration = d, .resource = it.stream, .trace_start = at,
                                  .layer = layer, .phase = ph});
    at += d;
    if (prev != no_task) g.add_dependency(prev, k, dep_kind::stream_order);
    prev = k;
    return k.id;
  };
  for (auto& l : layers) add("fwd", 1000 / time_ns(layers.size()), l, phase::forward);
  for (auto l = layers.rbegin(); l != layers.rend(); ++l)
    it.backward.push_back(add("bwd", 2000, *l, phase::backward));
  it.optimizer = add("sgd", 500, "", phase::weight_update);
  return it;
}

// The live task named `name` (the first in id order), or no_task.
task_id named(const graph& g, std::string_view name, std::int32_t iteration = 0) {
  task_id found = no_task;
  g.for_each_task([&](task_id t) {
    if (found == no_task && g.name(t) == name && g.iteration(t) == iteration) found = t;
  });
  REQUIRE(found != no_task);
  return found;
}

// Every live task named `name`, in id order.
std::vector<task_id> all_named(const graph& g, std::string_view name) {
  std::vector<task_id> out;
  g.for_each_task([&](task_id t) {
    if (g.name(t) == name) out.push_back(t);
  });
  return out;
}

template <class Pass> Pass make_pass(const std::string& spec, dp::layer_bytes sizes) {
  auto p = daydream::passes::from_params<Pass>(pass_params::parse(std::string(Pass::name), spec));
  p.sizes = std::move(sizes);
  return p;
}

} // namespace

TEST_CASE("cluster parameters are read the same way for every pass, with units") {
  auto c = make_cluster("workers=16,bandwidth=25Gbps");
  CHECK(c.workers() == 16);
  CHECK(c.machines == 16);
  CHECK(c.workers_per_machine == 1);
  CHECK(c.network.bandwidth == doctest::Approx(3.125e9));
  CHECK(c.network.latency == 5'000);

  auto d = make_cluster("workers=16,workers_per_machine=8,nvlink=150GB/s,latency=10us,bandwidth=12.5GB/s");
  CHECK(d.machines == 2);
  CHECK(d.intra().bandwidth == doctest::Approx(150e9));
  CHECK(d.network.bandwidth == doctest::Approx(12.5e9));
  CHECK(d.network.latency == 10'000);
  // The ring is paced by its slowest link: the NIC.
  CHECK(d.ring_link().bandwidth == doctest::Approx(12.5e9));

  // NVLink without a shape: machines of 8 GPUs, so the NVLink is used.
  auto n = make_cluster("workers=2,nvlink=10000GB/s");
  CHECK(n.machines == 1);
  CHECK(n.workers_per_machine == 2);
  CHECK(n.ring_link().bandwidth == doctest::Approx(10e12));
  CHECK(make_cluster("workers=16,nvlink=300GB/s").machines == 2);
  CHECK_THROWS_AS(make_cluster("workers=12,nvlink=300GB/s"), usage_error);
  CHECK(make_cluster("workers=12,machines=12,nvlink=300GB/s").workers_per_machine == 1);

  auto e = make_cluster("machines=4,workers_per_machine=2");
  CHECK(e.workers() == 8);
  CHECK(e.servers() == 4);
  CHECK_THROWS_AS(make_cluster("workers=16,machines=3"), error);
  CHECK_THROWS_AS(make_cluster("workers=16,machines=2,workers_per_machine=4"), error);
  auto p = pass_params::parse("ddp", "workers=2,bandwith=10Gbps");
  CHECK_THROWS_AS((void)dp::from_params<dp::ddp>(p), error); // the typo is refused

  // The cluster specs' names are synonyms: nodes, nic, nic_latency.
  auto s = make_cluster("nodes=4,workers_per_machine=2,nic=100Gbps,nic_latency=10us");
  CHECK(s.machines == 4);
  CHECK(s.workers() == 8);
  CHECK(s.network.bandwidth == doctest::Approx(12.5e9));
  CHECK(s.network.latency == 10'000);
  CHECK_THROWS_WITH_AS(make_cluster("workers=8,bandwidth=10Gbps,nic=100Gbps"),
                       doctest::Contains("bandwidth= and nic= name the same quantity"), usage_error);
  CHECK_THROWS_AS(make_cluster("machines=2,nodes=2"), usage_error);
}

TEST_CASE("each collective's duration follows its alpha-beta formula") {
  // n = 100 MB over 25 Gbit/s: n beta = 32 ms; alpha = 5 us; p = 4.
  CHECK(ring_all_reduce_time(100e6, 4, nic25) == 6 * 5'000 + 48'000'000);         // 2(p-1)a + 2(p-1)/p nb
  CHECK(tree_all_reduce_time(100e6, 4, nic25) == 4 * (5'000 + 32'000'000));       // 2 log p (a + nb)
  CHECK(halving_doubling_all_reduce_time(100e6, 4, nic25) == 4 * 5'000 + 48'000'000);
  CHECK(reduce_scatter_time(100e6, 4, nic25) == 3 * 5'000 + 24'000'000);          // (p-1)a + (p-1)/p nb
  CHECK(all_gather_time(100e6, 4, nic25) == 3 * 5'000 + 24'000'000);
  CHECK(broadcast_time(100e6, 4, nic25) == 2 * (5'000 + 32'000'000));             // log p (a + nb)
  CHECK(all_to_all_time(100e6, 4, nic25) == 3 * 5'000 + 24'000'000);
  // PS: 4 workers, 2 servers on equal links: the servers' side is the bottleneck
  // (each carries 100 MB x 4 / 2 = 200 MB).
  CHECK(ps_transfer_time(100e6, 4, 2, nic25, nic25) == 5'000 + 64'000'000);
  // 8 servers: the worker's own link bounds it.
  CHECK(ps_transfer_time(100e6, 4, 8, nic25, nic25) == 5'000 + 32'000'000);
  // Non powers of two: ceil(log2 5) = 3 rounds.
  CHECK(tree_all_reduce_time(1e6, 5, nic25) == 6 * (5'000 + 320'000));
  // Nothing to do alone.
  CHECK(ring_all_reduce_time(100e6, 1, nic25) == 0);
  CHECK(broadcast_time(100e6, 1, nic25) == 0);

  // BlueConnect on 2 machines x 4 GPUs, NVLink 100 GB/s 1 us, 80 MB.
  auto c = make_cluster("machines=2,workers_per_machine=4,nvlink=100GB/s,nvlink_latency=1us");
  auto s = blueconnect_stages(80e6, c);
  CHECK(s.reduce_scatter_intra == 3 * 1'000 + 600'000);       // 3/4 x 80 MB / 100 GB/s
  CHECK(s.reduce_scatter_inter == 5'000 + 12'800'000);        // 1/2 x 20 MB / (3.125 GB/s / 4)
  CHECK(s.all_gather_inter == s.reduce_scatter_inter);
  CHECK(s.all_gather_intra == s.reduce_scatter_intra);
  CHECK(s.total() == 2 * 603'000 + 2 * 12'805'000);
  // A flat ring over the same cluster is paced by the NIC: 2 x 7/8 x 80 MB / 3.125 GB/s.
  CHECK(all_reduce_time(80e6, c) == 14 * 5'000 + 44'800'000);
}

TEST_CASE("two transfers sharing a link take twice as long as one") {
  graph g;
  auto link = link_resource(g, "NIC node 0", 25e9 / 8);
  auto a = g.add(comm_task{.op = comm_op::all_reduce}, {.name = "a", .duration = 1000, .resource = link});
  auto b = g.add(comm_task{.op = comm_op::all_reduce}, {.name = "b", .duration = 1000, .resource = link});
  auto r = replay(g);
  CHECK(r.end[a] == 2000);
  CHECK(r.end[b] == 2000);
  CHECK(r.busy[link] == 2000);

  // Staggered: b joins at 500 when a has 500 left; both then run at half speed.
  graph h;
  auto l2 = link_resource(h, "NIC node 0", 25e9 / 8);
  auto x = h.add(comm_task{}, {.name = "x", .duration = 1000, .resource = l2});
  auto delay = h.add(cpu_task{}, {.name = "delay", .duration = 500});
  auto y = h.add(comm_task{}, {.name = "y", .duration = 1000, .resource = l2});
  h.add_dependency(delay, y, dep_kind::control);
  auto r2 = replay(h);
  CHECK(r2.end[x] == 1500);
  CHECK(r2.end[y] == 2000);

  // Alone, the same transfer takes its own duration.
  graph one;
  auto l3 = link_resource(one, "NIC node 0", 25e9 / 8);
  auto z = one.add(comm_task{}, {.name = "z", .duration = 1000, .resource = l3});
  CHECK(replay(one).end[z] == 1000);
}

TEST_CASE("overlap slowdown slows GPU streams of the node only while communication runs") {
  graph g;
  auto stream = g.add_resource({"stream 7", resource_kind::gpu_stream});
  auto link = link_resource(g, "NIC node 0", 25e9 / 8);
  auto k1 = g.add(gpu_kernel{}, {.name = "k1", .duration = 100, .resource = stream});
  auto k2 = g.add(gpu_kernel{}, {.name = "k2", .duration = 100, .resource = stream});
  g.add_dependency(k1, k2, dep_kind::stream_order);
  auto delay = g.add(cpu_task{}, {.name = "delay", .duration = 40});
  auto c = g.add(comm_task{}, {.name = "allreduce", .duration = 100, .resource = link});
  g.add_dependency(delay, c, dep_kind::control);

  // Off by default: the replay is unchanged.
  auto r0 = replay(g);
  CHECK(r0.end[k1] == 100);
  CHECK(r0.end[k2] == 200);

  // Factor 1.5: k1 runs 40 ns alone, then its last 60 ns of work at 1/1.5 speed (90 ns);
  // the transfer ends at 140, so k2 runs 130..140 slowed (10 ns of real time do 6.67 ns
  // of work) and its remaining 93.33 ns alone: 140 + 93.33 = 233.
  replay_options o;
  o.overlap_slowdown = 1.5;
  auto r = replay(g, trace_order_policy{}, o);
  CHECK(r.end[c] == 140);
  CHECK(r.end[k1] == 130);
  CHECK(r.start[k2] == 130);
  CHECK(r.end[k2] == 233);
  CHECK(r.busy[stream] == 233);

  // Fully overlapped: exactly factor x duration.
  graph h;
  auto s2 = h.add_resource({"stream 7", resource_kind::gpu_stream});
  auto l2 = link_resource(h, "NIC node 0", 25e9 / 8);
  auto k = h.add(gpu_kernel{}, {.name = "k", .duration = 100, .resource = s2});
  h.add(comm_task{}, {.name = "c", .duration = 1000, .resource = l2});
  auto rh = replay(h, trace_order_policy{}, o);
  CHECK(rh.end[k] == 150);

  // Communication on another node does not slow this node.
  graph other;
  auto s3 = other.add_resource({"stream 7", resource_kind::gpu_stream});
  auto l3 = other.add_resource({"NIC node 1", resource_kind::link, sharing::fair, 1, -1, 1e9});
  auto k3 = other.add(gpu_kernel{}, {.name = "k", .duration = 100, .resource = s3});
  other.add(comm_task{}, {.name = "c", .duration = 1000, .resource = l3});
  CHECK(replay(other, trace_order_policy{}, o).end[k3] == 100);

  o.overlap_slowdown = 0.5;
  CHECK_THROWS_AS(replay(g, trace_order_policy{}, o), error);
}

TEST_CASE("ddp buckets follow PyTorch: reverse parameter order, first bucket 1 MiB, then 25 MiB") {
  // DLRM's top MLP as the trace shows it: the first bucket closes after the tensor
  // that crosses 1 MiB (394241 floats), as the recorded nccl:all_reduce sizes say.
  dp::gradient_set gs;
  std::vector<std::uint64_t> floats = {1, 256, 256, 131072, 512, 262144, 512, 187904, 30'000'000, 4};
  for (std::size_t i = 0; i < floats.size(); ++i)
    gs.grads.push_back({0, "", floats[i] * 4, task_id(i), no_task, 0});
  auto bs = dp::ddp_buckets(gs, 25ull << 20, 1ull << 20);
  REQUIRE(bs.size() == 3);
  CHECK(bs[0].bytes == 394241 * 4);
  CHECK(bs[0].members.size() == 6);
  CHECK(bs[1].bytes == (512 + 187904 + 30'000'000) * 4); // crosses 25 MiB with the big tensor
  CHECK(bs[2].bytes == 16);
  // Cap 0: one bucket per gradient.
  CHECK(dp::ddp_buckets(gs, 0, 0).size() == floats.size());
}

TEST_CASE("a single large bucket after the last backward kernel adds exactly its all-reduce time") {
  auto it = make_gpu_iteration({"fc"});
  auto before = replay(it.g).makespan;
  CHECK(before == 1000 + 2000 + 500);

  auto pass = dp::from_params<dp::ddp>(pass_params::parse("ddp", "workers=4,bandwidth=25Gbps,latency=5us"));
  pass.sizes = {{"fc", 10'000'000}};
  auto rep = apply(it.g, pass);
  CHECK(rep.pass == "ddp");
  const time_ns allreduce = 6 * 5'000 + 4'800'000; // 2(p-1)a + 2(p-1)/p x 10 MB x 0.32 ns/B
  CHECK(ring_all_reduce_time(10e6, 4, nic25) == allreduce);
  auto r = replay(it.g);
  CHECK(r.makespan == before + allreduce);
  CHECK(iteration_time(it.g, r, 0) == before + allreduce);
  // The optimizer kernel is what waited, for the all-reduce.
  CHECK(r.start[it.optimizer] == 3000 + allreduce);
  CHECK(r.edge[it.optimizer] == dep_kind::comm);

  // One worker: nothing changes.
  auto single = make_gpu_iteration({"fc"});
  auto one = dp::from_params<dp::ddp>(pass_params::parse("ddp", "workers=1"));
  one.sizes = {{"fc", 10'000'000}};
  apply(single.g, one);
  CHECK(replay(single.g).makespan == before);
}

TEST_CASE("p3 sends earlier layers first, one slice at a time") {
  // Three layers of 1 MB, 500 kB slices, 1 GB/s links without latency: a slice takes
  // 500 us, far longer than the backward, so c's first slice goes out alone and a's and
  // b's slices queue behind it; P3 then sends a (the first layer) before b, and c's
  // second slice last.
  auto it = make_gpu_iteration({"a", "b", "c"});
  auto pass = make_pass<dp::p3>("workers=2,bandwidth=8Gbps,latency=0us,slice=500kB,iterations=1",
                                {{"a", 1'000'000}, {"b", 1'000'000}, {"c", 1'000'000}});
  apply(it.g, pass);
  static_assert(std::is_same_v<pass_policy_t<dp::p3>, priority_policy>);
  auto r = replay(it.g, pass_policy_t<dp::p3>{});
  auto pushes = [&](std::string_view n) { return all_named(it.g, n); };
  auto a = pushes("push a"), b = pushes("push b"), c = pushes("push c");
  REQUIRE(a.size() == 2);
  REQUIRE(b.size() == 2);
  REQUIRE(c.size() == 2);
  const time_ns t0 = 999 + 2000; // c's gradient is ready when its backward kernel ends
  CHECK(r.start[c[0]] == t0);
  CHECK(r.start[a[0]] == t0 + 500'000);
  CHECK(r.start[a[1]] == t0 + 1'000'000);
  CHECK(r.start[b[0]] == t0 + 1'500'000);
  CHECK(r.start[b[1]] == t0 + 2'000'000);
  CHECK(r.start[c[1]] == t0 + 2'500'000);
  // Pulls follow in the same priority order on the downlink.
  auto pa = all_named(it.g, "pull a"), pc = all_named(it.g, "pull c");
  CHECK(r.start[pc[0]] == t0 + 500'000);
  CHECK(r.end[pa[1]] == t0 + 2'000'000);
  CHECK(r.end[pc[1]] == t0 + 3'500'000);
  // The servers update the weights: the workers' optimizer kernel is gone.
  CHECK(all_named(it.g, "sgd").empty());

  // Trace order (no priorities) would send c's second slice right after its first.
  auto fifo = replay(it.g);
  CHECK(fifo.start[c[1]] == t0 + 500'000);
}

TEST_CASE("p3 overlaps the next forward with the previous iteration's communication") {
  auto it = make_gpu_iteration({"a", "b", "c"});
  auto pass = make_pass<dp::p3>("workers=2,bandwidth=8Gbps,latency=0us,slice=500kB,iterations=2",
                                {{"a", 1'000'000}, {"b", 1'000'000}, {"c", 1'000'000}});
  auto rep = apply(it.g, pass);
  CHECK(it.g.size() > 0);
  auto r = replay(it.g, pass_policy_t<dp::p3>{});
  const time_ns t0 = 999 + 2000;
  // The second iteration's first layer starts once its parameters are back, while b's
  // and c's slices are still on the wire.
  task_id fwd_a = no_task;
  it.g.for_each_task([&](task_id t) {
    if (it.g.iteration(t) == 1 && it.g.layer(t) == "a" && it.g.phase_of(t) == phase::forward) fwd_a = t;
  });
  REQUIRE(fwd_a != no_task);
  CHECK(r.start[fwd_a] == t0 + 2'000'000);
  CHECK(r.start[fwd_a] < r.end[all_named(it.g, "pull c")[1]]);
  CHECK(!rep.items.empty());
}

TEST_CASE("tictac pulls parameters in the order the next forward consumes them") {
  // c (3 MB) is ready first; its long pull lets the pulls of b and a queue, and TicTac
  // takes a first (the forward needs it first), where trace order would take b.
  auto it = make_gpu_iteration({"a", "b", "c"});
  auto pass = make_pass<dp::tictac>("workers=2,bandwidth=8Gbps,latency=0us,iterations=1",
                                    {{"a", 500'000}, {"b", 500'000}, {"c", 3'000'000}});
  apply(it.g, pass);
  auto r = replay(it.g, pass_policy_t<dp::tictac>{});
  const time_ns t0 = 999 + 2000;
  auto pull_a = named(it.g, "pull a"), pull_b = named(it.g, "pull b"), pull_c = named(it.g, "pull c");
  CHECK(r.start[named(it.g, "push b")] == t0 + 3'000'000);
  CHECK(r.end[pull_c] == t0 + 6'000'000);
  CHECK(r.start[pull_a] == t0 + 6'000'000);
  CHECK(r.start[pull_b] == t0 + 6'500'000);
  auto fifo = replay(it.g);
  CHECK(fifo.start[pull_b] == t0 + 6'000'000);
}

TEST_CASE("blueconnect stages of consecutive buckets overlap on their own channels") {
  // 2 machines x 2 GPUs, NVLink 100 GB/s, NIC 1 GB/s, no latency; two 400 kB buckets.
  // Per bucket: reduce-scatter intra 1/2 x 400 kB / 100 GB/s = 2 us; inter: the 200 kB
  // shard at half the NIC, 1/2 x 200 kB / 0.5 GB/s = 200 us; then the mirrors.
  auto it = make_gpu_iteration({"a", "b"});
  auto pass = make_pass<dp::blueconnect>(
      "machines=2,workers_per_machine=2,nvlink=100GB/s,nvlink_latency=0us,bandwidth=8Gbps,"
      "latency=0us,first_bucket=1,bucket_cap=1",
      {{"a", 400'000}, {"b", 400'000}});
  apply(it.g, pass);
  auto r = replay(it.g);
  auto rs_intra0 = named(it.g, "reduce_scatter intra bucket 0"), rs_intra1 = named(it.g, "reduce_scatter intra bucket 1");
  auto rs_inter0 = named(it.g, "reduce_scatter inter bucket 0"), rs_inter1 = named(it.g, "reduce_scatter inter bucket 1");
  auto ag_inter0 = named(it.g, "all_gather inter bucket 0"), ag_inter1 = named(it.g, "all_gather inter bucket 1");
  auto ag_intra0 = named(it.g, "all_gather intra bucket 0"), ag_intra1 = named(it.g, "all_gather intra bucket 1");
  // Bucket 0 (b's gradient) is ready at 3000, bucket 1 (a's) at 5000.
  CHECK(r.start[rs_intra0] == 3'000);
  CHECK(r.end[rs_intra0] == 5'000);
  CHECK(r.start[rs_inter0] == 5'000);
  // Bucket 1 reduces inside the machine while bucket 0 crosses the network.
  CHECK(r.start[rs_intra1] == 5'000);
  CHECK(r.end[rs_intra1] == 7'000);
  CHECK(r.end[rs_inter0] == 205'000);
  // Bucket 1's inter-machine reduce-scatter waits for its channel, then shares the NIC
  // with bucket 0's all-gather: both take twice as long.
  CHECK(r.start[rs_inter1] == 205'000);
  CHECK(r.start[ag_inter0] == 205'000);
  CHECK(r.end[rs_inter1] == 605'000);
  CHECK(r.end[ag_inter0] == 605'000);
  CHECK(r.end[ag_intra0] == 607'000);
  CHECK(r.end[ag_inter1] == 805'000);
  CHECK(r.end[ag_intra1] == 807'000);
  CHECK(r.start[it.optimizer] == 807'000);
  // Without overlap the two buckets would take 2 x 404 us after 3 us.
  CHECK(r.start[it.optimizer] < 3'000 + 2 * 404'000);
}

TEST_CASE("dgc sends the compressed gradient and pays for compression kernels") {
  auto it = make_gpu_iteration({"fc"});
  auto pass = make_pass<dp::dgc>("workers=4,bandwidth=25Gbps,latency=5us,ratio=0.001", {{"fc", 10'000'000}});
  auto rep = apply(it.g, pass);
  auto r = replay(it.g);
  // No copies in this graph: 500 GB/s. Compression: 8 passes over 10 MB = 160 us.
  auto compress = named(it.g, "dgc_compress");
  CHECK(r.start[compress] == 3'000);
  CHECK(r.end[compress] == 163'000);
  // Each worker sends 2 x 0.001 x 10 MB = 20 kB; the all-gather of 4 x 20 kB:
  // 3 x 5 us + 3/4 x 80 kB x 0.32 ns/B.
  auto gather = named(it.g, "sparse all_gather bucket 0");
  CHECK(it.g.payload(it.g.as<comm_task>(gather)).bytes == 20'000);
  CHECK(r.end[gather] == 163'000 + 15'000 + 19'200);
  // Decompression writes 10 MB and reads 80 kB: 20.16 us, then the optimizer.
  auto decompress = named(it.g, "dgc_decompress");
  CHECK(r.end[decompress] == 197'200 + 20'160);
  CHECK(r.start[it.optimizer] == 217'360);
  CHECK(!rep.notes.empty()); // says the throughput is the default, not measured
}

TEST_CASE("tensor_partition splits gradients into partitions that share the links") {
  // 10 MB in 4 MB partitions: 4, 4 and 2 MB; 4 workers, 4 servers, 25 Gbit/s, 5 us:
  // 4 MB takes 1285 us alone, 2 MB 645 us.
  auto it = make_gpu_iteration({"fc"});
  auto pass = make_pass<dp::tensor_partition>("workers=4,bandwidth=25Gbps,latency=5us,partition=4MB",
                                              {{"fc", 10'000'000}});
  apply(it.g, pass);
  auto r = replay(it.g);
  auto pushes = all_named(it.g, "push fc"), pulls = all_named(it.g, "pull fc");
  REQUIRE(pushes.size() == 3);
  CHECK(it.g.payload(it.g.as<comm_task>(pushes[2])).bytes == 2'000'000);
  // Three pushes share the uplink: the 2 MB one ends after 3 x 645 us, the others
  // after another 2 x 640 us.
  CHECK(r.end[pushes[2]] == 3'000 + 1'935'000);
  CHECK(r.end[pushes[0]] == 3'000 + 1'935'000 + 1'280'000);
  // The small pull runs alone on the downlink while the big pushes finish.
  CHECK(r.end[pulls[2]] == 3'000 + 1'935'000 + 645'000);
  CHECK(r.end[pulls[0]] == 3'218'000 + 2'570'000);
  // The workers' optimizer waits for every pull.
  CHECK(r.start[it.optimizer] == 5'788'000);
}

TEST_CASE("tensor_fusion fuses the gradients ready within one cycle") {
  // b is ready at 3 us, a at 5 us; 1 MB each, 2 workers, 25 Gbit/s, 5 us.
  auto it = make_gpu_iteration({"a", "b"});
  const dp::layer_bytes sizes{{"a", 1'000'000}, {"b", 1'000'000}};
  // 4 us cycles: b goes at 4 us, a at 8 us, in two buffers, one after the other.
  auto small = it;
  apply(small.g, make_pass<dp::tensor_fusion>("workers=2,cycle_time=4us", sizes));
  auto r = replay(small.g);
  auto f0 = named(small.g, "fused all_reduce 0"), f1 = named(small.g, "fused all_reduce 1");
  CHECK(r.start[f0] == 4'000);
  CHECK(r.end[f0] == 4'000 + 330'000); // 2 x 5 us + 1 MB x 0.32 ns/B
  CHECK(r.start[f1] == 334'000);
  CHECK(r.end[f1] == 664'000);
  CHECK(r.start[small.optimizer] == 664'000);
  // 1 ms cycles (Horovod's default): both in one 2 MB buffer at 1 ms.
  auto big = it;
  apply(big.g, make_pass<dp::tensor_fusion>("workers=2", sizes));
  auto rb = replay(big.g);
  auto only = named(big.g, "fused all_reduce 0");
  CHECK(all_named(big.g, "fused all_reduce 1").empty());
  CHECK(big.g.payload(big.g.as<comm_task>(only)).bytes == 2'000'000);
  CHECK(rb.start[only] == 1'000'000);
  CHECK(rb.end[only] == 1'650'000);
  // A threshold below 2 MB splits the cycle's gradients again.
  auto capped = it;
  apply(capped.g, make_pass<dp::tensor_fusion>("workers=2,threshold=1MB", sizes));
  CHECK(all_named(capped.g, "fused all_reduce 1").size() == 1);
}

namespace {

// A traced iteration as the Kineto reader builds it: a forward launch on the main
// thread, the backward on the autograd thread (a matmul backward, then the
// AccumulateGrad of its 10 MB weight), the optimizer back on the main thread.
struct traced_iteration {
  graph g;
  task_id bwd_kernel = no_task, acc = no_task, sgd = no_task, step = no_task, sgd_call = no_task;
};

traced_iteration make_traced(std::uint64_t grad_bytes) {
  traced_iteration it;
  auto& g = it.g;
  auto main = g.add_resource({"thread 1", resource_kind::cpu_thread});
  auto autograd = g.add_resource({"thread 2", resource_kind::cpu_thread});
  auto stream = g.add_resource({"stream 7", resource_kind::gpu_stream});
  auto op = [&](resource_id thr, std::string_view name, time_ns d, phase ph, time_ns at,
                std::uint64_t bytes = 0) {
    return g.add(cpu_task{.call = cpu_call::op, .tensor_bytes = bytes},
                 {.name = name, .duration = d, .resource = thr, .trace_start = at, .phase = ph}).id;
  };
  auto launch = [&](resource_id thr, time_ns at, phase ph) {
    return g.add(cpu_task{.call = cpu_call::launch},
                 {.name = "cudaLaunchKernel", .duration = 5, .resource = thr, .trace_start = at, .phase = ph}).id;
  };
  auto kernel = [&](std::string_view name, time_ns d, phase ph, time_ns at) {
    return g.add(gpu_kernel{}, {.name = name, .duration = d, .resource = stream, .trace_start = at, .phase = ph}).id;
  };
  auto chain = [&](std::vector<task_id> ts, dep_kind k) {
    for (std::size_t i = 1; i < ts.size(); ++i) g.add_dependency(ts[i - 1], ts[i], k);
  };
  auto linear = op(main, "aten::linear", 100, phase::forward, 0);
  auto l1 = launch(main, 100, phase::forward);
  auto fwd = kernel("sgemm_fwd", 1000, phase::forward, 105);
  auto ev1 = op(autograd, "autograd::engine::evaluate_function: AddmmBackward0", 10, phase::backward, 105);
  auto mm = op(autograd, "aten::mm", 10, phase::backward, 115);
  auto l2 = launch(autograd, 125, phase::backward);
  it.bwd_kernel = kernel("sgemm_bwd", 2000, phase::backward, 1105);
  auto ev2 = op(autograd, "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", 5,
                phase::backward, 130);
  it.acc = op(autograd, "torch::autograd::AccumulateGrad", 5, phase::backward, 135, grad_bytes);
  auto step = op(main, "Optimizer.step#SGD.step", 10, phase::weight_update, 140);
  auto l3 = launch(main, 150, phase::weight_update);
  it.step = step;
  it.sgd_call = l3;
  it.sgd = kernel("sgd", 500, phase::weight_update, 3105);
  chain({linear, l1, step, l3}, dep_kind::cpu_order);
  chain({ev1, mm, l2, ev2, it.acc}, dep_kind::cpu_order);
  chain({fwd, it.bwd_kernel, it.sgd}, dep_kind::stream_order);
  g.add_dependency(l1, fwd, dep_kind::launch);
  g.add_dependency(l2, it.bwd_kernel, dep_kind::launch);
  g.add_dependency(l3, it.sgd, dep_kind::launch);
  g.add_dependency(l1, ev1, dep_kind::control);      // backward() after the forward
  g.add_dependency(it.acc, step, dep_kind::control); // step() after backward() returns
  return it;
}

} // namespace

TEST_CASE("gradients come from the AccumulateGrad shapes of the trace") {
  auto it = make_traced(10'000'000);
  auto gs = dp::find_gradients(it.g);
  CHECK(gs.source == dp::gradient_source::trace);
  REQUIRE(gs.grads.size() == 1);
  CHECK(gs.grads[0].bytes == 10'000'000);
  CHECK(gs.grads[0].ready == it.bwd_kernel); // the kernel that computed it
  CHECK(gs.grads[0].source == it.acc);
  CHECK(gs.note.empty());
  CHECK(dp::update_entries(it.g, 0) == std::vector<task_id>{it.sgd});
  CHECK(dp::update_entries(it.g, 1).empty()); // no such iteration
  const auto all = dp::update_entries_by_iteration(it.g);
  REQUIRE(all.size() == 1);
  CHECK(all.at(0) == std::vector<task_id>{it.sgd});
  const auto fwd = dp::forward_gpu_tasks_by_iteration(it.g); // the one forward kernel
  REQUIRE(fwd.size() == 1);
  REQUIRE(fwd.at(0).size() == 1);
  CHECK(it.g.name(fwd.at(0)[0]) == "sgemm_fwd");
  CHECK(dp::forward_gpu_tasks(it.g, 0) == fwd.at(0));

  // The single bucket's all-reduce lands between the backward and the optimizer kernel.
  auto before = replay(it.g).makespan;
  CHECK(before == 3605);
  auto rep = apply(it.g, dp::from_params<dp::ddp>(pass_params::parse("ddp", "workers=4,bandwidth=25Gbps")));
  CHECK(replay(it.g).makespan == before + ring_all_reduce_time(10e6, 4, nic25));
  CHECK(rep.notes.empty());
}

TEST_CASE("a trace without sizes says so, and model_bytes can stand in") {
  auto it = make_traced(0);
  auto rep = apply(it.g, dp::from_params<dp::ddp>(pass_params::parse("ddp", "workers=4")));
  REQUIRE(!rep.notes.empty());
  CHECK(rep.notes[0].find("no gradient sizes") != std::string::npos);
  CHECK(replay(it.g).makespan == 3605); // nothing inserted

  auto spread = make_traced(0);
  auto rep2 = apply(spread.g, dp::from_params<dp::ddp>(pass_params::parse("ddp", "workers=4,model_bytes=10MB")));
  CHECK(replay(spread.g).makespan == 3605 + ring_all_reduce_time(10e6, 4, nic25));
  REQUIRE(!rep2.notes.empty());
  CHECK(rep2.notes[0].find("spread evenly") != std::string::npos);
}

namespace {

// make_traced as one rank of a DDP job records it: DDP's hook on the autograd thread
// launches an NCCL all-reduce of the gradient on its own stream after the
// AccumulateGrad; that stream waits for the gradient's kernel, the optimizer's stream
// waits for the all-reduce. The recorded kernel takes `recorded` ns (on the early ranks
// of a real job it also spins while the others catch up). With `cpu_blocks`, the main
// thread synchronizes with the NCCL stream after launching the optimizer
// (cudaStreamSynchronize), as a loss.item() or a clip_grad_norm_ does.
struct traced_rank : traced_iteration {
  task_id recorded = no_task, blocking = no_task;
};

traced_rank make_traced_rank(std::uint64_t grad_bytes, time_ns recorded, bool cpu_blocks) {
  traced_rank it{make_traced(grad_bytes)};
  auto& g = it.g;
  auto nccl = g.add_resource({"stream 20", resource_kind::gpu_stream});
  const auto autograd = g.resource_of(it.acc), main = g.resource_of(it.sgd_call);
  auto call = g.add(cpu_task{.call = cpu_call::launch},
                    {.name = "cudaLaunchKernel", .duration = 5, .resource = autograd, .trace_start = 140,
                     .phase = phase::backward});
  g.add_dependency(it.acc, call, dep_kind::cpu_order);
  it.recorded = g.add(comm_task{.op = comm_op::all_reduce, .bytes = grad_bytes, .group_size = 8},
                      {.name = "ncclKernel_AllReduce_RING_LL_Sum_float", .duration = recorded, .resource = nccl,
                       .trace_start = 3105, .phase = phase::backward}).id;
  g.add_dependency(call, it.recorded, dep_kind::launch);
  g.add_dependency(it.bwd_kernel, it.recorded, dep_kind::sync);
  g.add_dependency(it.recorded, it.sgd, dep_kind::sync);
  if (cpu_blocks) {
    it.blocking = g.add(cpu_task{.call = cpu_call::sync},
                        {.name = "cudaStreamSynchronize", .duration = 10, .resource = main, .trace_start = 160,
                         .phase = phase::weight_update}).id;
    g.add_dependency(it.sgd_call, it.blocking, dep_kind::cpu_order);
    g.add_dependency(it.recorded, it.blocking, dep_kind::sync);
  }
  return it;
}

task_id only_modelled_all_reduce(const graph& g) {
  auto found = all_named(g, "all_reduce bucket 0");
  REQUIRE(found.size() == 1);
  return found[0];
}

} // namespace

TEST_CASE("a data-parallel trace without shapes takes its gradient bytes from its recorded all-reduces") {
  // The rank's AccumulateGrad has no recorded size, its NCCL all-reduce says 10 MB
  // (In msg nelems x dtype, as the ingest reads it).
  auto r = make_traced_rank(0, 1000, false);
  r.g.payload(r.g.as<comm_task>(r.recorded)).bytes = 10'000'000;
  auto gs = dp::find_gradients(r.g);
  CHECK(gs.source == dp::gradient_source::collectives);
  REQUIRE(gs.grads.size() == 1);
  CHECK(gs.grads[0].bytes == 10'000'000);
  CHECK(gs.grads[0].ready == r.bwd_kernel);
  CHECK(gs.note.find("recorded message sizes: 10000000 bytes in iteration 0") != std::string::npos);
  // A model size the user gives still wins.
  CHECK(dp::find_gradients(r.g, {}, 4e6).source == dp::gradient_source::spread);
  // Recorded shapes win over both.
  auto sized = make_traced_rank(3'000'000, 1000, false);
  CHECK(dp::find_gradients(sized.g).source == dp::gradient_source::trace);
  // No sizes anywhere: nothing found, and the note says how to record them.
  auto bare = make_traced_rank(0, 1000, false);
  auto none = dp::find_gradients(bare.g);
  CHECK(none.grads.empty());
  CHECK(none.note.find("record_shapes=True") != std::string::npos);
}

TEST_CASE("ddp on a rank of a DDP job replaces the recorded all-reduce instead of stacking on it") {
  // The recorded all-reduce takes 2 ms; on NVLink at 10 TB/s between 2 GPUs the modelled
  // one takes 2 x 1 us + 10 MB / 10 TB/s = 3 us. Kept, the recorded one would still hold
  // the optimizer for 2 ms (5605 ns of iteration); replaced, the iteration is the
  // trace's 3605 ns plus the modelled 3 us.
  auto it = make_traced_rank(10'000'000, 2'000'000, false);
  CHECK(replay(it.g).makespan == 3'105 + 2'000'000 + 500);
  CHECK(dp::find_recorded_collectives(it.g).distributed());
  auto rep = apply(it.g, dp::from_params<dp::ddp>(pass_params::parse("ddp", "workers=2,machines=1,nvlink=10000GB/s")));
  CHECK(rep.applied);
  CHECK(rep.workers == 2);
  CHECK(!it.g.contains(it.recorded));
  CHECK(!dp::find_recorded_collectives(it.g).distributed());
  const time_ns modelled = 2 * 1'000 + 1'000;
  CHECK(ring_all_reduce_time(10e6, 2, link_spec{10e12, 1'000}) == modelled);
  auto r = replay(it.g);
  CHECK(r.makespan == 3'605 + modelled);
  CHECK(r.start[it.sgd] == r.end[only_modelled_all_reduce(it.g)]);
  // The report says what it replaced.
  bool said = false;
  for (auto& n : rep.notes) said = said || n.find("already synchronizes gradients") != std::string::npos;
  CHECK(said);
}

TEST_CASE("the CPU waits for a modelled all-reduce only where the trace shows it blocking") {
  SUBCASE("a CPU synchronize on the recorded all-reduce now waits for the modelled one") {
    auto it = make_traced_rank(10'000'000, 2'000'000, true);
    apply(it.g, dp::from_params<dp::ddp>(pass_params::parse("ddp", "workers=2,machines=1,nvlink=10000GB/s")));
    auto r = replay(it.g);
    auto ar = only_modelled_all_reduce(it.g);
    CHECK(it.g.has_dependency(ar, it.blocking));
    CHECK(r.start[it.blocking] == r.end[ar]);
    CHECK(r.end[ar] == 3'105 + 3'000);
  }
  SUBCASE("an optimizer without GPU work is not made to wait: NCCL's wait is a stream wait") {
    // The optimizer's kernel was not linked to its launch (the reader then gives it phase
    // other): the weight-update phase has CPU work only. Its CPU calls go on launching;
    // the all-reduce only ends the iteration.
    auto it = make_traced(10'000'000);
    it.g.set_phase(it.sgd, phase::other);
    const auto step = it.step;
    const auto before = replay(it.g);
    auto rep = apply(it.g, dp::from_params<dp::ddp>(pass_params::parse("ddp", "workers=4,bandwidth=25Gbps")));
    auto r = replay(it.g);
    CHECK(r.start[step] == before.start[step]);
    CHECK(r.start[it.sgd] == before.start[it.sgd]);
    CHECK(r.makespan == 3'105 + ring_all_reduce_time(10e6, 4, nic25));
    bool said = false;
    for (auto& n : rep.notes) said = said || n.find("no optimizer work on the GPU") != std::string::npos;
    CHECK(said);
  }
}

TEST_CASE("every distributed pass replaces recorded gradient synchronization and reports its workers") {
  const dp::layer_bytes none{};
  auto check = [](auto pass, const char* what) {
    CAPTURE(what);
    auto it = make_traced_rank(10'000'000, 2'000'000, true);
    auto rep = apply(it.g, pass);
    CHECK(rep.applied);
    CHECK(rep.workers == 4);
    CHECK(!dp::find_recorded_collectives(it.g).distributed());
    // Nothing of the pass's own is mistaken for recorded communication.
    std::size_t modelled = 0;
    for (auto c : tasks<comm_task>(it.g)) {
      CHECK(!dp::is_recorded_communication(it.g, c));
      ++modelled;
    }
    CHECK(modelled > 0);
  };
  const std::string spec = "workers=4,bandwidth=25Gbps";
  check(dp::from_params<dp::ddp>(pass_params::parse("ddp", spec)), "ddp");
  check(dp::from_params<dp::blueconnect>(pass_params::parse("blueconnect", "machines=2,workers_per_machine=2")), "blueconnect");
  check(dp::from_params<dp::dgc>(pass_params::parse("dgc", spec)), "dgc");
  check(dp::from_params<dp::tensor_fusion>(pass_params::parse("tensor_fusion", spec)), "tensor_fusion");
  check(dp::from_params<dp::tensor_partition>(pass_params::parse("tensor_partition", spec)), "tensor_partition");
  check(dp::from_params<dp::p3>(pass_params::parse("p3", spec)), "p3");
  check(dp::from_params<dp::tictac>(pass_params::parse("tictac", spec)), "tictac");
}

TEST_CASE("a distributed pass that changes nothing says so and why") {
  SUBCASE("one worker on a single-GPU trace") {
    auto it = make_traced(10'000'000);
    auto rep = apply(it.g, dp::from_params<dp::ddp>(pass_params::parse("ddp", "workers=1")));
    CHECK_FALSE(rep.applied);
    CHECK(rep.reason.find("one worker") != std::string::npos);
    CHECK(rep.workers == 1);
    CHECK(replay(it.g).makespan == 3'605);
  }
  SUBCASE("one worker on a rank of a job: its all-reduce goes, nothing replaces it, and it says so") {
    auto it = make_traced_rank(10'000'000, 2'000'000, true);
    auto rep = apply(it.g, dp::from_params<dp::ddp>(pass_params::parse("ddp", "workers=1")));
    CHECK(rep.applied);
    CHECK(rep.workers == 1);
    CHECK(!it.g.contains(it.recorded));
    CHECK(tasks<comm_task>(it.g).begin() == tasks<comm_task>(it.g).end());
    CHECK(replay(it.g).makespan == 3'605);
    bool said = false;
    for (auto& n : rep.notes) said = said || n.find("nothing replaces it") != std::string::npos;
    CHECK(said);
  }
  SUBCASE("no gradient sizes: a rank's recorded all-reduce is kept, not stripped") {
    auto it = make_traced_rank(0, 2'000'000, false);
    const auto before = replay(it.g).makespan;
    for (auto* spec : {"ddp", "p3", "tictac", "dgc", "blueconnect", "tensor_fusion", "tensor_partition"}) {
      CAPTURE(spec);
      auto reg = passes::registry<graph>::of<dp::ddp, dp::p3, dp::tictac, dp::dgc, dp::blueconnect,
                                             dp::tensor_fusion, dp::tensor_partition>();
      auto h = it.g;
      auto rep = reg.make(std::string(spec) + ":workers=4").run(h);
      CHECK_FALSE(rep.applied);
      CHECK(rep.reason.find("no gradient sizes") != std::string::npos);
      CHECK(h.contains(it.recorded));
      CHECK(replay(h).makespan == before);
    }
  }
}

TEST_CASE("the default what-if run leaves data-parallel scenarios out on a trace that is already distributed") {
  auto reg = passes::registry<graph>::of<dp::ddp, dp::p3, dp::tictac, dp::dgc, dp::blueconnect, dp::tensor_fusion,
                                         dp::tensor_partition>();
  auto single = make_traced(10'000'000);
  auto rank = make_traced_rank(10'000'000, 2'000'000, false);
  for (auto& e : reg.entries()) {
    CAPTURE(e.name);
    CHECK(e.applicable(single.g));
    CHECK(e.not_applicable_reason(single.g).empty());
    CHECK_FALSE(e.applicable(rank.g));
    const auto why = e.not_applicable_reason(rank.g);
    CHECK(why.find("already data-parallel") != std::string::npos);
    CHECK(why.find("8-worker job") != std::string::npos);
  }
  CHECK(reg.find("ddp")->not_applicable_reason(make_traced(0).g).find("no gradient sizes") != std::string::npos);
}

TEST_CASE("blueconnect's default machines hold 8 GPUs, so it differs from ddp") {
  auto c = dp::from_params<dp::blueconnect>(pass_params::parse("blueconnect", "workers=16")).cluster;
  CHECK(c.machines == 2);
  CHECK(c.workers_per_machine == 8);
  CHECK(dp::from_params<dp::blueconnect>(pass_params::parse("blueconnect", "workers=4")).cluster.machines == 1);
  CHECK(dp::from_params<dp::ddp>(pass_params::parse("ddp", "workers=16")).cluster.machines == 16);
  CHECK_THROWS_AS((void)dp::from_params<dp::blueconnect>(pass_params::parse("blueconnect", "workers=12")), usage_error);
  CHECK(dp::from_params<dp::blueconnect>(pass_params::parse("blueconnect", "workers=12,machines=3"))
            .cluster.workers_per_machine == 4);
  // The default scenario: intra-machine stages exist, and the prediction is not ddp's.
  auto scenario = pass_params::parse("blueconnect", std::string(dp::pass_spec<dp::blueconnect>::scenario_params));
  auto it = make_gpu_iteration({"fc"});
  auto bc = dp::from_params<dp::blueconnect>(scenario);
  bc.sizes = {{"fc", 100'000'000}};
  CHECK(bc.cluster.workers() == 16);
  auto a = it;
  apply(a.g, bc);
  CHECK(all_named(a.g, "reduce_scatter intra bucket 0").size() == 1);
  auto d = make_pass<dp::ddp>("workers=16,bandwidth=25Gbps", {{"fc", 100'000'000}});
  auto b = it;
  apply(b.g, d);
  CHECK(replay(a.g).makespan != replay(b.g).makespan);
}

TEST_CASE("dgc checks the memory throughput it measures against physical bounds") {
  // A trace whose only device copies are tiny: 4 bytes in 3 us reads as 2.7 MB/s, which
  // would make compressing 10 MB take 30 s. It is out of bounds: the default is used.
  auto it = make_gpu_iteration({"fc"});
  auto copies = it.g.add_resource({"stream 9", resource_kind::gpu_stream});
  it.g.add(memcpy_task{.direction = copy_kind::d2d, .bytes = 4},
           {.name = "Memcpy DtoD", .duration = 3'000, .resource = copies});
  it.g.add(memcpy_task{.direction = copy_kind::memset, .bytes = 4},
           {.name = "Memset", .duration = 3'000, .resource = copies});
  auto pass = make_pass<dp::dgc>("workers=4,bandwidth=25Gbps,latency=5us,ratio=0.001", {{"fc", 10'000'000}});
  auto bounded = pass.memory_throughput(it.g);
  CHECK_FALSE(bounded.derived);
  CHECK(bounded.value == 500e9);
  CHECK(bounded.note.find("nothing to measure") != std::string::npos);
  // A large copy that stalled: 2 MB read and written in 1.5 s is 2.7 MB/s, below any GPU memory.
  it.g.add(memcpy_task{.direction = copy_kind::d2d, .bytes = 2'000'000},
           {.name = "Memcpy DtoD", .duration = 1'500'000'000, .resource = copies});
  CHECK(dp::dgc::measured_throughput(it.g) == doctest::Approx(4e6 / 1.5));
  CHECK_FALSE(pass.memory_throughput(it.g).derived);
  auto rep = apply(it.g, pass);
  auto r = replay(it.g);
  CHECK(r.end[named(it.g, "dgc_compress")] == 163'000); // 8 passes over 10 MB at 500 GB/s
  bool said = false;
  for (auto& n : rep.notes) said = said || n.find("outside the physical range") != std::string::npos;
  CHECK(said);

  // A plausible measurement is used: a 100 MB device copy in 250 us is 800 GB/s.
  auto fast = make_gpu_iteration({"fc"});
  auto s2 = fast.g.add_resource({"stream 9", resource_kind::gpu_stream});
  fast.g.add(memcpy_task{.direction = copy_kind::d2d, .bytes = 100'000'000},
             {.name = "Memcpy DtoD", .duration = 250'000, .resource = s2});
  auto measured = pass.memory_throughput(fast.g);
  CHECK(measured.derived);
  CHECK(measured.value == doctest::Approx(800e9));
  // A GEMM whose bytes and FLOPs come from recorded shapes is no measure of it: 1 MB
  // in 1 ms would read as 1 GB/s. A memset kernel (bytes, no FLOPs) is: 100 MB in 50 us.
  fast.g.add(gpu_kernel{.bytes = 1'000'000, .flops = 1'000'000'000},
             {.name = "volta_sgemm_128x64_nn", .duration = 1'000'000, .resource = s2});
  CHECK(dp::dgc::measured_throughput(fast.g) == doctest::Approx(800e9));
  fast.g.add(gpu_kernel{.bytes = 100'000'000}, {.name = "memset_kernel", .duration = 50'000, .resource = s2});
  CHECK(dp::dgc::measured_throughput(fast.g) == doctest::Approx(300e6 / 300e-6)); // the copy reads and writes
  // The fixed cost of a kernel taken from the trace is bounded too.
  graph slow;
  auto st = slow.add_resource({"stream 7", resource_kind::gpu_stream});
  slow.add(gpu_kernel{}, {.name = "only_long_kernels", .duration = 5'000'000, .resource = st});
  CHECK(dp::dgc::kernel_floor(slow).value == double(dp::dgc::default_kernel_floor));
  CHECK(dp::dgc::kernel_floor(fast.g).value == 500.0); // the optimizer kernel, 500 ns
}

TEST_CASE("strip_communication removes recorded collectives and bridges their dependencies") {
  graph g;
  auto thr = g.add_resource({"thread 1", resource_kind::cpu_thread});
  auto compute = g.add_resource({"stream 7", resource_kind::gpu_stream});
  auto nccl = g.add_resource({"stream 20", resource_kind::gpu_stream});
  auto call = g.add(cpu_task{.call = cpu_call::launch}, {.name = "cudaLaunchKernel", .duration = 5, .resource = thr});
  auto k = g.add(gpu_kernel{}, {.name = "bwd", .duration = 100, .resource = compute});
  auto ar = g.add(gpu_kernel{}, {.name = "ncclKernel_AllReduce_RING_LL_Sum_float", .duration = 700, .resource = nccl});
  auto opt = g.add(gpu_kernel{}, {.name = "sgd", .duration = 10, .resource = compute});
  g.add_dependency(k, ar, dep_kind::sync);
  g.add_dependency(call, ar, dep_kind::launch);
  g.add_dependency(k, opt, dep_kind::stream_order);
  g.add_dependency(ar, opt, dep_kind::sync);
  CHECK(replay(g).makespan == 810);
  CHECK(dp::strip_communication(g) == 1);
  CHECK(!g.contains(ar));
  CHECK(g.contains(call));
  CHECK(g.has_dependency(call, opt)); // what waited on the collective still waits on its causes
  CHECK(replay(g).makespan == 110);
}

TEST_CASE("the distributed passes obey the pass laws") {
  const auto fixtures = daydream::testing::standard_fixtures();
  const dp::layer_bytes sizes{{"layer0", 4'000'000}, {"layer1", 30'000'000}, {"layer2", 1'000'000},
                              {"layer3", 2'000'000}};
  const std::string spec = "machines=2,workers_per_machine=2,nvlink=100GB/s";
  daydream::testing::check_pass_laws(make_pass<dp::ddp>(spec, sizes), fixtures);
  daydream::testing::check_pass_laws(make_pass<dp::p3>(spec, sizes), fixtures);
  daydream::testing::check_pass_laws(make_pass<dp::tictac>(spec, sizes), fixtures);
  daydream::testing::check_pass_laws(make_pass<dp::blueconnect>(spec, sizes), fixtures);
  daydream::testing::check_pass_laws(make_pass<dp::dgc>(spec, sizes), fixtures);
  daydream::testing::check_pass_laws(make_pass<dp::tensor_fusion>(spec, sizes), fixtures);
  daydream::testing::check_pass_laws(make_pass<dp::tensor_partition>(spec, sizes), fixtures);
  // Without a map the fixtures have no sizes: the passes must leave them alone.
  daydream::testing::check_pass_laws(dp::from_params<dp::ddp>(pass_params::parse("ddp", spec)), fixtures);
}
