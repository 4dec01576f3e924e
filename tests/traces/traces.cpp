// Tests Kineto ingestion end to end on the real traces of ../shared/traces.
// SPDX-License-Identifier: MIT
#include "catalog.hpp"

#include <daydream/io/kineto.hpp>
#include <daydream/iteration.hpp>
#include <daydream/replay.hpp>
#include <daydream/update.hpp>
#include <daydream/validate.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

using namespace daydream;
namespace fs = std::filesystem;

namespace {

const fs::path root = DAYDREAM_SHARED_TRACES;

/// Every trace is loaded once for the whole test program.
const io::kineto_trace& load(const fs::path& p) {
  static std::map<fs::path, std::unique_ptr<io::kineto_trace>> cache;
  auto& slot = cache[p];
  if (!slot) slot = std::make_unique<io::kineto_trace>(io::load_kineto(p));
  return *slot;
}
const io::kineto_trace& load(const char* rel) { return load(root / rel); }

std::string rel(const fs::path& p) { return fs::relative(p, root).string(); }

std::size_t count_kind(const graph& g, comm_op op) {
  std::size_t n = 0;
  g.for_each<comm_task>([&](handle<comm_task> h) { n += g.payload(h).op == op; });
  return n;
}

/// Scales every task on a GPU stream (or every CPU task) by `f`.
graph scaled(const graph& g, bool gpu, double f) {
  graph h = g;
  h.for_each_task([&](task_id t) {
    auto k = h.resource_at(h.resource_of(t)).kind;
    if ((k == resource_kind::gpu_stream) == gpu) scale_duration(h, t, f);
  });
  return h;
}

} // namespace

TEST_CASE("the catalog holds every Kineto trace of the shared folder") {
  auto files = tests::kineto_traces(root);
  if (files.empty()) {
    MESSAGE("no traces under " << root.string() << "; skipped");
    return;
  }
  CHECK(files.size() == 25);
}

TEST_CASE("every real trace loads, accounts for every event and has an acyclic graph") {
  for (auto& f : tests::kineto_traces(root)) {
    CAPTURE(rel(f));
    auto& t = load(f);
    CHECK(t.report.events > 0);
    CHECK(t.report.in_graph + t.report.ignored_total() == t.report.events);
    CHECK(t.g.size() > 0);
    CHECK_NOTHROW(check_invariants(t.g));
    CHECK(t.report.ignored.count("zero-duration CPU event") + t.report.ignored.count("metadata") +
              t.report.in_graph > 0);
  }
}

TEST_CASE("the unmodified graph replays every steady-state iteration within 2% of the trace") {
  std::size_t checked = 0;
  for (auto& f : tests::kineto_traces(root)) {
    auto& t = load(f);
    auto r = replay(t.g);
    auto rows = tests::accuracy(t, r);
    for (auto& row : rows) {
      if (!row.steady) continue;
      CAPTURE(rel(f));
      CAPTURE(row.iteration);
      CAPTURE(row.measured);
      CAPTURE(row.replayed);
      CHECK(std::fabs(row.error()) <= 0.02);
      ++checked;
    }
    if (rows.empty()) {
      // no iterations: the whole trace replays to its own span
      CAPTURE(rel(f));
      double span = double(t.info.end - t.info.begin);
      CHECK(span > 0);
      CHECK(std::fabs(double(r.makespan) - span) <= 0.02 * span);
    }
  }
  if (!tests::kineto_traces(root).empty()) CHECK(checked >= 60);
}

TEST_CASE("the replay's peak memory plus what was allocated before equals the trace's peak") {
  for (auto* name : {"tracelens_h100_inference_modules/gaunernst_bert-small-uncased__1016001.json.gz",
                     "tracelens_h100_inference_modules/facebook_timesformer-base-finetuned-k400__1016002.json.gz",
                     "hta_mlp_ddp_v100_2rank/df_index_resolver.json.gz"}) {
    if (!fs::exists(root / name)) continue;
    CAPTURE(name);
    auto& t = load(name);
    REQUIRE(t.info.memory_peak > 0);
    auto r = replay(t.g);
    CHECK(r.peak_memory + t.info.memory_at_start == t.info.memory_peak);
  }
}

