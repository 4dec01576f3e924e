// Benchmarks every bundled pass: the pass alone, and as the what-if program runs it (transactional apply).
// SPDX-License-Identifier: MIT
#include "workloads.hpp"

#include <daydream/daydream.hpp>
#include <daydream/passes/all.hpp>
#include <daydream/registry/bundled.hpp>
#include <daydream/registry/sweep.hpp>
#include <daydream/semantics/memory.hpp>
#include <daydream/sensitivity/sensitivity.hpp>
#include <daydream/whatif/scenario.hpp>
#if DAYDREAM_BENCH_HAVE_IO
#include <daydream/io/kineto.hpp>
#endif

#include <benchmark/benchmark.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

using namespace daydream;
namespace db = daydream::bench;

// ---- workloads: real traces, their iterations replicated with unroll ----

// `copies` back-to-back copies of a trace (its iterations repeated), with the activation
// memory model estimated when the trace records tensor sizes. Without daydream::io the
// traces are replaced by the synthetic training graph of the same size.
const graph& workload(const std::string& trace, std::uint32_t copies) {
  static std::map<std::pair<std::string, std::uint32_t>, std::unique_ptr<graph>> cache;
  auto key = std::make_pair(trace, copies);
  if (auto it = cache.find(key); it != cache.end()) return *it->second;
  graph one;
#if DAYDREAM_BENCH_HAVE_IO
  one = io::load_kineto(trace).g;
#else
  (void)trace;
  one = db::make_training_graph(db::shape_for(80'000, 1));
#endif
  passes::estimate_activation_memory(one);
  auto g = std::make_unique<graph>(copies > 1 ? daydream::unroll(one, copies, dep_kind::data).graph
                                              : std::move(one));
  return *cache.emplace(key, std::move(g)).first->second;
}

// The bundled ResNet-50 trace (5 iterations, 81k tasks) and a recommendation model
// that records tensor sizes (so that gist and vdnn have a memory model to work on).
const std::string resnet = DAYDREAM_SOURCE_DIR "/examples/traces/resnet50_v100.json.gz";
const std::string recsys = DAYDREAM_SHARED_TRACES "/hta_recsys_a100_8rank/control.json.gz";

// Parameters that make each pass do its work on a one-worker trace: the distributed
// passes need a cluster and, as these traces carry no gradient sizes, a model size.
std::string params_for(std::string_view pass) {
  if (pass == "substitute") return "layers=aten::conv2d#1[0-9]";
  for (std::string_view d : {"ddp", "blueconnect", "dgc", "tensor_fusion", "tensor_partition", "p3", "tictac"})
    if (pass == d) return "workers=16,model_bytes=100MB";
  return {};
}

void set_counters(benchmark::State& state, const graph& g, const pass_report& rep, std::size_t after) {
  state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(g.size()));
  state.counters["tasks"] = double(g.size());
  state.counters["tasks_after"] = double(after);
  state.counters["notes"] = double(rep.notes.size());
}

// Times `run(g)` on a fresh copy `g` of `base` per iteration (copying and freeing the
// copy are not timed); the counters come from the last run's report and graph.
template <class Run> void time_on_copies(benchmark::State& state, const graph& base, Run run) {
  pass_report rep;
  std::size_t after = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto g = std::make_unique<graph>(base);
    state.ResumeTiming();
    rep = run(*g);
    benchmark::DoNotOptimize(g->size());
    state.PauseTiming();
    after = g->size();
    g.reset();
    state.ResumeTiming();
  }
  set_counters(state, base, rep, after);
}

// ---- the pass alone: `pass(g)` on a fresh copy (the copy is not timed) ----

template <class Pass> void run_pass(benchmark::State& state, const std::string& trace, std::uint32_t copies) {
  const auto& base = workload(trace, copies);
  const auto name = std::string(pass_traits<Pass>::name);
  const Pass pass = daydream::passes::from_params<Pass>(pass_params::parse(name, params_for(name)));
  time_on_copies(state, base, [&](graph& g) {
    if constexpr (std::is_convertible_v<decltype(pass(g)), pass_report>) return pass_report(pass(g));
    else {
      pass(g);
      return pass_report{};
    }
  });
  if constexpr (requires { Pass::applicable(base); }) state.counters["applicable"] = Pass::applicable(base);
}

// ---- as daydream-whatif runs it: registry, transactional apply (copy + invariants) ----

void run_registry(benchmark::State& state, std::string name, const std::string& trace, std::uint32_t copies) {
  const auto& base = workload(trace, copies);
  auto reg = passes::bundled();
  auto spec = name;
  if (auto p = params_for(name); !p.empty()) spec += ":" + p;
  auto pass = reg.make(spec);
  time_on_copies(state, base, [&](graph& g) { return pass.run(g); });
}

