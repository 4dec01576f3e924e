// Tests Kineto ingestion end to end on the bundled real traces (tests/data, examples/traces) and the extra ones when present.
// SPDX-License-Identifier: MIT
#include "catalog.hpp"

#include <daydream/io/kineto.hpp>
#include <daydream/iteration.hpp>
#include <daydream/replay.hpp>
#include <daydream/select.hpp>
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

/// Every trace is loaded once for the whole test program.
const io::kineto_trace& load(const fs::path& p) {
  static std::map<fs::path, std::unique_ptr<io::kineto_trace>> cache;
  auto& slot = cache[p];
  if (!slot) slot = std::make_unique<io::kineto_trace>(io::load_kineto(p));
  return *slot;
}
/// A bundled trace by its path under tests/data or examples/traces (throws when missing).
const io::kineto_trace& load(const char* rel) { return load(testing::bundled(rel)); }

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

/// The bundled corpus: 33 traces in tests/data and the 2 of examples/traces.
constexpr std::size_t bundled_count = 95;

TEST_CASE("the bundled corpus is all there, and the run says how many traces it uses") {
  auto all = testing::corpus();
  const std::size_t bundled = testing::bundled_corpus().size();
  CHECK(bundled == bundled_count);
  // Every file the other tests name is there (testing::bundled throws otherwise).
  for (auto* rel : {"hta_amd_mi250_minitoy/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
                    "hta_mlp_ddp_v100_2rank/df_index_resolver.steps2-4.json.gz",
                    "tracelens_h100_inference/gaunernst_bert-small-uncased__1016001.json.gz",
                    "resnet50_v100.json.gz", "dlrm_v100_rank0.json.gz"})
    CHECK_NOTHROW(testing::bundled(rel));
  auto extra = testing::extra_root();
  std::size_t used_bundled = 0;
  for (auto& t : all) used_bundled += t.bundled;
  MESSAGE("real traces used: " << all.size() << " (" << used_bundled << " bundled"
                               << std::string(testing::skip_bundled() ? ", checked by an earlier run" : "") << ", "
                               << all.size() - used_bundled << " extra"
                               << (extra ? " from " + extra->string() : std::string(", none found")) << ")");
  for (auto& root : testing::bundled_roots()) CHECK(fs::is_directory(root));
}

TEST_CASE("every real trace loads, accounts for every event and has an acyclic graph") {
  std::size_t n = 0;
  for (auto& trace : testing::corpus()) {
    // plain references, not structured bindings: CAPTURE's lambda captures them
    const auto& f = trace.file;
    const auto& name = trace.name;
    CAPTURE(name);
    auto& t = load(f);
    CHECK(t.report.events > 0);
    CHECK(t.report.in_graph + t.report.ignored_total() == t.report.events);
    CHECK(t.g.size() > 0);
    CHECK_NOTHROW(check_invariants(t.g));
    CHECK(t.report.ignored.count("zero-duration CPU event") + t.report.ignored.count("metadata") +
              t.report.in_graph > 0);
    ++n;
  }
  MESSAGE(n << " real traces loaded");
  // A second run over extra traces alone (DAYDREAM_SKIP_BUNDLED=1) has those only.
  if (testing::skip_bundled()) CHECK(n > 0);
  else CHECK(n >= bundled_count);
}

TEST_CASE("the unmodified graph replays every steady-state iteration within 2% of the trace") {
  std::size_t checked = 0, bundled_checked = 0, traces = 0;
  for (auto& trace : testing::corpus()) {
    // plain references, not structured bindings: CAPTURE's lambda captures them
    const auto& f = trace.file;
    const auto& name = trace.name;
    const bool bundled = trace.bundled;
    auto& t = load(f);
    auto r = replay(t.g);
    auto rows = tests::accuracy(t, r);
    ++traces;
    for (auto& row : rows) {
      if (!row.steady) continue;
      CAPTURE(name);
      CAPTURE(row.iteration);
      CAPTURE(row.measured);
      CAPTURE(row.replayed);
      CHECK(std::fabs(row.error()) <= 0.02);
      ++checked;
      bundled_checked += bundled;
    }
    if (rows.empty()) {
      // no iterations: the whole trace replays to its own span
      CAPTURE(name);
      double span = double(t.info.end - t.info.begin);
      CHECK(span > 0);
      CHECK(std::fabs(double(r.makespan) - span) <= 0.02 * span);
    }
  }
  MESSAGE(checked << " steady-state iterations of " << traces << " real traces checked (" << bundled_checked
                  << " of bundled traces)");
  if (testing::skip_bundled()) CHECK(checked > 0);
  else CHECK(bundled_checked >= 30);
}

