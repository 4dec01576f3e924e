// Distributed passes on a real rank of a multi-GPU job: recorded gradient synchronization is replaced, never stacked on.
// SPDX-License-Identifier: MIT
#include <daydream/daydream.hpp>
#include <daydream/io/kineto.hpp>
#include <daydream/passes/blueconnect.hpp>
#include <daydream/passes/ddp.hpp>
#include <daydream/passes/dgc.hpp>
#include <daydream/passes/p3.hpp>
#include <daydream/registry/specs/ddp.hpp>
#include <daydream/semantics/data_parallel.hpp>
#include <daydream/registry/registry.hpp>
#include <daydream/passes/tensor_fusion.hpp>
#include <daydream/passes/tensor_partition.hpp>
#include <daydream/passes/tictac.hpp>

#include <doctest/doctest.h>
#include <support/corpus.hpp>

#include <cmath>
#include <map>
#include <string>

using namespace daydream;
namespace dp = daydream::passes;

namespace {

// Rank 0 of an 8-GPU DLRM job on V100s (bundled with the examples): per iteration 3
// NCCL all-reduces of the data-parallel MLP gradients (backward), all-to-all exchanges
// of the model-parallel embeddings (SendRecv kernels, forward and backward), and a
// cudaDeviceSynchronize that waits for the last all-reduce.
const std::string dlrm = daydream::testing::bundled("dlrm_v100_rank0.json.gz").string();

std::size_t count(const graph& g, comm_op op, bool recorded) {
  std::size_t n = 0;
  for (auto c : tasks<comm_task>(g))
    if (c.payload().op == op && dp::is_recorded_communication(g, c) == recorded) ++n;
  return n;
}

auto registry() {
  return dp::registry<graph>::of<dp::ddp, dp::p3, dp::tictac, dp::dgc, dp::blueconnect, dp::tensor_fusion,
                                 dp::tensor_partition>();
}

} // namespace

TEST_CASE("ddp on rank 0 of an 8-GPU DLRM job replaces its recorded all-reduces") {
  auto t = io::load_kineto(dlrm);
  const auto it = t.default_iteration();
  const auto rec = dp::find_recorded_collectives(t.g);
  REQUIRE(rec.gradient_sync.size() == 3);
  CHECK(rec.group == 8);
  const auto all_to_all = count(t.g, comm_op::all_to_all, true) + count(t.g, comm_op::send, true) +
                          count(t.g, comm_op::recv, true) + count(t.g, comm_op::other, true);
  CHECK(all_to_all == rec.other);
  CHECK(rec.other > 0);
  const double measured = double(t.measured(it));

  // The job's own cluster: 8 V100s on NVLink 2.0 (25 GB/s per link, 1 us).
  auto h = t.g;
  auto rep = apply(h, dp::from_params<dp::ddp>(pass_params::parse("ddp", "workers=8,machines=1,nvlink=25GB/s")));
  CHECK(rep.applied);
  CHECK(rep.workers == 8);
  CHECK(count(h, comm_op::all_reduce, true) == 0);  // the recorded ones are gone
  CHECK(count(h, comm_op::all_reduce, false) == 2); // DDP's two buckets replace them
  CHECK(dp::find_recorded_collectives(h).other == rec.other); // the embedding exchange stays
  // The CPU's cudaDeviceSynchronize waited for the last recorded all-reduce: it waits
  // for the last modelled bucket now.
  task_id device_sync = no_task, last_bucket = no_task;
  for (auto c : tasks<cpu_task>(h) | where(name_matches("^cudaDeviceSynchronize$"))) device_sync = c;
  for (auto c : tasks<comm_task>(h) | where(name_matches("^all_reduce bucket 1$"))) last_bucket = c;
  REQUIRE(device_sync != no_task);
  REQUIRE(last_bucket != no_task);
  CHECK(h.has_dependency(last_bucket, device_sync));
  // The prediction for the job's own cluster stays where the measurement is.
  const double predicted = double(iteration_time(h, replay(h), it));
  MESSAGE("DLRM rank 0: measured " << measured / 1e6 << " ms, ddp on its own cluster " << predicted / 1e6 << " ms");
  CHECK(std::fabs(predicted - measured) / measured < 0.02);

  // A very fast link can only make the iteration shorter than with the recorded (slow,
  // skewed) collectives, never longer: nothing is stacked.
  auto fast = t.g;
  apply(fast, dp::from_params<dp::ddp>(pass_params::parse("ddp", "workers=2,machines=1,nvlink=10000GB/s")));
  CHECK(iteration_time(fast, replay(fast), it) <= iteration_time(t.g, replay(t.g), it));
}