// estimate_activation_memory, the memory model gist, vdnn and recompute build on.
void activation_memory(benchmark::State& state, const std::string& trace, std::uint32_t copies) {
  time_on_copies(state, workload(trace, copies), [](graph& g) {
    return passes::estimate_activation_memory(g, {.overwrite = true});
  });
}

// The sensitivity profile (passes/daydream/sensitivity): one replay per group, each group
// 2x faster, the median steady-state step of the trace's steady-state iterations (the
// last three of ResNet-50's five); one duration_overlay over the shared graph, reset per row.
void sensitivity_profile(benchmark::State& state, const std::string& trace, sensitivity::grouping by) {
  const graph& g = workload(trace, 1);
  std::vector<std::int32_t> its;
#if DAYDREAM_BENCH_HAVE_IO
  its = io::load_kineto(trace).steady_state_iterations();
#endif
  sensitivity::profile p;
  for (auto _ : state) {
    p = sensitivity::profile_of(g, its, {.by = by});
    benchmark::DoNotOptimize(p.rows.data());
  }
  state.counters["rows"] = double(p.rows.size());
  state.counters["tasks"] = double(g.size());
  state.counters["replays_per_s"] =
      benchmark::Counter(double(p.rows.size() + 1), benchmark::Counter::kIsIterationInvariantRate);
}

// ---- what-ifs per second: a duration-only scenario against a bare replay (ResNet-50) ----

