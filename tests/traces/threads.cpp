// Tests that the ingest builds the same graph whatever its number of threads: every bundled trace and a generated one.
// SPDX-License-Identifier: MIT
#include <daydream/graph.hpp>
#include <daydream/io/kineto.hpp>
#include <io/trace_text.hpp>
#include <support/corpus.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

using namespace daydream;

namespace {

/// "" when `a` and `b` are the same graph, field by field (name and layer ids included,
/// not only their text: the interning order is part of what must not change), payload by
/// payload and dependency by dependency in list order; else the first difference.
std::string graph_difference(const graph& a, const graph& b) {
  if (a.id_bound() != b.id_bound()) return "id bound " + std::to_string(a.id_bound()) + " vs " + std::to_string(b.id_bound());
  if (a.size() != b.size()) return "task count";
  if (a.dependency_count() != b.dependency_count()) return "dependency count";
  if (a.resource_count() != b.resource_count()) return "resource count";
  for (std::size_t r = 0; r < a.resource_count(); ++r) {
    auto& x = a.resource_at(resource_id(r));
    auto& y = b.resource_at(resource_id(r));
    if (x.name != y.name || x.kind != y.kind || x.share != y.share || x.node != y.node || x.device != y.device)
      return "resource #" + std::to_string(r);
  }
  for (task_id t = 0; t < a.id_bound(); ++t) {
    const auto at = "task #" + std::to_string(t) + " (" + std::string(a.name(t)) + "): ";
    if (a.contains(t) != b.contains(t)) return at + "alive";
    if (a.kind_name(t) != b.kind_name(t)) return at + "kind";
    if (a.name_id_of(t) != b.name_id_of(t) || a.name(t) != b.name(t)) return at + "name";
    if (a.layer_id(t) != b.layer_id(t) || a.layer(t) != b.layer(t)) return at + "layer";
    if (a.duration(t) != b.duration(t) || a.gap(t) != b.gap(t) || a.trace_start(t) != b.trace_start(t))
      return at + "times";
    if (a.resource_of(t) != b.resource_of(t)) return at + "resource";
    if (a.phase_of(t) != b.phase_of(t) || a.iteration(t) != b.iteration(t)) return at + "phase or iteration";
    if (a.priority(t) != b.priority(t) || a.mem_delta(t) != b.mem_delta(t)) return at + "priority or memory";
    bool same_payload = false;
    a.visit(t, [&](auto, const auto& p) {
      using K = std::remove_cvref_t<decltype(p)>;
      if (auto other = b.template as<K>(t)) same_payload = p == b.payload(other);
    });
    if (!same_payload) return at + "payload";
    std::vector<dependency> da, db;
    for (auto d : a.successors(t)) da.push_back(d);
    for (auto d : b.successors(t)) db.push_back(d);
    if (da.size() != db.size()) return at + "successor count";
    for (std::size_t k = 0; k < da.size(); ++k)
      if (da[k].from != db[k].from || da[k].to != db[k].to || da[k].kind != db[k].kind)
        return at + "successor " + std::to_string(k);
  }
  return "";
}

/// "" when the two loads agree on the graph and on what the report and the iterations say.
std::string trace_difference(const io::kineto_trace& a, const io::kineto_trace& b) {
  if (auto g = graph_difference(a.g, b.g); !g.empty()) return g;
  if (a.report.events != b.report.events || a.report.in_graph != b.report.in_graph ||
      a.report.ignored != b.report.ignored || a.report.unlinked_gpu_ops != b.report.unlinked_gpu_ops ||
      a.report.warnings != b.report.warnings)
    return "report";
  if (a.iterations.size() != b.iterations.size()) return "iteration count";
  for (std::size_t k = 0; k < a.iterations.size(); ++k) {
    auto& x = a.iterations[k];
    auto& y = b.iterations[k];
    if (x.number != y.number || x.trace_begin != y.trace_begin || x.trace_end != y.trace_end || x.marker != y.marker ||
        a.measured(x.number) != b.measured(y.number))
      return "iteration " + std::to_string(x.number);
  }
  if (a.info.begin != b.info.begin || a.info.end != b.info.end || a.info.memory_peak != b.info.memory_peak ||
      a.info.memory_at_start != b.info.memory_at_start)
    return "info";
  return "";
}

io::kineto_trace load_with(const auto& source, unsigned threads, std::size_t window = 0) {
  io::ingest_options o;
  o.threads = threads;
  o.window_bytes = window;
  if constexpr (std::is_convertible_v<decltype(source), std::string_view>)
    return io::parse_kineto(source, "generated", o);
  else
    return io::load_kineto(source, o);
}

/// A trace of `procs` processes, each with a main thread and an autograd thread that
/// launch kernels and copies onto two streams of their GPU, over `steps` steps: nested
/// operators and modules, launch flows, forward-backward flows, memory events, a
/// device synchronization at the end of each step.
std::string generated_trace(int procs, int steps) {
  namespace tt = daydream::testing::trace_text;
  std::string ev;
  auto add = [&](const std::string& e) { ev += (ev.empty() ? "" : ",\n") + e; };
  auto us = [](long long v) { return std::to_string(v); };
  int c = 1, flow = 1;
  for (int p = 0; p < procs; ++p) {
    const int pid = 100 + p, main = 1000 + p, bwd = 2000 + p, dev = p;
    long long t = 1000, gpu = 1000;
    auto launch = [&](int tid, long long ts, int stream, bool kernel) {
      add(tt::X("cuda_runtime", kernel ? "cudaLaunchKernel" : "cudaMemcpyAsync", pid, tid, us(ts), "4", tt::corr(c)));
      gpu = std::max(gpu, ts + 6);
      const std::string args = "{\"device\": " + std::to_string(dev) + ", \"stream\": " + std::to_string(stream) +
                               ", \"correlation\": " + std::to_string(c) + "}";
      add(tt::X(kernel ? "kernel" : "gpu_memcpy", kernel ? "volta_sgemm_128x64_nn" : "Memcpy HtoD (Pageable -> Device)",
                dev, stream, us(gpu), "9", args));
      add(tt::flow('s', "ac2g", c, pid, tid, us(ts)));
      add(tt::flow('f', "ac2g", c, dev, stream, us(gpu)));
      gpu += 10;
      ++c;
    };
    for (int s = 0; s < steps; ++s) {
      const long long step = t;
      std::vector<int> flows;
      t += 5;
      for (int l = 0; l < 4; ++l) {
        add(tt::X("python_function", "nn.Module: Linear_" + std::to_string(l), pid, main, us(t), "40"));
        add(tt::X("cpu_op", "aten::linear", pid, main, us(t + 2), "36",
                  "{\"Input Dims\": [[32, 64], [64, 64]], \"Input type\": [\"float\", \"float\"]}"));
        add(tt::flow('s', "fwdbwd", flow, pid, main, us(t + 2)));
        flows.push_back(flow++);
        add(tt::memory(pid, main, us(t + 3), 4096, 4096 * (l + 1), 1));
        launch(main, t + 10, 7, true);
        launch(main, t + 20, 8 + (l % 2), l % 2 == 0);
        t += 45;
      }
      long long b = t;
      add(tt::X("user_annotation", "## backward ##", pid, main, us(t), "200"));
      for (int l = 3; l >= 0; --l) {
        add(tt::X("cpu_op", "autograd::engine::evaluate_function: AddmmBackward0", pid, bwd, us(b + 5), "40"));
        add(tt::X("cpu_op", "AddmmBackward0", pid, bwd, us(b + 6), "36"));
        add(tt::flow('f', "fwdbwd", flows[std::size_t(l)], pid, bwd, us(b + 6)));
        launch(bwd, b + 15, 7, true);
        b += 45;
      }
      t = std::max(t + 205, gpu + 2);
      add(tt::X("cuda_runtime", "cudaDeviceSynchronize", pid, main, us(t), us(std::max<long long>(gpu - t, 0) + 3),
                tt::corr(c++)));
      t += std::max<long long>(gpu - t, 0) + 10;
      add(tt::X("user_annotation", "ProfilerStep#" + std::to_string(s + 1), pid, main, us(step), us(t - step)));
      t += 20;
    }
  }
  return "{\"traceEvents\": [\n" + ev + "\n]}";
}

} // namespace