TEST_CASE("every distributed pass on the DLRM rank: no recorded all-reduce left, plausible times") {
  auto t = io::load_kineto(dlrm);
  const auto it = t.default_iteration();
  const double baseline = double(iteration_time(t.g, replay(t.g), it));
  auto reg = registry();
  for (auto& e : reg.entries()) {
    CAPTURE(e.name);
    // Not in the default run: the trace is already data-parallel.
    CHECK_FALSE(e.applicable(t.g));
    CHECK(e.not_applicable_reason(t.g).find("already data-parallel") != std::string::npos);
    // Explicitly asked for, it replaces the recorded synchronization.
    auto pass = reg.make(std::string(e.name) + ":workers=8,machines=1,nvlink=25GB/s");
    auto h = t.g;
    auto rep = pass.run(h);
    CHECK(rep.applied);
    CHECK(rep.workers == 8);
    CHECK(count(h, comm_op::all_reduce, true) == 0);
    auto r = pass.replay(h, {});
    // p3 and tictac unroll the one-iteration graph: read the last copy.
    std::int32_t last = it;
    for (auto x : tasks(h)) last = std::max(last, x.iteration());
    const double predicted = double(iteration_time(h, r, last));
    MESSAGE(e.name << ": " << predicted / 1e6 << " ms against " << baseline / 1e6 << " ms replayed as traced");
    // 2.5 MB of gradients on 25 GB/s NVLink: no pass can take more than twice the iteration.
    CHECK(predicted < 2 * baseline);
    CHECK(predicted > 0.5 * baseline);
  }
}

TEST_CASE("on every rank of a multi-GPU job in the corpus, ddp replaces or refuses, never stacks") {
  std::size_t distributed = 0, replaced = 0, refused = 0, extra = 0;
  for (auto& trace : daydream::testing::corpus()) {
    // plain references: clang 14 cannot capture structured bindings in CAPTURE's lambda
    const auto& file = trace.file;
    const auto& name = trace.name;
    const bool bundled = trace.bundled;
    auto t = io::load_kineto(file.string());
    const auto rec = dp::find_recorded_collectives(t.g);
    if (!rec.distributed()) continue;
    CAPTURE(name);
    ++distributed;
    extra += !bundled;
    // Never in the default run.
    CHECK_FALSE(dp::ddp::applicable(t.g));
    CHECK_FALSE(dp::ddp::not_applicable(t.g).empty());
    // Asked for: the recorded synchronization is replaced (its waits kept, without a
    // cycle: apply would refuse one), or the pass refuses and keeps it.
    auto h = t.g;
    auto rep = apply(h, dp::from_params<dp::ddp>(pass_params::parse("ddp", "workers=8,machines=1,nvlink=100GB/s")));
    const auto after = dp::find_recorded_collectives(h);
    if (rep.applied) {
      ++replaced;
      CHECK_FALSE(after.distributed());
      CHECK(after.other == rec.other);
      CHECK(count(h, comm_op::all_reduce, false) > 0);
      const auto it = t.default_iteration();
      CHECK(iteration_time(h, replay(h), it) > 0);
    } else {
      ++refused;
      CHECK(rep.reason.find("no gradient sizes") != std::string::npos);
      CHECK(after.gradient_sync.size() == rec.gradient_sync.size());
      CHECK(h.size() == t.g.size());
    }
  }
  MESSAGE(distributed << " traces hold recorded gradient synchronization (" << extra << " of them extra): "
                      << replaced << " replaced, " << refused << " refused");
  // The bundled corpus holds DLRM (8 ranks), recommendation models (2 and 8 ranks), DDP
  // on 16 A100s, a 128-rank job, an MI300 (RCCL) job and a compiled DDP without shapes.
  CHECK(distributed - extra >= 10);
  CHECK(replaced > 0);
  CHECK(refused > 0);
}

TEST_CASE("a DDP rank recorded without shapes: gradient bytes from its NCCL all-reduces' recorded sizes") {
  // HTA's 2-rank A100 trace with NCCL metadata (In msg nelems, dtype) and no input shapes.
  auto t = io::load_kineto(daydream::testing::bundled("hta_nccl_metadata_a100_2rank/nccl_data.json.gz"));
  auto gs = dp::find_gradients(t.g);
  REQUIRE(gs.source == dp::gradient_source::collectives);
  std::map<std::int32_t, double> reduced, found;
  std::map<std::int32_t, std::size_t> count;
  for (auto c : tasks<comm_task>(t.g))
    if (c.phase() == phase::backward && c.payload().op == comm_op::all_reduce)
      reduced[c.iteration()] += double(c.payload().bytes);
  for (auto& gr : gs.grads) {
    found[gr.iteration] += double(gr.bytes);
    ++count[gr.iteration];
  }
  REQUIRE(!found.empty());
  for (const auto& iteration : found) {
    const std::int32_t it = iteration.first;
    const double bytes = iteration.second;
    CAPTURE(it);
    CHECK(bytes > 100e6); // a ResNet-50's 102 MB of FP32 gradients
    CHECK(bytes <= reduced[it]);
    CHECK(bytes > reduced[it] - double(count[it])); // spread in whole bytes
  }
  // The data-parallel passes now size their buckets from it instead of refusing.
  auto g = t.g;
  auto rep = apply(g, dp::from_params<dp::ddp>(pass_params::parse("ddp", "workers=16")));
  CHECK(rep.applied);
}
