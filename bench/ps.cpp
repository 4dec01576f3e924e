// Benchmarks ps::simulate_training: simulated steps per second on the ResNet-50 trace's steps, W = 1..64 workers.
// SPDX-License-Identifier: MIT
#include <daydream/ps/config.hpp>
#include <daydream/ps/model.hpp>
#include <daydream/ps/simulate.hpp>
#include <daydream/ps/steps.hpp>
#if DAYDREAM_BENCH_HAVE_IO
#include <daydream/io/kineto.hpp>
#endif

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

namespace {

namespace ps = daydream::ps;

// The steps of the bundled ResNet-50 trace with a 102.2 MB model (161 tensors, three
// steady-state steps). Without daydream::io: three synthetic steps of the same shape
// (a chain of 323 computations, 161 tensors each way).
const ps::model& resnet() {
  static const ps::model m = [] {
#if DAYDREAM_BENCH_HAVE_IO
    auto t = daydream::io::load_kineto(DAYDREAM_SOURCE_DIR "/examples/traces/resnet50_v100.json.gz");
    ps::model_options o;
    o.model_bytes = 102.2e6;
    return ps::extract_steps(t.g, t.steady_state_iterations(), o);
#else
    ps::model out;
    const std::uint32_t n = 161;
    for (std::uint32_t i = 0; i < n; ++i) out.tensors.push_back({"t", 102.2e6 / n, n - 1 - i, i});
    for (int k = 0; k < 3; ++k) {
      ps::step_template st;
      for (std::uint32_t s = 0; s < 2 * n + 1; ++s)
        st.ops.push_back({ps::op_resource::worker, 85e6 / (2 * n + 1) * (1 + 0.01 * k), 0, 0,
                          s ? std::vector<std::uint32_t>{s - 1} : std::vector<std::uint32_t>{}});
      for (std::uint32_t i = 0; i < n; ++i) {
        auto d = static_cast<std::uint32_t>(st.ops.size());
        st.ops.push_back({ps::op_resource::downlink, 0, 102.2e6 / n, i, {}});
        st.ops[i].after.push_back(d);
        st.ops.push_back({ps::op_resource::uplink, 0, 102.2e6 / n, i, {2 * n - i}});
        st.ops.push_back({ps::op_resource::server, 12e3, 0, i, {d + 1}});
      }
      out.steps.push_back(std::move(st));
    }
    return out;
#endif
  }();
  return m;
}

// Arguments: workers, flow control (1) or TicTac without it (0). 1,000 steps per worker;
// the counter steps_per_s is simulated steps (all workers) per second of wall time.
void BM_simulate(benchmark::State& state) {
  const auto& m = resnet();
  ps::config c;
  c.workers = static_cast<std::uint32_t>(state.range(0));
  c.flow_control = state.range(1) != 0;
  c.order = c.flow_control ? ps::stream_order::trace : ps::stream_order::tictac;
  c.steps = 1000;
  c.warmup = 50;
  c.server_of = ps::assign_servers(m.tensors, 1);
  std::uint64_t events = 0;
  double predicted = 0;
  for (auto _ : state) {
    auto r = ps::simulate_training(m.steps, m.tensors, c);
    events = r.events;
    predicted = r.steps_per_s;
    benchmark::DoNotOptimize(r.steps_per_s);
  }
  // The simulation stops when the first worker has run its 1,000 steps: about W x 1,000.
  state.counters["steps_per_s"] = benchmark::Counter(double(c.workers) * double(c.steps), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["events"] = double(events);
  state.counters["predicted_steps_per_s"] = predicted;
}
BENCHMARK(BM_simulate)->ArgsProduct({{1, 2, 4, 8, 16, 32, 64}, {1, 0}})->Unit(benchmark::kMillisecond);

} // namespace