TEST_CASE("the graph built from a generated trace is the same whatever the threads") {
  const auto text = generated_trace(3, 4);
  const auto one = load_with(text, 1);
  REQUIRE(one.g.size() > 300);
  REQUIRE(one.iterations.size() == 4);
  // several CPU threads and streams: the stages have work to share
  std::size_t threads = 0, streams = 0;
  for (std::size_t r = 0; r < one.g.resource_count(); ++r) {
    threads += one.g.resource_at(resource_id(r)).kind == resource_kind::cpu_thread;
    streams += one.g.resource_at(resource_id(r)).kind == resource_kind::gpu_stream;
  }
  CHECK(threads == 6);
  CHECK(streams == 9);
  for (unsigned n : {2u, 3u, 8u}) {
    CAPTURE(n);
    CHECK(trace_difference(one, load_with(text, n)) == "");
    CHECK(trace_difference(one, load_with(text, n, 4096)) == ""); // small windows too
  }
}

TEST_CASE("the graph built from every trace of the corpus is the same whatever the threads") {
  // The bundled traces, and the extra ones when present (alone in a second run with
  // DAYDREAM_SKIP_BUNDLED=1).
  const auto traces = testing::corpus();
  REQUIRE(!traces.empty());
  for (auto& t : traces) {
    CAPTURE(t.name);
    const auto one = load_with(t.file, 1);
    for (unsigned n : {2u, 3u, 8u}) {
      CAPTURE(n);
      CHECK(trace_difference(one, load_with(t.file, n)) == "");
    }
  }
}