// The bundled ResNet-50 trace as loaded (81k tasks), its steady-state iterations and the
// what-if asked of it: every GEMM/convolution kernel 2x faster (`speedup:class=gemm`).
struct whatif_case {
  graph g;
  std::vector<std::int32_t> its;
  std::vector<task_id> gemm;
};
const whatif_case& resnet_whatif() {
  static const whatif_case c = [] {
    whatif_case w;
#if DAYDREAM_BENCH_HAVE_IO
    auto t = io::load_kineto(resnet);
    w.its = t.steady_state_iterations();
    w.g = std::move(t.g);
#else
    w.g = db::make_training_graph(db::shape_for(80'000, 1));
#endif
    w.gemm = passes::speedup{.klass = "gemm"}.selected(w.g);
    return w;
  }();
  return c;
}
const std::string gemm_2x = "speedup:class=gemm,factor=2";

// replay_into of the unchanged graph, into a reused result: the floor of any what-if.
void bare_replay(benchmark::State& state) {
  const auto& c = resnet_whatif();
  replay_result r;
  for (auto _ : state) {
    replay_into(c.g, r);
    benchmark::DoNotOptimize(r.makespan);
  }
  state.counters["tasks"] = double(c.g.size());
}

// The duration-only scenario on an overlay: apply (the selected kernels' durations set on
// a duration_overlay of the shared graph), replay into a reused result, and the median
// steady-state step of the analysed iterations (a steady_plan made once, as for any
// series of what-ifs on one graph). No copy of the graph.
void overlay_scenario(benchmark::State& state) {
  const auto& c = resnet_whatif();
  duration_overlay o(c.g);
  steady_plan plan(c.g, c.its);
  replay_result r;
  time_ns step = 0;
  for (auto _ : state) {
    o.reset();
    for (auto t : c.gemm) o.scale_duration(t, 0.5);
    replay_into(o, r);
    step = whatif::median_step(plan, r);
    benchmark::DoNotOptimize(step);
  }
  state.counters["tasks"] = double(c.g.size());
  state.counters["changed"] = double(c.gemm.size());
  state.counters["step_ns"] = double(step);
}

// The same scenario as `daydream whatif --pass speedup:...` runs it: the pass through the
// registry on a copy of the graph (run_scenario: copy, transactional apply, fresh replay,
// steady-state steps).
void copied_scenario(benchmark::State& state) {
  const auto& c = resnet_whatif();
  const auto chain = passes::bundled().make_chain(gemm_2x);
  time_ns step = 0;
  for (auto _ : state) {
    auto s = whatif::run_scenario(c.g, chain, gemm_2x, c.its, {});
    step = s.predicted;
    benchmark::DoNotOptimize(step);
  }
  state.counters["tasks"] = double(c.g.size());
  state.counters["step_ns"] = double(step);
}

// A 1,000-point sweep of `ddp` over workers (2..41) x bandwidth (1..25 Gbps) on the
// bundled DLRM rank-0 trace, as `daydream whatif TRACE --pass ddp --vary workers=...
// --vary bandwidth=...` predicts it: the grid expanded through the registry, then every
// point as a scenario (a copy of the graph, the pass, a replay, the steady-state steps).
void ddp_sweep(benchmark::State& state) {
#if DAYDREAM_BENCH_HAVE_IO
  static const auto t = io::load_kineto(DAYDREAM_SOURCE_DIR "/examples/traces/dlrm_v100_rank0.json.gz");
  const auto its = t.steady_state_iterations();
  const auto& g = t.g;
#else
  static const graph g = db::make_training_graph(db::shape_for(2'000, 1));
  const std::vector<std::int32_t> its{};
#endif
  const auto reg = passes::bundled();
  passes::sweep_axis workers{.key = "workers", .values = {}}, bandwidth{.key = "bandwidth", .values = {}};
  for (int w = 2; w < 42; ++w) workers.values.push_back(std::to_string(w));
  for (int b = 1; b <= 25; ++b) bandwidth.values.push_back(std::to_string(b) + "Gbps");
  std::size_t points = 0;
  time_ns last = 0;
  for (auto _ : state) {
    auto grid = passes::expand_sweep(reg, {"ddp"}, {workers, bandwidth});
    points = grid.points.size();
    for (auto& p : grid.points) {
      auto s = whatif::run_scenario(g, reg.make_chain(p.spec), p.spec, its, {});
      last = s.predicted;
      benchmark::DoNotOptimize(last);
    }
  }
  state.counters["points"] = double(points);
  state.counters["tasks"] = double(g.size());
  state.counters["s_per_point"] = benchmark::Counter(
      double(points), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

struct workload_spec {
  const char* label;
  const std::string* trace;
  std::uint32_t copies;
};
// ResNet-50 at 81k tasks and unrolled 12 times (one million tasks); the recsys trace
// at 94k tasks (memory passes).
const workload_spec workloads[] = {{"resnet50/81k", &resnet, 1},
                                   {"resnet50x12/975k", &resnet, 12},
                                   {"recsys/94k", &recsys, 1}};

// Workloads whose trace is here (the shared traces may be missing outside this repository).
std::vector<workload_spec> available() {
  std::vector<workload_spec> out;
  for (auto& w : workloads)
    if (std::filesystem::exists(*w.trace)) out.push_back(w);
  return out;
}

template <class Pass> void register_pass() {
  for (auto& w : available()) {
    auto name = "pass/" + std::string(pass_traits<Pass>::name) + "/" + w.label;
    benchmark::RegisterBenchmark(name.c_str(), [w](benchmark::State& s) { run_pass<Pass>(s, *w.trace, w.copies); })
        ->Unit(benchmark::kMillisecond)
        ;
  }
}

template <class... Passes> void register_passes() { (register_pass<Passes>(), ...); }

[[maybe_unused]] const bool registered = [] {
  // Every bundled pass, alone. Keep in step with passes::bundled() (all.hpp).
  register_passes<passes::amp, passes::fused_adam, passes::reconstruct_bn, passes::gist,
                  passes::vdnn, passes::substitute, passes::recompute, passes::grad_accum,
                  passes::ddp, passes::p3, passes::blueconnect, passes::dgc, passes::tictac,
                  passes::tensor_fusion, passes::tensor_partition>();
  for (auto& w : available())
    benchmark::RegisterBenchmark((std::string("pass/estimate_activation_memory/") + w.label).c_str(),
                                 [w](benchmark::State& s) { activation_memory(s, *w.trace, w.copies); })
        ->Unit(benchmark::kMillisecond)
        ;
  // Every pass the registry holds, as the what-if program runs it.
  const auto reg = passes::bundled();
  for (auto& e : reg.entries())
    for (auto& w : available()) {
      auto name = "apply/" + std::string(e.name) + "/" + w.label;
      std::string pass(e.name);
      benchmark::RegisterBenchmark(name.c_str(), [w, pass](benchmark::State& s) { run_registry(s, pass, *w.trace, w.copies); })
          ->Unit(benchmark::kMillisecond)
          ;
    }
  // What-ifs per second on ResNet-50: the bare replay, a duration-only scenario on an
  // overlay and the same scenario on a copied graph.
  benchmark::RegisterBenchmark("whatif/replay_into/resnet50", bare_replay)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("whatif/overlay/resnet50", overlay_scenario)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("whatif/copied/resnet50", copied_scenario)->Unit(benchmark::kMillisecond);
  // 1,000 what-ifs of data-parallel training: workers x bandwidth on the DLRM trace.
  benchmark::RegisterBenchmark("sweep/ddp_1000/dlrm", ddp_sweep)->Unit(benchmark::kMillisecond)->Iterations(3);
  // `daydream sensitivity` on ResNet-50: every layer, every kernel family.
  benchmark::RegisterBenchmark("sensitivity/layer/resnet50", [](benchmark::State& s) {
    sensitivity_profile(s, resnet, sensitivity::grouping::layer);
  })->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("sensitivity/class/resnet50", [](benchmark::State& s) {
    sensitivity_profile(s, resnet, sensitivity::grouping::family);
  })->Unit(benchmark::kMillisecond);
  return true;
}();

} // namespace
