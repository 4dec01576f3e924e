// Runs every single-GPU pass on the real traces: the graph stays valid and predictions move the right way; prints the speedup table.
// SPDX-License-Identifier: MIT
#include <daydream/graph.hpp>
#include <daydream/io/kineto.hpp>
#include <daydream/iteration.hpp>
#include <daydream/pass.hpp>
#include <daydream/replay.hpp>
#include <daydream/validate.hpp>
#include <daydream/passes/amp.hpp>
#include <daydream/passes/compile.hpp>
#include <daydream/passes/cuda_graphs.hpp>
#include <daydream/passes/fused_adam.hpp>
#include <daydream/passes/gist.hpp>
#include <daydream/passes/grad_accum.hpp>
#include <daydream/select.hpp>
#include <daydream/semantics/kernel_classifier.hpp>
#include <daydream/semantics/kernel_family.hpp>
#include <daydream/semantics/memory.hpp>
#include <daydream/passes/recompute.hpp>
#include <daydream/passes/reconstruct_bn.hpp>
#include <daydream/passes/substitute.hpp>
#include <daydream/passes/vdnn.hpp>

#include <doctest/doctest.h>
#include <support/corpus.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <iostream>
#include <string>
#include <vector>

using namespace daydream;
using namespace daydream::passes;

namespace {

struct trace_case {
  const char* label; ///< the row of the table
  const char* path;  ///< a bundled trace: under tests/data or examples/traces
};

// Training traces first (single GPU, then one rank of a multi-GPU job), then inference.
const trace_case traces[] = {
    {"small linear model, GP100", "hta_small_train_gp100/step_based_trace_2543932.json.gz"},
    {"ResNet-18, RTX 2080 Ti", "param_resnet18_rtx2080ti/resnet_kineto.iterations1-6.json.gz"},
    {"MLP, RTX 2080 Ti", "param_linear_rtx2080ti/linear_kineto.iterations1-6.json.gz"},
    {"ResNet-50 (DDP, 1 GPU), V100", "resnet50_v100.json.gz"},
    {"mini model, MI250 (ROCm)", "hta_amd_mi250_minitoy/mi250_minitoy_train_ROCm6_2_kineto.json.gz"},
    {"DLRM rank 0 of 8, V100", "dlrm_v100_rank0.json.gz"},
    {"recsys rank 3 of 8, A100", "hta_recsys_a100_8rank/control.steps1009-1013.json.gz"},
    {"recsys rank 1 of 2, V100", "hta_recsys_v100_2rank/test.steps1009-1013.json.gz"},
    {"BERT-small inference, H100", "tracelens_h100_inference/gaunernst_bert-small-uncased__1016001.json.gz"},
};

/// How a pass must move the prediction.
enum class expect { faster, slower, any };

struct pass_case {
  const char* name;
  std::function<bool(const graph&)> applicable;
  std::function<pass_report(graph&)> run; ///< applies the pass transactionally
  std::function<replay_result(const graph&)> replay;
  expect time;
  bool saves_memory;
  /// The pass changes only how GPU work is launched: n/a where the steady-state
  /// iterations launch none (their period is then the CPU's, which the pass leaves).
  bool needs_gpu_work = false;
};

template <class Pass> pass_case make(const char* name, Pass p, expect time, bool saves_memory) {
  return {name, [](const graph& g) { return Pass::applicable(g); },
          [p](graph& g) {
            pass_report rep;
            apply(g, [&](graph& gg) { rep = p(gg); });
            return rep;
          },
          [](const graph& g) { return replay(g, pass_policy_t<Pass>{}); }, time, saves_memory};
}

std::vector<pass_case> pass_cases() {
  return {
      // Faster where the GPU bounds the step; slower where the CPU does (autocast's casts).
      make("amp", amp{}, expect::any, true),
      make("fused_adam", fused_adam{}, expect::faster, false),
      make("reconstruct_bn", reconstruct_bn{}, expect::faster, false),
      make("gist", gist{}, expect::slower, true),
      make("vdnn", vdnn{}, expect::slower, true),
      // Each batch norm fused with the ReLU after it, the fused kernel as long as the two
      // it replaces: what the saved launches and framework overhead give.
      make("substitute", substitute{.layers = std::string(substitute::default_fusion)}, expect::faster, false),
      make("recompute", recompute{}, expect::slower, true),
      make("grad_accum", grad_accum{}, expect::any, true),
      // Faster where launches bound the step; a GPU-bound step can lose the graph launch's
      // own cost.
      [] {
        auto c = make("cuda_graphs", cuda_graphs{}, expect::any, false);
        c.needs_gpu_work = true;
        return c;
      }(),
      // Shorter kernels and fewer CPU calls: never slower.
      make("compile", compile{}, expect::faster, false),
  };
}

/// The steady-state iteration time of a replay: the mean distance between the ends of
/// consecutive iterations over `its` (the trace's steady-state iterations), measured
/// from the end of the iteration before the first of them. Ends, not starts: a pass
/// that frees the CPU lets the next iteration's first CPU task start earlier without the
/// GPU finishing any sooner, which moves the starts but not the period. With no earlier
/// iteration, the mean duration (iteration_spans) of `its`.
time_ns steady_period(const graph& g, const replay_result& r, const std::vector<std::int32_t>& its) {
  const auto spans = iteration_spans(g, r);
  auto at = [&](std::int32_t i) -> const iteration_span* {
    for (auto& s : spans)
      if (s.iteration == i) return &s;
    return nullptr;
  };
  const auto* before = at(its.front() - 1);
  const auto* last = at(its.back());
  // An iteration is done when its work and all the work before it is: the latest end of
  // it and every earlier iteration (a pass that lets the CPU run ahead can end a step's
  // CPU work before the GPU work of the one before it).
  auto done = [&](const iteration_span* s) {
    time_ns t = s->last_end;
    for (auto& o : spans)
      if (o.iteration <= s->iteration) t = std::max(t, o.last_end);
    return t;
  };
  if (before && last) return (done(last) - done(before)) / time_ns(its.size());
  time_ns sum = 0;
  std::int64_t n = 0;
  for (auto i : its)
    if (auto* s = at(i)) { sum += s->duration(); ++n; }
  return n ? sum / n : -1;
}

std::string ratio(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fx", x);
  return buf;
}

} // namespace