TEST_CASE("a faster GPU shortens GPU-bound iterations, a faster CPU CPU-bound ones") {
  auto check = [](const char* name, bool gpu, double at_most) {
    if (!fs::exists(root / name)) return;
    CAPTURE(name);
    auto& t = load(name);
    auto n = t.default_iteration();
    auto base = iteration_time(t.g, replay(t.g), n);
    auto g2 = scaled(t.g, gpu, 0.5);
    auto faster = iteration_time(g2, replay(g2), n);
    CAPTURE(base);
    CAPTURE(faster);
    CHECK(faster < at_most * double(base));
  };
  // ResNet-50 on a V100 is GPU bound (the launch queue fills up): the GPU sets the pace
  check("hta_resnet50_ddp_v100_ns/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", true, 0.75);
  // ResNet-18 on an RTX 2080 Ti waits for the GPU in blocking input copies
  check("param_resnet18_rtx2080ti/resnet_kineto.json.gz", true, 0.8);
  // BERT-small inference on an H100 is CPU bound
  check("tracelens_h100_inference_modules/gaunernst_bert-small-uncased__1016001.json.gz", false, 0.8);
}

TEST_CASE("facts of the real traces survive ingestion") {
  if (!fs::exists(root / "param_dlrm_8rank_v100")) return;
  // DLRM: ranks 1 and 3 have 64 GPU ops without runtime calls; 8 NCCL kernels per rank
  for (int rank = 0; rank < 8; ++rank) {
    for (auto& f : tests::kineto_traces(root / "param_dlrm_8rank_v100")) {
      if (f.filename().string().rfind("worker" + std::to_string(rank) + "_", 0) != 0) continue;
      CAPTURE(rel(f));
      auto& t = load(f);
      CHECK(t.report.unlinked_gpu_ops == (rank == 1 || rank == 3 ? 64u : 0u));
      CHECK(t.g.ids_of<comm_task>().size() == 8);
      CHECK(count_kind(t.g, comm_op::all_reduce) == 3);
      CHECK(count_kind(t.g, comm_op::all_to_all) == 5);
      CHECK(t.info.rank == rank);
      CHECK(t.info.world_size == 8);
      REQUIRE(t.iterations.size() == 1);
      CHECK(t.iterations[0].number == 10);
      std::uint64_t bytes = 0;
      t.g.for_each<comm_task>([&](handle<comm_task> h) { bytes += t.g.payload(h).bytes; });
      CHECK(bytes > 0);
    }
  }
  auto& ddp = load("hta_mlp_ddp_v100_2rank/df_index_resolver.json.gz");
  CHECK(count_kind(ddp.g, comm_op::all_reduce) == 2020);
  auto& rn = load("hta_resnet50_ddp_v100_ns/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz");
  REQUIRE(rn.iterations.size() == 5);
  CHECK(rn.iterations.front().number == 101);
  CHECK(rn.default_iteration() == 104);
  // ns timestamps are kept exactly: ProfilerStep#101 starts at 1712195495505455.xyz us
  CHECK(rn.iterations.front().trace_begin % 1000 != 0);
  auto& bert = load("tracelens_h100_inference_modules/gaunernst_bert-small-uncased__1016001.json.gz");
  bool module_layer = false;
  bert.g.for_each<gpu_kernel>([&](handle<gpu_kernel> h) { module_layer |= bert.g.layer(h).find("BertLayer") == 0 || bert.g.layer(h).find("Linear") == 0; });
  CHECK(module_layer);
  auto& mi = load("hta_amd_mi250_minitoy/mi250_minitoy_train_ROCm6_2_kineto.json.gz");
  std::size_t launches = 0;
  mi.g.for_each<cpu_task>([&](handle<cpu_task> h) { launches += mi.g.payload(h).call == cpu_call::launch; });
  CHECK(launches == 14);
  CHECK(mi.report.unlinked_gpu_ops == 0);
}