TEST_CASE("the replay's peak memory plus what was allocated before equals the trace's peak") {
  // Every trace with device [memory] events that carry "Total Allocated".
  std::size_t n = 0;
  for (auto& trace : testing::corpus()) {
    // plain references, not structured bindings: CAPTURE's lambda captures them
    const auto& f = trace.file;
    const auto& name = trace.name;
    auto& t = load(f);
    if (t.info.memory_peak <= 0) continue;
    CAPTURE(name);
    auto r = replay(t.g);
    CHECK(r.peak_memory + t.info.memory_at_start == t.info.memory_peak);
    ++n;
  }
  MESSAGE(n << " real traces with a Total Allocated level checked");
  // bundled: the MLP under DDP (training), BERT-small and the NSFW image detector on an H100
  CHECK(n >= 3);
  CHECK(load("hta_mlp_ddp_v100_2rank/df_index_resolver.steps2-4.json.gz").info.memory_peak > 0);
  CHECK(load("tracelens_h100_inference/Falconsai_nsfw_image_detection__1016002.json.gz").info.memory_peak > 0);
}

TEST_CASE("a faster GPU shortens GPU-bound iterations, a faster CPU CPU-bound ones") {
  auto check = [](const char* name, bool gpu, double at_most) {
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
  check("resnet50_v100.json.gz", true, 0.75);
  // ResNet-18 on an RTX 2080 Ti waits for the GPU in blocking input copies
  check("param_resnet18_rtx2080ti/resnet_kineto.iterations1-6.json.gz", true, 0.8);
  // BERT-small inference on an H100 is CPU bound
  check("tracelens_h100_inference/gaunernst_bert-small-uncased__1016001.json.gz", false, 0.8);
}

TEST_CASE("facts of the real traces survive ingestion") {
  // DLRM: ranks 1 and 3 have 64 GPU ops without runtime calls; 8 NCCL kernels per rank
  // (rank 0 is examples/traces/dlrm_v100_rank0.json.gz, ranks 1-7 tests/data)
  const char* dlrm[] = {"dlrm_v100_rank0.json.gz",
                        "param_dlrm_8rank_v100/worker1_step_12.1694128201556.pt.trace.json.gz",
                        "param_dlrm_8rank_v100/worker2_step_12.1694128201554.pt.trace.json.gz",
                        "param_dlrm_8rank_v100/worker3_step_12.1694128201557.pt.trace.json.gz",
                        "param_dlrm_8rank_v100/worker4_step_12.1694128201547.pt.trace.json.gz",
                        "param_dlrm_8rank_v100/worker5_step_12.1694128201549.pt.trace.json.gz",
                        "param_dlrm_8rank_v100/worker6_step_12.1694128201553.pt.trace.json.gz",
                        "param_dlrm_8rank_v100/worker7_step_12.1694128201553.pt.trace.json.gz"};
  for (int rank = 0; rank < 8; ++rank) {
    CAPTURE(dlrm[rank]);
    auto& t = load(dlrm[rank]);
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
  // the MLP under DDP, cut to ProfilerStep#2-4: 404 NCCL all-reduces per step
  auto& ddp = load("hta_mlp_ddp_v100_2rank/df_index_resolver.steps2-4.json.gz");
  CHECK(count_kind(ddp.g, comm_op::all_reduce) == 3 * 404);
  REQUIRE(ddp.iterations.size() == 3);
  CHECK(ddp.iterations.front().number == 2);
  auto& rn = load("resnet50_v100.json.gz");
  REQUIRE(rn.iterations.size() == 5);
  CHECK(rn.iterations.front().number == 101);
  CHECK(rn.default_iteration() == 104);
  // ns timestamps are kept exactly: ProfilerStep#101 starts at 1712195495505455.xyz us
  CHECK(rn.iterations.front().trace_begin % 1000 != 0);
  auto& bert = load("tracelens_h100_inference/gaunernst_bert-small-uncased__1016001.json.gz");
  bool module_layer = false;
  bert.g.for_each<gpu_kernel>([&](handle<gpu_kernel> h) { module_layer |= bert.g.layer(h).find("BertLayer") == 0 || bert.g.layer(h).find("Linear") == 0; });
  CHECK(module_layer);
  auto& mi = load("hta_amd_mi250_minitoy/mi250_minitoy_train_ROCm6_2_kineto.json.gz");
  std::size_t launches = 0;
  mi.g.for_each<cpu_task>([&](handle<cpu_task> h) { launches += mi.g.payload(h).call == cpu_call::launch; });
  CHECK(launches == 14);
  CHECK(mi.report.unlinked_gpu_ops == 0);
}

TEST_CASE("the last of two steps is its own work, not the step before's kernels it found queued") {
  // GPT-2 FP32 on an H100, recorded with the ground-truth kit: ProfilerStep#4 began with
  // the GPU still running about 50 ms of step 3's kernels. It is measured as the longer of
  // its CPU work (97.1 ms: it synchronizes with the GPU) and its own GPU work, not from
  // its marker to the end of its GPU work (144.4 ms); it runs at 93.2 ms without the
  // profiler, its kernels take 90.9 ms.
  auto& t = load("ground_truth/h100-80gb-hbm3/gpt2_fp32.json.gz");
  REQUIRE(t.iterations.size() == 2);
  const auto& last = t.iterations[1];
  CHECK(last.number == 4);
  CHECK(last.backlog_end - last.trace_begin > 40'000'000);
  CHECK(last.device_end - last.trace_begin > 140'000'000);
  const auto m = t.measured(4);
  CHECK(m > 90'000'000);
  CHECK(m < 100'000'000);
  const auto r = replay(t.g);
  CHECK(std::abs(double(iteration_time(t.g, r, 4) - m)) < 0.001 * double(m));
}

TEST_CASE("torch.compile traces ingest with every event accounted for and replay within 2%") {
  // GPT-2 under torch.compile (Inductor's Triton kernels, CompiledFunction wrappers) and
  // under mode="reduce-overhead" (the same kernels from cudaGraphLaunch), on both GPUs.
  for (const char* rel : {"ground_truth/h100-80gb-hbm3/gpt2_compile.json.gz",
                          "ground_truth/h100-80gb-hbm3/gpt2_compile_cudagraphs.json.gz",
                          "ground_truth/h200/gpt2_compile.json.gz", "ground_truth/h200/gpt2_compile_cudagraphs.json.gz"}) {
    const std::string name = rel;
    CAPTURE(name);
    auto& t = load(rel);
    CHECK(t.report.in_graph + t.report.ignored_total() == t.report.events);
    std::size_t triton = 0;
    for (auto k : tasks<gpu_kernel>(t.g)) triton += t.g.name(k).substr(0, 7) == "triton_";
    CHECK(triton > 100);
    const auto r = replay(t.g);
    std::size_t steady = 0;
    for (auto& row : tests::accuracy(t, r)) {
      if (!row.steady) continue;
      CHECK(std::fabs(row.error()) <= 0.02);
      ++steady;
    }
    CHECK(steady >= 1);
  }
}

TEST_CASE("a real trace in Chrome's JSON Array Format gives the graph its object form gives") {
  // The same events; the array form has no place for deviceProperties or distributedInfo.
  auto& obj = load("hta_small_train_gp100/step_based_trace_2543932.json.gz");
  auto& arr = load("hta_small_train_gp100/step_based_trace_2543932.array.json.gz");
  CHECK(arr.report.events == obj.report.events);
  CHECK(arr.report.in_graph == obj.report.in_graph);
  CHECK(arr.g.size() == obj.g.size());
  REQUIRE(arr.iterations.size() == obj.iterations.size());
  for (std::size_t i = 0; i < obj.iterations.size(); ++i) {
    CHECK(arr.iterations[i].number == obj.iterations[i].number);
    CHECK(arr.measured(arr.iterations[i].number) == obj.measured(obj.iterations[i].number));
  }
  CHECK(replay(arr.g).makespan == replay(obj.g).makespan);
}