// The table in docs/passes.md is this test's output:
//   build/tests/passes/test_passes --test-case='every single-GPU pass runs on every real trace*' |
//     sed -n '/^Predicted/,$p'
TEST_CASE("every single-GPU pass runs on every real trace and keeps the graph valid and moves "
          "the prediction the physically right way (prints the table of predicted speedups)") {
  const auto cases = pass_cases();
  std::string table = "| trace | iteration |";
  std::string rule = "|---|---:|";
  for (auto& pc : cases) {
    table += std::string(" `") + pc.name + "` |";
    rule += "---:|";
  }
  table += "\n" + rule + "\n";
  std::string memory = "| trace | peak activation memory |";
  std::string mrule = "|---|---:|";
  for (auto& pc : cases)
    if (pc.saves_memory) { memory += std::string(" `") + pc.name + "` |"; mrule += "---:|"; }
  memory += "\n" + mrule + "\n";

  for (auto& tc : traces) {
    const auto path = daydream::testing::bundled(tc.path); // throws (fails) when missing
    INFO("trace: " << std::string(tc.path));
    auto t = io::load_kineto(path);
    if (!has_memory_accounting(t.g)) estimate_activation_memory(t.g);
    const bool memory_model = has_memory_accounting(t.g);
    const auto its = t.steady_state_iterations();
    REQUIRE_FALSE(its.empty());
    const auto base_r = replay(t.g);
    const auto base = steady_period(t.g, base_r, its);
    REQUIRE(base > 0);
    bool steady_gpu_work = false;
    for (auto x : tasks(t.g))
      if (!t.g.is<cpu_task>(x) && std::find(its.begin(), its.end(), t.g.iteration(x)) != its.end())
        steady_gpu_work = true;
    std::string row = std::string("| ") + tc.label + " | " + format_time(base) + " |";
    std::string mrow = std::string("| ") + tc.label + " | " +
                       (memory_model ? format_bytes(double(base_r.peak_memory)) : "no shapes") + " |";
    for (auto& pc : cases) {
      INFO("pass: " << std::string(pc.name));
      const bool applicable = pc.applicable(t.g) && (steady_gpu_work || !pc.needs_gpu_work);
      graph g = t.g;
      pass_report rep;
      REQUIRE_NOTHROW(rep = pc.run(g));
      CHECK_NOTHROW(check_invariants(g));
      const auto r = pc.replay(g);
      CHECK(r.tasks == g.size());
      const auto pred = steady_period(g, r, its);
      if (!applicable) {
        // The pass says it makes no sense here (no batch norm, no backward, no shapes):
        // daydream-whatif would not run it. It must still leave a valid graph.
        row += " n/a |";
        if (pc.saves_memory) mrow += " n/a |";
        continue;
      }
      REQUIRE(pred > 0);
      // A list schedule can move by a few nanoseconds either way when durations change
      // (and the integer mean rounds): 0.1% of slack.
      if (pc.time == expect::faster) CHECK(double(pred) <= double(base) * 1.001);
      if (pc.time == expect::slower) CHECK(double(pred) >= double(base) * 0.999);
      if (pc.saves_memory && memory_model) CHECK(r.peak_memory <= base_r.peak_memory);
      row += " " + ratio(double(base) / double(pred)) + " |";
      if (pc.saves_memory)
        mrow += " " + (memory_model && base_r.peak_memory > 0
                           ? ratio(double(r.peak_memory) / double(base_r.peak_memory))
                           : std::string("-")) + " |";
    }
    table += row + "\n";
    memory += mrow + "\n";
  }
  std::cout << "\nPredicted speedup (baseline iteration time / predicted iteration time):\n\n"
            << table << "\nPredicted peak activation memory (relative to the baseline):\n\n"
            << memory << std::flush;
}

TEST_CASE("on recorded runs with [memory] events, passes on stashed activations lower the peak by at most what the "
          "layers held, and fusions never raise it") {
  for (const char* rel : {"ground_truth/h100-80gb-hbm3/resnet50_fp32.json.gz",
                          "ground_truth/h100-80gb-hbm3/gpt2_bf16.json.gz"}) {
    const std::string name = rel;
    CAPTURE(name);
    auto t = io::load_kineto(daydream::testing::bundled(rel));
    REQUIRE(has_memory_accounting(t.g));
    const auto base = replay(t.g).peak_memory;
    // What the layers hold, per iteration: never more than the step's own peak (the tensor
    // sizes said 8.4 GB for ResNet-50's 5.9 GB step).
    std::map<std::int32_t, std::uint64_t> held;
    for (auto& l : layer_instances(t.g)) {
      CHECK(l.stash_on_cpu == (l.stash_measured > 0));
      if (l.stashes()) held[l.iteration] += l.stash();
    }
    std::uint64_t most = 0;
    for (auto& [it, b] : held) most = std::max(most, b);
    CHECK(most > 0);
    CHECK(double(most) <= double(base) * 1.1);
    auto peak_after = [&](auto pass) {
      auto g = t.g;
      apply(g, pass);
      return replay(g, policy_of(pass)).peak_memory;
    };
    for (const auto& run : {std::pair{"vdnn", peak_after(vdnn{})}, std::pair{"gist", peak_after(gist{})},
                            std::pair{"recompute", peak_after(recompute{})}}) {
      const std::string label = run.first;
      CAPTURE(label);
      CHECK(run.second < base);
      CHECK(double(run.second) >= double(base) - double(most) - 1);
    }
    CHECK(peak_after(reconstruct_bn{}) <= base);
  }
}

TEST_CASE("compile on eager GPT-2 fuses its pointwise chains, and leaves the torch.compile'd run of it alone") {
  for (const char* dir : {"ground_truth/h100-80gb-hbm3/", "ground_truth/h200/"}) {
    const std::string eager = std::string(dir) + "gpt2_bf16.json.gz";
    const std::string compiled = std::string(dir) + "gpt2_compile.json.gz";
    CAPTURE(eager);
    auto t = io::load_kineto(daydream::testing::bundled(eager));
    const auto base = replay(t.g).makespan;
    std::size_t gemms = 0;
    time_ns gemm_time = 0;
    auto gemm_work = [&](const graph& g) {
      gemms = 0;
      gemm_time = 0;
      for (auto k : tasks<gpu_kernel>(g))
        if (family_of_kernel(g.name(k)) == kernel_family::gemm) { ++gemms; gemm_time += g.duration(k); }
      return std::pair(gemms, gemm_time);
    };
    const auto gemm_before = gemm_work(t.g);
    auto g = t.g;
    pass_report rep;
    apply(g, [&](graph& gg) { rep = compile{}(gg); });
    REQUIRE(rep.applied);
    CHECK_NOTHROW(check_invariants(g));
    // Every transformer block's GELU forward (9 kernels) and backward chain is a run.
    CHECK(std::stoi(std::string(rep.value("fused kernels (runs)"))) > 24 * 2);
    CHECK(rep.value("bandwidth of the fused kernels").find("measured over") != std::string_view::npos);
    CHECK(gemm_work(g) == gemm_before); // GEMMs stay as traced
    const auto after = replay(g).makespan;
    CHECK(after < base);
    auto c = io::load_kineto(daydream::testing::bundled(compiled));
    CHECK(compile::not_applicable(c.g).find("the trace already runs") == 0);
    // Inductor's kernels are classified: pointwise and reductions memory bound, none unknown.
    const auto classifier = kernel_classifier::defaults();
    std::size_t triton = 0;
    for (auto k : tasks<gpu_kernel>(c.g)) {
      const auto n = c.g.name(k);
      if (n.substr(0, 11) != "triton_poi_" && n.substr(0, 11) != "triton_red_" && n.substr(0, 11) != "triton_per_")
        continue;
      ++triton;
      CHECK(classifier.classify(n) == kernel_class::memory_bound);
    }
    CHECK(triton > 100);
  }
}
