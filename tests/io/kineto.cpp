// Tests io::load_kineto / parse_kineto on small hand-written traces with hand-computed expectations.
// SPDX-License-Identifier: MIT
#include <daydream/analysis.hpp>
#include <daydream/io/detail/decimal.hpp>
#include <daydream/io/detail/tensor_bytes.hpp>
#include <daydream/io/job.hpp>
#include <daydream/io/kineto.hpp>
#include <daydream/iteration.hpp>
#include <daydream/replay.hpp>
#include <daydream/update.hpp>
#include <daydream/validate.hpp>

#include "trace_text.hpp"

#include <support/compare.hpp>
#include <support/corpus.hpp>
#include <support/temp_dir.hpp>

#include <doctest/doctest.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>


using namespace daydream;
namespace dio = daydream::io;
using namespace daydream::testing::trace_text;

namespace {

/// The n-th task (in id order) named `name`.
task_id find(const graph& g, std::string_view name, int nth = 0) {
  task_id found = no_task;
  g.for_each_task([&](task_id t) {
    if (found == no_task && g.name(t) == name && nth-- == 0) found = t;
  });
  REQUIRE_MESSAGE(found != no_task, "no task named " << name);
  return found;
}
/// The task named `name` whose trace start is `start_us` microseconds.
task_id find_at(const graph& g, std::string_view name, time_ns start_us) {
  task_id found = no_task;
  g.for_each_task([&](task_id t) {
    if (g.name(t) == name && g.trace_start(t) == start_us * 1000) found = t;
  });
  REQUIRE_MESSAGE(found != no_task, "no task " << name << " at " << start_us);
  return found;
}

void check_accounting(const dio::kineto_trace& t) {
  CHECK(t.report.in_graph + t.report.ignored_total() == t.report.events);
}

std::string error_of(std::string_view json, std::string_view name = "test.json") {
  try {
    dio::parse_kineto(json, name);
  } catch (const daydream::error& e) {
    return e.what();
  }
  return "";
}

using temp_dir = daydream::testing::temp_dir;

} // namespace

// ---------------------------------------------------------------------------------- numbers

TEST_CASE("microsecond timestamps convert to nanoseconds exactly, from their decimal text") {
  using dio::detail::number_status;
  using dio::detail::us_text_to_ns;
  CHECK(us_text_to_ns("1712195495519689.047").value == 1712195495519689047LL);
  CHECK(us_text_to_ns("1712195495519689.047").status == number_status::ok);
  CHECK(us_text_to_ns("12").value == 12'000);
  CHECK(us_text_to_ns("0.001").value == 1);
  CHECK(us_text_to_ns("1.2345").value == 1'235);  // half a nanosecond rounds away from zero
  CHECK(us_text_to_ns("1.2344").value == 1'234);
  CHECK(us_text_to_ns("-3.5e2").value == -350'000);
  CHECK(us_text_to_ns("1e-3").value == 1);
  CHECK(us_text_to_ns("2.5E+1 ").value == 25'000);
  CHECK(us_text_to_ns("0").value == 0);
  CHECK(us_text_to_ns("NaN").status == number_status::not_finite);
  CHECK(us_text_to_ns("-Infinity").status == number_status::not_finite);
  CHECK(us_text_to_ns("abc").status == number_status::not_a_number);
  CHECK(us_text_to_ns("1.2.3").status == number_status::not_a_number);
  CHECK(us_text_to_ns("99999999999999999").status == number_status::out_of_range);
}

TEST_CASE("tensor bytes come from Input Dims times the size of each Input type") {
  using dio::detail::dtype_size;
  using dio::detail::input_bytes;
  CHECK(dtype_size("float") == 4);
  CHECK(dtype_size("c10::Half") == 2);
  CHECK(dtype_size("c10::BFloat16") == 2);
  CHECK(dtype_size("long int") == 8);
  CHECK(dtype_size("BFloat16") == 2);
  CHECK(dtype_size("Float") == 4);
  CHECK(dtype_size("Scalar") == 0);
  CHECK(input_bytes("[[256, 512]]", "[\"float\"]") == 524'288);
  CHECK(input_bytes("[[2, 3], [], [4]]", "[\"float\", \"Scalar\", \"long int\"]") == 6 * 4 + 4 * 8);
  CHECK(input_bytes("[[]]", "[\"float\"]") == 4);                    // a 0-dim tensor
  CHECK(input_bytes("[[[2], [3]]]", "[\"c10::Half\"]") == 10);       // a tensor list
  CHECK(input_bytes("[[]]", "[\"\"]") == 0);
  CHECK(input_bytes("[[1, 2]", "[\"float\"]") == 0);                 // malformed
  CHECK(input_bytes("", "") == 0);
}

// ---------------------------------------------------------------------------------- graph

// Two iterations on one thread and one stream:
//
//   thread 1  |PS#1 |mm|launch|mm|PS#1|relu|PS#1 ... |PS#2|add|launch|add|PS#2|cudaDeviceSynchronize|PS#2|
//   stream 7             gemm [135,185)                          add_kernel [218,280)
//
// The sync waits for add_kernel: its waiting part is a dependency, 5 us remain.
static std::string two_steps() {
  return trace({
      X("user_annotation", "ProfilerStep#1", 1, 1, "100", "100"),
      X("cpu_op", "aten::mm", 1, 1, "110", "30", R"J({"Input Dims": [[2, 3], [3, 4]], "Input type": ["float", "float"]})J"),
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "120", "10", corr(7)),
      X("kernel", "gemm", 0, 7, "135", "50", gpu(7)),
      X("cpu_op", "aten::relu", 1, 1, "150", "10"),
      X("user_annotation", "ProfilerStep#2", 1, 1, "200", "100"),
      X("cpu_op", "aten::add", 1, 1, "204", "14"),
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "205", "10", corr(9)),
      X("kernel", "add_kernel", 0, 7, "218", "62", gpu(9)),
      X("cuda_runtime", "cudaDeviceSynchronize", 1, 1, "220", "65", corr(10)),
      flow('s', "ac2g", 7, 1, 1, "120"),
      flow('f', "ac2g", 7, 0, 7, "135"),
      flow('f', "ac2g", 99, 1, 1, "220"),
      R"J({"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "python"}})J",
      R"J({"name": "thread_name", "ph": "M", "pid": 0, "tid": 7, "args": {"name": "stream 7"}})J",
      R"J({"ph": "X", "cat": "Trace", "ts": 90, "dur": 300, "pid": "Spans", "tid": "PyTorch Profiler", "name": "PyTorch Profiler (0)", "args": {}})J",
      X("gpu_user_annotation", "ProfilerStep#1", 0, 7, "135", "50"),
  }, R"J("schemaVersion": 1, "distributedInfo": {"rank": 3, "world_size": 8, "backend": "nccl"}, "deviceProperties": [{"id": 0, "name": "Tesla V100"}], )J");
}

TEST_CASE("a CPU thread is flattened into slices that cover its busy time, with gaps") {
  auto t = dio::parse_kineto(two_steps(), "two_steps");
  auto& g = t.g;
  check_invariants(g);
  // 1 origin marker + 14 slices + 2 kernels
  CHECK(g.size() == 17);
  auto mm0 = find_at(g, "aten::mm", 110), launch = find_at(g, "cudaLaunchKernel", 120);
  auto mm1 = find_at(g, "aten::mm", 130), ps = find_at(g, "ProfilerStep#1", 140);
  CHECK(g.duration(mm0) == 10'000);
  CHECK(g.duration(launch) == 10'000);
  CHECK(g.duration(mm1) == 10'000);
  CHECK(g.gap(mm1) == 0);
  CHECK(g.gap(find_at(g, "aten::relu", 150)) == 0);
  CHECK(g.gap(find_at(g, "aten::add", 215)) == 0);
  CHECK(g.gap(find_at(g, "ProfilerStep#2", 218)) == 0);
  // nesting survives as attributes
  auto h = g.as<cpu_task>(launch);
  REQUIRE(h);
  CHECK(g.payload(h).call == cpu_call::launch);
  CHECK(g.payload(h).correlation == 7);
  CHECK(g.str(g.payload(h).op) == "aten::mm");
  CHECK(g.payload(h).tensor_bytes == 72);
  CHECK(g.layer(launch) == "aten::mm#0");
  CHECK(g.layer(find_at(g, "aten::relu", 150)) == "aten::relu#0");
  CHECK(g.layer(find_at(g, "aten::add", 204)) == "aten::add#0");
  CHECK(g.layer(ps) == "");
  CHECK(g.phase_of(launch) == phase::forward);
  CHECK(g.phase_of(ps) == phase::other);
  CHECK(g.iteration(launch) == 1);
  CHECK(g.iteration(find_at(g, "aten::add", 204)) == 2);
  CHECK(g.payload(g.as<cpu_task>(find(g, "cudaDeviceSynchronize"))).call == cpu_call::sync);
  // GPU side
  auto gemm = find(g, "gemm"), addk = find(g, "add_kernel");
  CHECK(g.is<gpu_kernel>(gemm));
  CHECK(g.payload(g.as<gpu_kernel>(gemm)).stream == 7);
  CHECK(g.layer(gemm) == "aten::mm#0");
  CHECK(g.phase_of(gemm) == phase::forward);
  CHECK(g.iteration(gemm) == 1);
  CHECK(g.resource_at(g.resource_of(gemm)).kind == resource_kind::gpu_stream);
  CHECK(g.resource_at(g.resource_of(launch)).kind == resource_kind::cpu_thread);
  CHECK(g.resource_at(g.resource_of(launch)).node == 3);
  // dependencies
  CHECK(g.dependency_kind(launch, gemm) == dep_kind::launch);
  CHECK(g.dependency_kind(mm0, launch) == dep_kind::cpu_order);
  CHECK(g.dependency_kind(gemm, addk) == dep_kind::stream_order);
  auto sync = find(g, "cudaDeviceSynchronize");
  CHECK(g.dependency_kind(addk, sync) == dep_kind::sync);
  CHECK(g.duration(sync) == 5'000); // 285 - 280: the part after the kernel ended
  // metadata
  CHECK(t.info.rank == 3);
  CHECK(t.info.world_size == 8);
  CHECK(t.info.backend == "nccl");
  REQUIRE(t.info.gpus.size() == 1);
  CHECK(t.info.gpus[0] == "Tesla V100");
  CHECK(t.info.path == "two_steps");
}

TEST_CASE("the unmodified graph replays the trace; a faster GPU shortens the waiting sync") {
  auto t = dio::parse_kineto(two_steps(), "two_steps");
  REQUIRE(t.iterations.size() == 2);
  CHECK(t.iterations[0].marker == "ProfilerStep#1");
  CHECK(t.iterations[0].trace_begin == 100'000);
  CHECK(t.iterations[0].trace_end == 200'000);
  CHECK(t.measured(1) == 100'000);
  CHECK(t.measured(2) == 100'000);
  CHECK(t.measured(3) == -1);
  CHECK(t.default_iteration() == 2);
  auto r = replay(t.g);
  // replay time 0 is the trace's first event (100 us)
  CHECK(r.start[find_at(t.g, "aten::relu", 150)] == 50'000);
  CHECK(iteration_time(t.g, r, 1) == 100'000);
  // add_kernel starts when its launch returns (215, 3 us of launch latency are not kept),
  // so the sync and the rest of step 2 come 3 us early: 97 us instead of 100
  auto addk = find(t.g, "add_kernel");
  CHECK(r.start[addk] == 115'000);
  CHECK(r.end[find(t.g, "cudaDeviceSynchronize")] == 182'000);
  CHECK(iteration_time(t.g, r, 2) == 97'000);
  // a GPU twice as fast on add_kernel: the sync returns 31 us earlier
  auto g2 = t.g;
  scale_duration(g2, addk, 0.5);
  auto r2 = replay(g2);
  CHECK(r2.end[find(g2, "cudaDeviceSynchronize")] == 151'000);
  CHECK(iteration_time(g2, r2, 2) == 66'000);
}

TEST_CASE("every event is in the graph or counted by reason") {
  auto t = dio::parse_kineto(two_steps(), "two_steps");
  check_accounting(t);
  CHECK(t.report.events == 17);
  CHECK(t.report.in_graph == 12); // 8 CPU events, 2 kernels, the launch flow pair
  CHECK(t.report.ignored.at("metadata") == 2);
  CHECK(t.report.ignored.at("flow without partner") == 1);
  CHECK(t.report.ignored.at("profiler span (cat \"Trace\")") == 1);
  CHECK(t.report.ignored.at("gpu_user_annotation (the GPU-side span of a CPU annotation)") == 1);
  CHECK(t.report.unlinked_gpu_ops == 0);
}

TEST_CASE("merging contiguous slices shrinks the graph but not the replay") {
  auto json = trace({
      X("user_annotation", "ProfilerStep#1", 1, 1, "0", "100"),
      X("python_function", "nn.Module: Net_0", 1, 1, "1", "98"),
      X("python_function", "model.py(10): forward", 1, 1, "2", "96"),
      X("python_function", "nn.Module: Linear_0", 1, 1, "3", "50"),
      X("python_function", "functional.py(5): linear", 1, 1, "4", "48"),
      X("cpu_op", "aten::linear", 1, 1, "10", "30"),
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "20", "5", corr(1)),
      X("kernel", "k", 0, 7, "26", "40", gpu(1)),
      X("python_function", "model.py(11): relu", 1, 1, "60", "30"),
  });
  dio::ingest_options no_merge;
  no_merge.merge_slices = false;
  auto a = dio::parse_kineto(json, "merge");
  auto b = dio::parse_kineto(json, "merge", no_merge);
  CHECK(a.g.size() < b.g.size());
  auto ra = replay(a.g), rb = replay(b.g);
  CHECK(ra.makespan == rb.makespan);
  CHECK(iteration_time(a.g, ra, 1) == 100'000);
  CHECK(iteration_time(b.g, rb, 1) == 100'000);
  // layers come from the innermost nn.Module
  CHECK(a.g.layer(find(a.g, "cudaLaunchKernel")) == "Linear_0");
  CHECK(a.g.layer(find(a.g, "k")) == "Linear_0");
  CHECK(b.g.layer(find_at(b.g, "model.py(11): relu", 60)) == "Net_0");
  CHECK(b.g.phase_of(find_at(b.g, "model.py(11): relu", 60)) == phase::forward);
  // merged: forward()'s own time after Linear_0 (53..60), relu (60..90), forward() and
  // Net_0 again (90..99) are one slice
  auto merged = find_at(a.g, "model.py(10): forward", 53);
  CHECK(a.g.duration(merged) == 46'000);
  CHECK(a.g.layer(merged) == "Net_0");
  check_accounting(a);
  check_accounting(b);
}

// The backward pass runs on the autograd thread while the main thread waits in
// "## backward ##"; layers of backward work come from fwdbwd flows and sequence numbers.
static std::string backward_trace() {
  return trace({
      X("user_annotation", "ProfilerStep#5", 1, 1, "0", "1000"),
      X("cpu_op", "aten::linear", 1, 1, "10", "50",
        R"J({"Sequence number": 3, "Input Dims": [[4, 8], [16, 8], [16]], "Input type": ["float", "float", "float"]})J"),
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "20", "10", corr(1)),
      X("cpu_op", "aten::relu", 1, 1, "62", "8", R"J({"Sequence number": 4})J"),
      X("user_annotation", "## backward ##", 1, 1, "100", "400"),
      X("user_annotation", "Optimizer.step#SGD.step", 1, 1, "520", "40"),
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "530", "10", corr(3)),
      X("cpu_op", "autograd::engine::evaluate_function: LinearBackward0", 1, 2, "150", "150", R"J({"Sequence number": 3})J"),
      X("cpu_op", "LinearBackward0", 1, 2, "155", "135", R"J({"Sequence number": 3})J"),
      X("cuda_runtime", "cudaLaunchKernel", 1, 2, "160", "10", corr(2)),
      X("cpu_op", "autograd::engine::evaluate_function: ReluBackward0", 1, 2, "302", "16", R"J({"Sequence number": 4})J"),
      X("cpu_op", "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", 1, 2, "320", "100"),
      X("cpu_op", "torch::autograd::AccumulateGrad", 1, 2, "325", "85", R"J({"Input Dims": [[16, 8]], "Input type": ["float"]})J"),
      X("kernel", "k1", 0, 7, "35", "45", gpu(1)),
      X("kernel", "k2", 0, 7, "175", "75", gpu(2)),
      X("kernel", "k3", 0, 7, "545", "10", gpu(3)),
      flow('s', "fwdbwd", 1, 1, 1, "10"),
      flow('f', "fwdbwd", 1, 1, 2, "155"),
      memory(1, 1, "40", 1000, 5000, 1),
      memory(1, 1, "80", 100, 5100, 1),
      memory(1, 2, "330", 2000, 7100, 1),
      memory(1, 1, "550", -600, 6500, 1),
      memory(1, 1, "555", 64, 64, 0),
      memory(1, 1, "1005", -100, 6400, 1),
  });
}

TEST_CASE("pipeline schedules' annotations give phases: attn(F) forward, mlp(B) and mlp(W) backward") {
  // One step of a zero-bubble pipeline stage on one thread: the forward of attention, the
  // backward of the MLP's activations, then of its weights; each launches one kernel.
  auto t = dio::parse_kineto(trace({
      X("user_annotation", "ProfilerStep#1", 1, 1, "100", "100"),
      X("user_annotation", "attn(F)", 1, 1, "105", "20"),
      X("cpu_op", "aten::mm", 1, 1, "106", "15"),
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "110", "5", corr(1)),
      X("kernel", "gemm_f", 0, 7, "116", "10", gpu(1)),
      X("user_annotation", "mlp(B)", 1, 1, "130", "20"),
      X("cpu_op", "aten::mm", 1, 1, "131", "15"),
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "135", "5", corr(2)),
      X("kernel", "gemm_b", 0, 7, "141", "10", gpu(2)),
      X("user_annotation", "mlp(W)", 1, 1, "155", "20"),
      X("cpu_op", "aten::mm", 1, 1, "156", "15"),
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "160", "5", corr(3)),
      X("kernel", "gemm_w", 0, 7, "166", "10", gpu(3)),
      X("user_annotation", "sample(X)", 1, 1, "180", "10"),
      X("cpu_op", "aten::add", 1, 1, "181", "5"),
  }), "pipeline");
  auto& g = t.g;
  CHECK(g.phase_of(find(g, "gemm_f")) == phase::forward);
  CHECK(g.phase_of(find_at(g, "cudaLaunchKernel", 110)) == phase::forward);
  CHECK(g.phase_of(find(g, "gemm_b")) == phase::backward);
  CHECK(g.phase_of(find_at(g, "aten::mm", 131)) == phase::backward);
  CHECK(g.phase_of(find(g, "gemm_w")) == phase::backward);
  // Any other letter in parentheses is no pass: the operator decides (forward).
  CHECK(g.phase_of(find_at(g, "aten::add", 181)) == phase::forward);
}

TEST_CASE("the autograd thread is anchored to the main thread, which waits for it to finish") {
  auto t = dio::parse_kineto(backward_trace(), "backward");
  auto& g = t.g;
  check_invariants(g);
  check_accounting(t);
  auto first = find_at(g, "autograd::engine::evaluate_function: LinearBackward0", 150);
  // the main thread's "## backward ##" slice is cut where the backward pass starts ...
  auto before = find_at(g, "## backward ##", 100), wait = find_at(g, "## backward ##", 150);
  CHECK(g.duration(before) == 50'000);
  CHECK(g.dependency_kind(before, first) == dep_kind::control);
  // ... and resumes when its last slice ends (420): 80 us remain after the wait
  auto last = find_at(g, "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", 410);
  CHECK(g.dependency_kind(last, wait) == dep_kind::control);
  CHECK(g.duration(wait) == 80'000);
  auto r = replay(g);
  CHECK(r.start[first] == 150'000);
  CHECK(r.start[wait] == 420'000);
  CHECK(iteration_time(g, r, 5) == 1'000'000);
  CHECK(t.measured(5) == 1'000'000);
  // a faster backward thread lets the main thread resume earlier
  auto g2 = g;
  set_duration(g2, find_at(g2, "torch::autograd::AccumulateGrad", 330), 0);
  auto r2 = replay(g2);
  CHECK(r2.start[find_at(g2, "## backward ##", 150)] == 340'000);
  CHECK(iteration_time(g2, r2, 5) == 920'000);
}

TEST_CASE("backward work maps to its forward layer through fwdbwd flows and sequence numbers") {
  auto t = dio::parse_kineto(backward_trace(), "backward");
  auto& g = t.g;
  CHECK(g.layer(find_at(g, "aten::linear", 10)) == "aten::linear#0");
  // flow: LinearBackward0 -> aten::linear
  CHECK(g.layer(find_at(g, "cudaLaunchKernel", 160)) == "aten::linear#0");
  CHECK(g.layer(find(g, "k2")) == "aten::linear#0");
  CHECK(g.phase_of(find(g, "k2")) == phase::backward);
  // sequence number 4: ReluBackward0 -> aten::relu
  CHECK(g.layer(find_at(g, "autograd::engine::evaluate_function: ReluBackward0", 302)) == "aten::relu#0");
  // AccumulateGrad takes the layer of the backward op before it, and its gradient size
  auto acc = find_at(g, "torch::autograd::AccumulateGrad", 325);
  CHECK(g.layer(acc) == "aten::relu#0");
  CHECK(g.phase_of(acc) == phase::backward);
  CHECK(g.payload(g.as<cpu_task>(acc)).tensor_bytes == 512);
  CHECK(g.payload(g.as<cpu_task>(find_at(g, "aten::linear", 10))).tensor_bytes == 704);
  // phases
  CHECK(g.phase_of(find_at(g, "## backward ##", 100)) == phase::backward);
  CHECK(g.phase_of(find(g, "Optimizer.step#SGD.step")) == phase::weight_update);
  CHECK(g.phase_of(find(g, "k3")) == phase::weight_update);
  CHECK(g.phase_of(find(g, "k1")) == phase::forward);
  CHECK(t.report.ignored.count("flow without partner") == 0);
}

TEST_CASE("device [memory] events give the replay's peak memory; CPU ones are counted") {
  auto t = dio::parse_kineto(backward_trace(), "backward");
  auto& g = t.g;
  // +1000 at 40 us (inside aten::linear: its slice is cut there), +100 at 80 (in the
  // step's own time), +2000 at 330 (autograd thread), -600 at 550, -100 at 1005 (after
  // the step: the thread is idle, so a zero-length [memory] slice carries it)
  CHECK(g.mem_delta(find_at(g, "aten::linear", 40)) == 1000);
  CHECK(g.mem_delta(find_at(g, "ProfilerStep#5", 80)) == 100);
  auto idle = find_at(g, "[memory]", 1005);
  CHECK(g.mem_delta(idle) == -100);
  CHECK(g.duration(idle) == 0);
  CHECK(g.iteration(idle) == -1);
  CHECK(g.mem_delta(find_at(g, "torch::autograd::AccumulateGrad", 330)) == 2000);
  auto r = replay(g);
  CHECK(r.peak_memory == 3100);
  CHECK(t.info.memory_at_start == 4000);
  CHECK(t.info.memory_peak == 7100);
  CHECK(r.peak_memory + t.info.memory_at_start == t.info.memory_peak);
  REQUIRE(t.initial_allocated_bytes());
  CHECK(*t.initial_allocated_bytes() == 4000);
  CHECK(t.info.kernels == 3);
  CHECK(t.info.copies + t.info.memsets == 0);
  CHECK(t.has_gpu_activity());
  CHECK(t.problems().empty());
  CHECK(t.report.ignored.at("cpu memory event") == 1);
}

TEST_CASE("a trace in the JSON Array Format, closed or left open, gives the graph of the object form") {
  const auto object = backward_trace();
  const auto events = object.substr(object.find('['), object.rfind(']') - object.find('[') + 1);
  const auto a = dio::parse_kineto(object, "object");
  const auto ra = replay(a.g);
  for (auto text : {events, events.substr(0, events.size() - 1) + ",\n", events.substr(0, events.size() - 1)}) {
    auto b = dio::parse_kineto(text, "array");
    CHECK(b.report.events == a.report.events);
    CHECK(b.report.in_graph == a.report.in_graph);
    CHECK(b.g.size() == a.g.size());
    CHECK(b.g.dependency_count() == a.g.dependency_count());
    CHECK(b.info.kernels == 3);
    CHECK(b.info.memory_at_start == 4000);
    auto rb = replay(b.g);
    CHECK(rb.makespan == ra.makespan);
    CHECK(rb.peak_memory == ra.peak_memory);
  }
}

TEST_CASE("cuda_sync records give stream syncs, event syncs and cross-stream waits") {
  auto sync = [](int c, std::string_view kind, int stream, int wait_stream, int record) {
    return "{\"correlation\": " + std::to_string(c) + ", \"cuda_sync_kind\": \"" + std::string(kind) +
           "\", \"stream\": " + std::to_string(stream) + ", \"wait_on_stream\": " + std::to_string(wait_stream) +
           ", \"wait_on_cuda_event_record_corr_id\": " + std::to_string(record) + ", \"device\": 0}";
  };
  auto json = trace({
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "0", "5", corr(1)),        // a on stream 7
      X("kernel", "a", 0, 7, "5", "100", gpu(1, 7)),
      X("cuda_runtime", "cudaEventRecord", 1, 1, "10", "2", corr(2)),
      X("cuda_runtime", "cudaStreamWaitEvent", 1, 1, "15", "2", corr(3)),    // stream 9 waits for a
      X("cuda_sync", "Stream Wait Event", 0, 9, "16", "1", sync(3, "Stream Wait Event", 9, 7, 2)),
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "20", "5", corr(4)),       // b on stream 9
      X("kernel", "b", 0, 9, "106", "50", gpu(4, 9)),
      X("cuda_runtime", "cudaEventQuery", 1, 1, "30", "2", corr(5)),
      X("cuda_sync", "Event Sync", 0, -1, "31", "1", sync(5, "Event Sync", -1, 7, 2)),
      X("cuda_runtime", "cudaEventSynchronize", 1, 1, "40", "70", corr(6)),  // waits for a
      X("cuda_sync", "Event Sync", 0, -1, "41", "69", sync(6, "Event Sync", -1, 7, 2)),
      X("cuda_runtime", "cudaStreamSynchronize", 1, 1, "115", "45", corr(7)), // waits for b
      X("cuda_sync", "Stream Sync", 0, 9, "116", "44", sync(7, "Stream Sync", 9, -1, -1)),
  });
  auto t = dio::parse_kineto(json, "syncs");
  auto& g = t.g;
  check_invariants(g);
  check_accounting(t);
  auto a = find(g, "a"), b = find(g, "b");
  CHECK(g.dependency_kind(a, b) == dep_kind::sync);
  auto es = find(g, "cudaEventSynchronize"), ss = find(g, "cudaStreamSynchronize");
  CHECK(g.dependency_kind(a, es) == dep_kind::sync);
  CHECK(g.duration(es) == 5'000);  // ends 110, a ended 105
  CHECK(g.dependency_kind(b, ss) == dep_kind::sync);
  CHECK(g.duration(ss) == 4'000);  // ends 160, b ended 156
  CHECK(g.has_dependency(a, find(g, "cudaEventQuery")) == false);
  CHECK(t.report.ignored.at("cuda_sync of a non-blocking call (cudaEventQuery)") == 1);
  CHECK(t.report.in_graph == 7 + 2 + 3); // runtime calls, kernels, the three records used
  auto r = replay(g);
  CHECK(r.end[a] == 105'000);
  // b starts when a ends: the 1 us more it took in the trace is not explained by anything
  // (b is its stream's first op, anchored to the main thread before the sync it falls in)
  CHECK(r.start[b] == 105'000);
  CHECK(r.end[es] == 110'000);
  CHECK(r.end[ss] == 159'000);
}

TEST_CASE("event waits are inferred from cudaEventRecord when there are no cuda_sync records") {
  auto json = trace({
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "0", "5", corr(1)),
      X("kernel", "a", 0, 7, "5", "100", gpu(1, 7)),
      X("cuda_runtime", "cudaEventRecord", 1, 1, "10", "2", corr(2)),
      X("cuda_runtime", "cudaStreamWaitEvent", 1, 1, "15", "2", corr(3)),
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "20", "5", corr(4)),
      X("kernel", "b", 0, 9, "106", "50", gpu(4, 9)),
  });
  auto t = dio::parse_kineto(json, "inferred");
  CHECK(t.g.dependency_kind(find(t.g, "a"), find(t.g, "b")) == dep_kind::sync);
  dio::ingest_options o;
  o.infer_event_waits = false;
  auto u = dio::parse_kineto(json, "inferred", o);
  CHECK_FALSE(u.g.has_dependency(find(u.g, "a"), find(u.g, "b")));
  // either way the replay keeps b's start (b began long after its launch returned, so it
  // is also anchored to the main thread at its start)
  CHECK(replay(u.g).start[find(u.g, "b")] == 106'000);
  CHECK(replay(t.g).start[find(t.g, "b")] == 106'000);
}

TEST_CASE("a blocking copy enqueues its copy at its start and waits for it to finish") {
  auto json = trace({
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "0", "5", corr(1)),
      X("kernel", "busy", 0, 7, "5", "300", gpu(1)),
      X("cpu_op", "aten::copy_", 1, 1, "10", "400"),
      X("cuda_runtime", "cudaMemcpy", 1, 1, "20", "380", corr(2)),
      X("gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", 0, 7, "306", "90",
        R"J({"device": 0, "stream": 7, "correlation": 2, "bytes": 4096})J"),
  });
  auto t = dio::parse_kineto(json, "blocking");
  auto& g = t.g;
  check_invariants(g);
  auto copy = find(g, "Memcpy DtoH (Device -> Pageable)");
  auto enqueue = find(g, "cudaMemcpy", 0), wait = find(g, "cudaMemcpy", 1);
  CHECK(g.trace_start(enqueue) == 20'000);
  CHECK(g.trace_start(wait) == 20'000);
  CHECK(g.duration(enqueue) == 0);
  CHECK(g.dependency_kind(enqueue, copy) == dep_kind::launch);
  CHECK(g.dependency_kind(copy, wait) == dep_kind::sync);
  CHECK(g.duration(wait) == 4'000); // 400 - 396
  auto m = g.as<memcpy_task>(copy);
  REQUIRE(m);
  CHECK(g.payload(m).direction == copy_kind::d2h);
  CHECK(g.payload(m).bytes == 4096);
  auto r = replay(g);
  CHECK(r.end[wait] == 400'000);
  // if the kernel before it gets 100 us faster, the copy and the call finish 100 us earlier
  auto g2 = g;
  set_duration(g2, find(g2, "busy"), 200'000);
  CHECK(replay(g2).end[find(g2, "cudaMemcpy", 1)] == 300'000);
}

TEST_CASE("a graph launch launches its kernels where the first one starts, and replay keeps their gaps") {
  // cudaGraphLaunch submits three kernels while it runs (10-110 us): the first starts at
  // 30, long before the call returns, and the graph's own gaps separate the others.
  auto json = trace({
      X("cuda_runtime", "cudaGraphLaunch", 1, 1, "10", "100", corr(1)),
      X("kernel", "k1", 0, 7, "30", "10", gpu(1)),
      X("kernel", "k2", 0, 7, "45", "10", gpu(1)),
      X("kernel", "k3", 0, 7, "70", "10", gpu(1)),
  });
  auto t = dio::parse_kineto(json, "graph");
  auto& g = t.g;
  check_invariants(g);
  auto launch = find(g, "cudaGraphLaunch", 0), rest = find(g, "cudaGraphLaunch", 1);
  for (auto* k : {"k1", "k2", "k3"}) CHECK(g.dependency_kind(launch, find(g, k)) == dep_kind::launch);
  CHECK(g.trace_start(launch) == 10'000);
  CHECK(g.duration(launch) == 20'000);
  CHECK(g.duration(rest) == 80'000);
  auto r = replay(g); // from the trace's first event, at 10 us
  CHECK(r.end[find(g, "k1")] == 30'000);
  CHECK(r.end[find(g, "k3")] == 70'000); // as recorded, not after the call's end
  CHECK(r.end[rest] == 100'000);
  // a faster first kernel moves the graph's later kernels
  auto g2 = g;
  set_duration(g2, find(g2, "k1"), 5'000);
  CHECK(replay(g2).end[find(g2, "k3")] == 65'000);
}

TEST_CASE("an asynchronous copy from pageable memory blocks the host while it stages the copy") {
  // cudaMemcpyAsync from pageable memory: the call stages the copy through pinned buffers
  // and returns when the last chunk is staged, 60 us before that chunk lands (more than
  // sync_tolerance). The host was still busy for the copy: the replay must not start the
  // copy only when the call returns (that would count the copy twice).
  auto json = trace({
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "0", "5", corr(3)),
      X("kernel", "busy", 0, 7, "5", "95", gpu(3)),
      X("cpu_op", "aten::copy_", 1, 1, "8", "3192"),
      X("cuda_runtime", "cudaMemcpyAsync", 1, 1, "10", "3000", corr(1)),
      X("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 0, 7, "200", "2870",
        R"J({"device": 0, "stream": 7, "correlation": 1, "bytes": 19267584})J"),
      X("cuda_runtime", "cudaStreamSynchronize", 1, 1, "3020", "60", corr(2)),
      X("cpu_op", "aten::relu", 1, 1, "3300", "50"),
  });
  auto t = dio::parse_kineto(json, "pageable");
  auto& g = t.g;
  check_invariants(g);
  auto copy = find(g, "Memcpy HtoD (Pageable -> Device)");
  auto enqueue = find(g, "cudaMemcpyAsync", 0), wait = find(g, "cudaMemcpyAsync", 1);
  CHECK(g.duration(enqueue) == 0);
  CHECK(g.dependency_kind(enqueue, copy) == dep_kind::launch);
  CHECK(g.dependency_kind(copy, wait) == dep_kind::sync);
  auto r = replay(g);
  // the copy starts 200 us in, as in the trace (the call's work before it, kept as a gap
  // after "busy"), and ends at 3070 us; the host resumes then (60 us later than the
  // trace's return: the chunk still in flight)
  CHECK(r.start[copy] == 200'000);
  CHECK(r.end[copy] == 3'070'000);
  auto relu = find(g, "aten::relu");
  CHECK(r.end[relu] - r.start[relu] == 50'000);
  // The host resumes at 3070 us, not at the trace's 3010: the synchronize that follows
  // (10 us after the return; 10 us past the copy's end in the trace) then ends at 3090
  // instead of 3080, so the rest of the iteration runs 10 us late, not 60 us and not a
  // whole copy (2.87 ms) late as when the copy waited for the call's return.
  CHECK(r.start[relu] == 3'310'000);
  // a copy from pinned memory (not staged by the host) is not blocking by this rule
  auto pinned = trace({
      X("cuda_runtime", "cudaMemcpyAsync", 1, 1, "10", "3000", corr(1)),
      X("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 0, 7, "200", "2870",
        R"J({"device": 0, "stream": 7, "correlation": 1, "bytes": 19267584})J"),
  });
  auto tp = dio::parse_kineto(pinned, "pinned");
  std::size_t calls = 0;
  tp.g.for_each_task([&](task_id x) { calls += tp.g.name(x) == "cudaMemcpyAsync"; });
  CHECK(calls == 1); // not cut into a launch piece and a wait
}

TEST_CASE("a launch blocked by a full launch queue waits for the GPU op that freed a slot") {
  auto json = trace({
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "0", "5", corr(1)),
      X("kernel", "long", 0, 7, "5", "1000", gpu(1)),
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "10", "1000", corr(2)),  // blocked until 1005
      X("kernel", "next", 0, 7, "1007", "10", gpu(2)),
  });
  auto t = dio::parse_kineto(json, "queue");
  auto& g = t.g;
  auto blocked = find_at(g, "cudaLaunchKernel", 10), longk = find(g, "long");
  CHECK(g.dependency_kind(longk, blocked) == dep_kind::sync);
  CHECK(g.duration(blocked) == 5'000);
  auto r = replay(g);
  CHECK(r.end[blocked] == 1'010'000);
  auto g2 = g;
  scale_duration(g2, find(g2, "long"), 0.5);
  CHECK(replay(g2).end[find_at(g2, "cudaLaunchKernel", 10)] == 510'000);
  bool warned = false;
  for (auto& w : t.report.warnings) warned |= w.find("launch queue full") != std::string::npos;
  CHECK(warned);
}

TEST_CASE("GPU ops without a runtime call are kept in stream order, counted and flagged") {
  auto json = trace({
      X("user_annotation", "ProfilerStep#1", 1, 1, "0", "100"),
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "10", "5", corr(1)),
      X("kernel", "linked", 0, 7, "15", "15", gpu(1)),
      X("kernel", "orphan", 0, 7, "50", "10", gpu(77)),
      X("kernel", "head", 0, 9, "40", "5", gpu(78, 9)),
  });
  auto t = dio::parse_kineto(json, "orphans");
  auto& g = t.g;
  CHECK(t.report.unlinked_gpu_ops == 2);
  REQUIRE_FALSE(t.report.warnings.empty());
  CHECK(t.report.warnings[0].find("2 GPU operations have no matching runtime call") != std::string::npos);
  CHECK(g.dependency_kind(find(g, "linked"), find(g, "orphan")) == dep_kind::stream_order);
  auto r = replay(g);
  CHECK(r.start[find(g, "orphan")] == 50'000); // 20 us after "linked" ended, as in the trace
  CHECK(r.start[find(g, "head")] == 40'000);   // anchored to the main thread at its start
  CHECK(g.iteration(find(g, "orphan")) == 1);
  check_accounting(t);
}

TEST_CASE("GPU ops without a runtime call take their iteration from their stream neighbours, not from when they ran") {
  // A trimmed window: the GPU still runs o1 and o2, launched before the window (their
  // launches are not in the trace), through both steps; the steps' own kernels k1 and k2
  // queue behind them. By when they ran o1 and o2 would be steps 1 and 2's work, and the
  // replay's step 2 would count o2's 100 us as its own.
  auto t = dio::parse_kineto(trace({
                                 X("user_annotation", "ProfilerStep#1", 1, 1, "0", "100"),
                                 X("cuda_runtime", "cudaLaunchKernel", 1, 1, "10", "5", corr(1)),
                                 X("user_annotation", "ProfilerStep#2", 1, 1, "100", "100"),
                                 X("cuda_runtime", "cudaLaunchKernel", 1, 1, "110", "5", corr(2)),
                                 X("cuda_runtime", "cudaLaunchKernel", 1, 1, "120", "5", corr(3)),
                                 X("kernel", "o1", 0, 7, "0", "150", gpu(77)),
                                 X("kernel", "o2", 0, 7, "150", "100", gpu(78)),
                                 X("kernel", "k1", 0, 7, "250", "50", gpu(1)),
                                 X("kernel", "o3", 0, 7, "300", "10", gpu(79)),
                                 X("kernel", "k2", 0, 7, "310", "150", gpu(2)),
                                 X("kernel", "k3", 0, 7, "460", "10", gpu(3)),
                             }),
                             "trimmed window");
  auto& g = t.g;
  CHECK(t.report.unlinked_gpu_ops == 3);
  CHECK(g.iteration(find(g, "o1")) == -1); // queued before the stream's first launched op
  CHECK(g.iteration(find(g, "o2")) == -1);
  CHECK(g.iteration(find(g, "k1")) == 1);
  CHECK(g.iteration(find(g, "o3")) == 1);  // ran after the steps, launched between k1 and k2
  CHECK(g.iteration(find(g, "k2")) == 2);
  // Step 2 is its own GPU work: k2 and k3 after k1 and o3, 310 -> 470 us.
  CHECK(t.measured(2) == 160'000);
  auto r = replay(g);
  CHECK(iteration_time(g, r, 2) == t.measured(2));
  auto steps = steady_steps(g, r, {2});
  REQUIRE(steps.size() == 1);
  CHECK(steps[0].step() == t.measured(2));
  check_accounting(t);
}

TEST_CASE("NCCL kernels are communication tasks sized from collective metadata or input dims") {
  auto json = trace({
      X("cpu_op", "record_param_comms", 1, 1, "0", "50",
        R"J({"Collective name": "allreduce", "In msg nelems": 1024, "Out msg nelems": 1024, "dtype": "BFloat16", "Group size": 4})J"),
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "10", "5", corr(1)),
      X("kernel", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 0, 20, "20", "100", gpu(1, 20)),
      X("cpu_op", "c10d::alltoall_base_", 1, 1, "200", "60",
        R"J({"Input Dims": [[6144], [6144], [], [], [], []], "Input type": ["float", "float", "", "", "", "Scalar"]})J"),
      X("cpu_op", "record_param_comms", 1, 1, "205", "50", R"J({"Input Dims": [[6144], [], []], "Input type": ["float", "Scalar", "Scalar"]})J"),
      X("user_annotation", "nccl:all_to_all", 1, 1, "210", "40", R"J({"Input Dims": [[6144]], "Input type": ["float"]})J"),
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "220", "5", corr(2)),
      X("kernel", "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", 0, 20, "230", "100", gpu(2, 20)),
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "400", "5", corr(3)),
      X("kernel", "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", 0, 20, "410", "10",
        R"J({"device": 0, "stream": 20, "correlation": 3, "Collective name": "allreduce", "In msg nelems": 10, "Out msg nelems": 10, "dtype": "Float", "Group size": 2})J"),
  }, R"J("distributedInfo": {"rank": 0, "world_size": 8}, )J");
  auto t = dio::parse_kineto(json, "nccl");
  auto& g = t.g;
  auto ar = g.as<comm_task>(find(g, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"));
  REQUIRE(ar);
  CHECK(g.payload(ar).op == comm_op::all_reduce);
  CHECK(g.payload(ar).bytes == 2048);
  CHECK(g.payload(ar).group_size == 4);
  CHECK(g.payload(ar).stream == 20);
  CHECK(g.resource_at(g.resource_of(ar)).kind == resource_kind::gpu_stream);
  auto a2a = g.as<comm_task>(find(g, "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)"));
  REQUIRE(a2a);
  CHECK(g.payload(a2a).op == comm_op::all_to_all);
  CHECK(g.payload(a2a).bytes == 6144 * 4);
  CHECK(g.payload(a2a).group_size == 8); // world size when the trace does not say
  auto k = g.as<comm_task>(find(g, "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"));
  REQUIRE(k);
  CHECK(g.payload(k).bytes == 40);
  CHECK(g.payload(k).group_size == 2);
  CHECK(g.dependency_kind(ar, a2a) == dep_kind::stream_order);
}

TEST_CASE("kernels that move data between GPUs without NCCL are communication too") {
  // DeepEP's expert dispatch and combine, an inference engine's custom all-reduce: each is
  // a communication task with its collective; a Triton kernel named after the functional
  // collective it copies for is computation.
  auto json = trace({
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "0", "5", corr(1)),
      X("kernel", "void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*)", 0, 7, "10", "100", gpu(1)),
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "10", "5", corr(2)),
      X("kernel", "void deep_ep::intranode::notify_dispatch<8>(int const*, int*)", 0, 7, "110", "10", gpu(2)),
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "20", "5", corr(3)),
      X("kernel", "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*)", 0, 7, "120", "30", gpu(3)),
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "30", "5", corr(4)),
      X("kernel", "void tensorrt_llm::kernels::oneShotAllReduceKernel<float, 8>(AllReduceParams)", 0, 7, "150", "30", gpu(4)),
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "40", "5", corr(5)),
      X("kernel", "triton_poi_fused_all_reduce_0", 0, 7, "180", "5", gpu(5)),
  });
  auto t = dio::parse_kineto(json, "no nccl");
  auto& g = t.g;
  auto op_of = [&](std::string_view name) {
    auto c = g.as<comm_task>(find(g, name));
    REQUIRE_MESSAGE(c, name);
    return g.payload(c).op;
  };
  CHECK(op_of("void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*)") == comm_op::all_to_all);
  CHECK(op_of("void deep_ep::intranode::notify_dispatch<8>(int const*, int*)") == comm_op::all_to_all);
  CHECK(op_of("void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*)") == comm_op::all_reduce);
  CHECK(op_of("void tensorrt_llm::kernels::oneShotAllReduceKernel<float, 8>(AllReduceParams)") == comm_op::all_reduce);
  CHECK(g.is<gpu_kernel>(find(g, "triton_poi_fused_all_reduce_0")));
  check_accounting(t);
}

TEST_CASE("legacy category names and HIP runtime names are understood") {
  auto json = trace({
      X("Operator", "aten::mm", 1, 1, "0", "50"),
      X("Runtime", "hipLaunchKernel", 1, 1, "10", "5", R"J({"correlation": 1, "external id": 3, "stream": "0x0"})J"),
      R"J({"ph": "X", "cat": "Kernel", "name": "Cijk_Ailk", "pid": 0, "tid": "stream 7", "ts": 15, "dur": 35, "args": {"correlation": 1, "device": 0}})J",
      X("Runtime", "hipMemcpyWithStream", 1, 1, "60", "100", corr(2)),
      R"J({"ph": "X", "cat": "Memcpy", "name": "Memcpy HtoD (Host -> Device)", "pid": 0, "tid": "stream 7", "ts": 70, "dur": 80, "args": {"correlation": 2, "device": 0, "bytes": 1024}})J",
      X("Runtime", "hipMemsetAsync", 1, 1, "170", "5", corr(3)),
      R"J({"ph": "X", "cat": "Memset", "name": "Memset (Device)", "pid": 0, "tid": "stream 7", "ts": 180, "dur": 2, "args": {"correlation": 3, "device": 0, "bytes": 64}})J",
      X("Runtime", "hipDeviceSynchronize", 1, 1, "190", "10", corr(4)),
      R"J({"ph": "s", "id": 1, "pid": 1, "tid": 1, "ts": 10, "cat": "async", "name": "launch"})J",
      R"J({"ph": "f", "id": 1, "pid": 0, "tid": "stream 7", "ts": 15, "cat": "async", "name": "launch", "bp": "e"})J",
  });
  auto t = dio::parse_kineto(json, "legacy");
  auto& g = t.g;
  check_invariants(g);
  check_accounting(t);
  CHECK(t.report.in_graph == t.report.events);
  auto launch = find(g, "hipLaunchKernel"), k = find(g, "Cijk_Ailk");
  CHECK(g.payload(g.as<cpu_task>(launch)).call == cpu_call::launch);
  CHECK(g.dependency_kind(launch, k) == dep_kind::launch);
  CHECK(g.payload(g.as<gpu_kernel>(k)).stream == 7);
  auto copy = find(g, "Memcpy HtoD (Host -> Device)");
  CHECK(g.dependency_kind(copy, find(g, "hipMemcpyWithStream", 1)) == dep_kind::sync);  // blocking
  auto set = g.as<memcpy_task>(find(g, "Memset (Device)"));
  REQUIRE(set);
  CHECK(g.payload(set).direction == copy_kind::memset);
  CHECK(g.resource_of(set) == g.resource_of(k));
  CHECK(g.payload(g.as<cpu_task>(find(g, "hipDeviceSynchronize"))).call == cpu_call::sync);
  CHECK(g.dependency_kind(set, find(g, "hipDeviceSynchronize")) == dep_kind::sync);
  CHECK(replay(g).makespan == 200'000);
}

TEST_CASE("without step markers, optimizer steps delimit the iterations") {
  auto json = trace({
      X("cpu_op", "aten::mm", 1, 1, "0", "40"),
      X("user_annotation", "Optimizer.step#SGD.step", 1, 1, "50", "10"),
      X("cpu_op", "aten::mm", 1, 1, "70", "40"),
      X("user_annotation", "Optimizer.step#SGD.step", 1, 1, "120", "20"),
      X("cpu_op", "aten::mm", 1, 1, "150", "40"),
      X("user_annotation", "Optimizer.step#SGD.step", 1, 1, "195", "5"),
      X("cpu_op", "aten::add", 1, 1, "210", "5"),
  });
  auto t = dio::parse_kineto(json, "optimizer");
  REQUIRE(t.iterations.size() == 3);
  CHECK(t.iterations[0].number == 1);
  CHECK(t.iterations[0].marker == "Optimizer.step#SGD.step");
  // iteration k starts with the first event after optimizer step k-1 ends, and lasts
  // until iteration k+1 starts (the last one: until its optimizer step ends)
  CHECK(t.iterations[0].trace_begin == 0);
  CHECK(t.iterations[1].trace_begin == 70'000);
  CHECK(t.measured(1) == 70'000);
  CHECK(t.measured(2) == 80'000);
  CHECK(t.measured(3) == 50'000);
  CHECK(t.default_iteration() == 2);
  CHECK(t.steady_state_iterations() == std::vector<std::int32_t>{2});
  CHECK(t.g.iteration(find_at(t.g, "aten::mm", 70)) == 2);
  CHECK(t.g.iteration(find(t.g, "aten::add")) == -1);
  CHECK(t.g.phase_of(find(t.g, "aten::add")) == phase::other);
  CHECK(t.g.layer(find_at(t.g, "aten::mm", 70)) == "aten::mm#0");
  auto r = replay(t.g);
  CHECK(iteration_time(t.g, r, 2) == 80'000);
}

TEST_CASE("a trace without step markers or optimizer steps is one iteration, and says so") {
  // CPU work, then GPU work that runs long after the CPU is done
  auto t = dio::parse_kineto(trace({
                                 X("cpu_op", "aten::mm", 1, 1, "5", "40"),
                                 X("cuda_runtime", "cudaLaunchKernel", 1, 1, "10", "5", corr(1)),
                                 X("kernel", "gemm", 0, 7, "15", "305", gpu(1)),
                             }),
                             "plain");
  CHECK(t.info.iterations_from == dio::iteration_source::whole_trace);
  REQUIRE(t.iterations.size() == 1);
  CHECK(t.iterations[0].number == 0);
  CHECK(t.iterations[0].marker == "whole trace (no step markers)");
  CHECK(t.iterations[0].trace_begin == 5'000);
  CHECK(t.iterations[0].trace_end == 320'000);
  CHECK(t.default_iteration() == 0);
  CHECK(t.steady_state_iterations() == std::vector<std::int32_t>{0});
  // The longer of its CPU work (5 to 45 us) and its GPU work (15 to 320 us).
  CHECK(t.measured(0) == 305'000);
  CHECK(t.measurement_note(0) == "the trace (no step markers) spans 0.315 ms; its GPU work lasts 0.305 ms of it, "
                                 "longer than its CPU work: in a loop of such steps the GPU's work is the step, "
                                 "measured as 0.305 ms, as the replay is");
  auto r = replay(t.g);
  CHECK(iteration_time(t.g, r, 0) == 305'000);
  t.g.for_each_task([&](task_id id) { CHECK(t.g.iteration(id) == 0); });
  CHECK(t.g.phase_of(find(t.g, "aten::mm")) == phase::forward);
  auto e = dio::parse_kineto(trace({}), "empty events");
  CHECK(e.g.empty());
  CHECK(e.report.events == 0);
  CHECK(e.iterations.empty());
  CHECK(e.info.iterations_from == dio::iteration_source::none);
}

TEST_CASE("a single iteration lasts the GPU work it launched when that is longer than its CPU work") {
  // One optimizer step and no ProfilerStep: the CPU is done at 100 us, the kernels it
  // launched run from 10 to 900 us. The trace's iteration must be the GPU's, as the
  // replay's is: 890 us, without the CPU's 10 us before the first kernel.
  const auto json = trace({
      X("cpu_op", "aten::mm", 1, 1, "0", "20"),
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "5", "5", corr(1)),
      X("user_annotation", "Optimizer.step#SGD.step", 1, 1, "30", "70"),
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "40", "5", corr(2)),
      X("kernel", "gemm", 0, 7, "10", "700", gpu(1)),
      X("kernel", "sgd", 0, 7, "710", "190", gpu(2)),
  });
  auto t = dio::parse_kineto(json, "one step");
  CHECK(t.info.iterations_from == dio::iteration_source::optimizer_steps);
  REQUIRE(t.iterations.size() == 1);
  CHECK(t.iterations[0].trace_end == 100'000);
  CHECK(t.iterations[0].work_end == 900'000);
  CHECK(t.iterations[0].device_begin == 10'000);
  CHECK(t.measured(1) == 890'000);
  auto r = replay(t.g);
  CHECK(iteration_time(t.g, r, 1) == 890'000);
  // An inference trace with one ProfilerStep#3 from 30 us: the gemm was launched before
  // it (at 5 us, outside any iteration), so the GPU was still running it when the step
  // began; the step is its own kernel, from the gemm's end to its own.
  auto step = json;
  step.replace(step.find("Optimizer.step#SGD.step"), 23, "ProfilerStep#3");
  auto u = dio::parse_kineto(step, "one profiler step");
  CHECK(u.info.iterations_from == dio::iteration_source::profiler_steps);
  REQUIRE(u.iterations.size() == 1);
  CHECK(u.iterations[0].number == 3);
  CHECK(u.iterations[0].backlog_end == 710'000);
  CHECK(u.iterations[0].device_begin == 710'000);
  CHECK(u.measured(3) == 900'000 - 710'000);
  CHECK(iteration_time(u.g, replay(u.g), 3) == u.measured(3));
}

TEST_CASE("the last of several steps lasts the longer of its CPU work and its own GPU work") {
  // Steps of 100 us; the GPU lags 150 us behind the CPU. Iterations before the last
  // repeat with the marker's period (the replay's too). The last one has no next step to
  // end it: it lasts its CPU work or its own GPU work, whichever is longer, and the
  // previous step's kernel its own waited for is the previous step's.
  auto lagging = [](const char* k2) {
    return dio::parse_kineto(trace({
                                 X("user_annotation", "ProfilerStep#1", 1, 1, "0", "100"),
                                 X("cuda_runtime", "cudaLaunchKernel", 1, 1, "10", "5", corr(1)),
                                 X("user_annotation", "ProfilerStep#2", 1, 1, "100", "100"),
                                 X("cuda_runtime", "cudaLaunchKernel", 1, 1, "110", "5", corr(2)),
                                 X("kernel", "k1", 0, 7, "160", "100", gpu(1)),
                                 X("kernel", "k2", 0, 7, "260", k2, gpu(2)),
                             }),
                             "lagging");
  };
  SUBCASE("as long as its CPU work: the marker") {
    auto t = lagging("100");
    REQUIRE(t.iterations.size() == 2);
    CHECK(t.measured(1) == 100'000);
    CHECK(t.measurement_note(1).empty());
    CHECK(t.iterations[1].work_end == 360'000);
    CHECK(t.iterations[1].backlog_end == 260'000);
    CHECK(t.measured(2) == 100'000);
    CHECK(t.measurement_note(2).empty());
    auto r = replay(t.g);
    CHECK(iteration_time(t.g, r, 2) == t.measured(2));
    auto spans = iteration_spans(t.g, r);
    REQUIRE(spans.size() == 2);
    CHECK_FALSE(spans[1].by_device);
    CHECK(spans[1].begin == spans[1].first_start);
    CHECK(spans[1].backlog() == 160'000); // k1 ends at 260 in the replay too; the step began at 100
  }
  SUBCASE("longer than its CPU work: its own GPU work") {
    auto t = lagging("200");
    CHECK(t.measured(2) == 200'000);
    CHECK(t.measurement_note(2) ==
          "ProfilerStep#2 lasts 0.100 ms; the GPU work it launched ends 0.260 ms after it and lasts 0.200 ms, longer "
          "than its CPU work: in a loop of such steps the GPU's work is the step, measured as 0.200 ms, as the "
          "replay is (the GPU was still running 0.160 ms of work queued before the step when it began: that belongs "
          "to the steps before it and is left out)");
    auto r = replay(t.g);
    CHECK(iteration_time(t.g, r, 2) == t.measured(2));
    auto spans = iteration_spans(t.g, r);
    CHECK(spans[1].by_device);
  }
}

TEST_CASE("a one-step trace does not count the GPU work queued before its step") {
  // The kernel k0 was launched before the profiled step (its launch is outside any
  // iteration) and keeps the GPU busy for the step's first 300 us; the step's own kernel
  // waits for it. The step is its own 200 us of GPU work after that, not 500 us.
  const auto json = trace({
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "0", "5", corr(1)),
      X("user_annotation", "ProfilerStep#7", 1, 1, "10", "100"),
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "20", "5", corr(2)),
      X("kernel", "k0", 0, 7, "10", "300", gpu(1)),
      X("kernel", "k1", 0, 7, "310", "200", gpu(2)),
  });
  auto t = dio::parse_kineto(json, "backlog before the step");
  REQUIRE(t.iterations.size() == 1);
  CHECK(t.iterations[0].backlog_end == 310'000);
  CHECK(t.measured(7) == 200'000);
  CHECK(t.measurement_note(7) == "ProfilerStep#7 lasts 0.100 ms; the GPU work it launched ends 0.400 ms after it and "
                                 "lasts 0.200 ms, longer than its CPU work: in a loop of such steps the GPU's work is "
                                 "the step, measured as 0.200 ms, as the replay is (the GPU was still running 0.300 ms "
                                 "of work queued before the step when it began: that belongs to the steps before it "
                                 "and is left out)");
  auto spans = iteration_spans(t.g, replay(t.g));
  REQUIRE(spans.size() == 1);
  // The replay starts k0 when its launch returns (5 us, not the trace's 10 us), so the
  // backlog ends at 305 us there; the step is the same 200 us.
  CHECK(spans[0].first_start == 10'000);
  CHECK(spans[0].begin == 305'000);
  CHECK(spans[0].backlog() == 295'000);
  auto r = replay(t.g);
  CHECK(iteration_time(t.g, r, 7) == t.measured(7));
  // Without the earlier kernel, the step is its own GPU work: the CPU's 15 us before it
  // launched it is not part of a loop's step.
  auto u = dio::parse_kineto(trace({
                                 X("user_annotation", "ProfilerStep#7", 1, 1, "10", "100"),
                                 X("cuda_runtime", "cudaLaunchKernel", 1, 1, "20", "5", corr(2)),
                                 X("kernel", "k1", 0, 7, "25", "200", gpu(2)),
                             }),
                             "no backlog");
  CHECK(u.measured(7) == 200'000);
  CHECK(u.measurement_note(7) == "ProfilerStep#7 lasts 0.100 ms; the GPU work it launched ends 0.115 ms after it and "
                                 "lasts 0.200 ms, longer than its CPU work: in a loop of such steps the GPU's work is "
                                 "the step, measured as 0.200 ms, as the replay is");
  CHECK(iteration_time(u.g, replay(u.g), 7) == u.measured(7));
}

TEST_CASE("traces of different runs are refused as a job: their steps begin hours apart on the wall clock") {
  // Two ranks of a 2-rank job, each one ProfilerStep#5 of 100 us; Kineto's timestamps are
  // microseconds since 1970. Recorded together, the step begins 3 ms apart (clock skew);
  // rank 1's file from a run two hours later cannot be the same job.
  auto rank = [](int r, std::string_view ts) {
    const std::string t(ts);
    return dio::parse_kineto(trace({X("user_annotation", "ProfilerStep#5", 1, 1, t, "100"),
                                    X("cuda_runtime", "cudaLaunchKernel", 1, 1, t, "5", corr(1)),
                                    X("kernel", "gemm", 0, 7, t, "50", gpu(1))},
                                   "\"distributedInfo\": {\"rank\": " + std::to_string(r) +
                                       ", \"world_size\": 2, \"backend\": \"nccl\"}, "),
                             "rank" + std::to_string(r) + ".json");
  };
  auto together = [&](std::string_view second) {
    std::vector<dio::kineto_trace> v;
    v.push_back(rank(0, "1694128201421205"));
    v.push_back(rank(1, second));
    return v;
  };
  auto j = dio::make_job(together("1694128201424205"));
  CHECK(j.ranks.size() == 2);
  try {
    (void)dio::make_job(together("1694135401421205"));
    FAIL("two runs were taken for one job");
  } catch (const error& e) {
    CHECK(std::string(e.what()) ==
          "daydream: load_job: iteration 5 begins 7200 s later in rank1.json than in rank0.json, on the traces' "
          "wall clocks: the ranks of one job run each step together, so these are traces of different runs (if "
          "they are one job whose hosts' clocks disagree by more than 600 s, set job_options::max_clock_spread)");
  }
  dio::job_options o;
  o.max_clock_spread = 0; // hosts whose clocks disagree: the check is off
  CHECK(dio::make_job(together("1694135401421205"), o).ranks.size() == 2);
}

// ---------------------------------------------------------------------------------- errors

TEST_CASE("malformed input gives an error naming the source, the place and the reason") {
  CHECK(error_of("", "empty.json") == "daydream: empty.json: empty file");
  auto truncated = error_of(R"J({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2}, {"ph": "X", "cat": "cpu_o)J",
                            "cut.json");
  CHECK(truncated.find("daydream: cut.json: byte ") == 0);
  CHECK(truncated.find("JSON syntax error") != std::string::npos);
  auto truncated2 = error_of(R"J({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2}, )J", "cut2.json");
  CHECK(truncated2.find("daydream: cut2.json: byte ") == 0);
  CHECK(error_of(R"J({"schemaVersion": 1})J") ==
        "daydream: test.json: no \"traceEvents\" array (is this a Kineto / PyTorch profiler trace?)");
  CHECK(error_of(R"J({"traceEvents": {}})J") == "daydream: test.json: \"traceEvents\" is an object, not an array");
  CHECK(error_of(R"J([1, 2])J") == "daydream: test.json: event #0: is a number, not an object"); // the array form
  CHECK(error_of(trace({X("cpu_op", "a", 1, 1, "1", "2"), "17"})) == "daydream: test.json: event #1: is a number, not an object");
  CHECK(error_of(trace({X("cpu_op", "a", 1, 1, "\"1\"", "2")})) ==
        "daydream: test.json: event #0: field 'ts' must be a number, not a string");
  CHECK(error_of(trace({X("cpu_op", "a", 1, 1, "1", "-2")})) ==
        "daydream: test.json: event #0: negative duration (dur = -2 us)");
  CHECK(error_of(trace({X("cpu_op", "a", 1, 1, "1", "NaN")})).find("event #0: field 'dur' is not a finite number") != std::string::npos);
  CHECK(error_of(trace({R"J({"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1})J"})) ==
        "daydream: test.json: event #0: complete event ('X') without 'dur'");
  CHECK(error_of(trace({R"J({"cat": "cpu_op", "name": "a", "ts": 1, "dur": 1})J"})) == "daydream: test.json: event #0: has no 'ph' field");
  CHECK(error_of(trace({R"J({"ph": "X", "cat": "cpu_op", "name": 5, "ts": 1, "dur": 1})J"})) ==
        "daydream: test.json: event #0: field 'name' must be a string, not a number");
  CHECK(error_of(trace({R"J({"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": 1, "args": []})J"})) ==
        "daydream: test.json: event #0: field 'args' must be an object, not an array");
  CHECK(error_of(trace({R"J({"ph": "X", "cat": "cpu_op", "name": "a", "pid": [1], "ts": 1, "dur": 1})J"})) ==
        "daydream: test.json: event #0: field 'pid' must be a number or a string, not an array");
  CHECK(error_of(trace({R"J({"ph": "X", "cat": "cpu_op", "name": "a", "ts": 99999999999999999, "dur": 1})J"})).find("out of range") != std::string::npos);
}

TEST_CASE("dangling correlation ids and unknown categories are counted, not errors") {
  auto t = dio::parse_kineto(trace({
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "0", "5", corr(12345)),
      X("kernel", "k", 0, 7, "10", "5", gpu(999)),
      X("overhead", "CUPTI overhead", 0, 7, "20", "5"),
      R"J({"ph": "C", "name": "counter", "pid": 1, "ts": 3, "args": {"x": 1}})J",
      R"J({"ph": "i", "cat": "cpu_instant_event", "name": "something", "pid": 1, "tid": 1, "ts": 3, "s": "t"})J",
  }), "dangling");
  CHECK(t.report.unlinked_gpu_ops == 1);
  CHECK(t.report.ignored.at("unknown category \"overhead\"") == 1);
  CHECK(t.report.ignored.at("counter event") == 1);
  CHECK(t.report.ignored.at("instant event \"something\"") == 1);
  check_accounting(t);
}

TEST_CASE("files: gzip is found by its magic bytes; bad files give clear errors") {
  temp_dir d{"daydream_io_test_"};
  auto text = two_steps();
  auto plain = d.file("plain.json", text);
  auto zipped = d.gz("zipped.json.gz", text);
  auto disguised = d.gz("disguised.json", text); // gzip data under a plain name
  auto a = dio::load_kineto(plain), b = dio::load_kineto(zipped), c = dio::load_kineto(disguised);
  CHECK(a.g.size() == 17);
  CHECK(b.g.size() == 17);
  CHECK(c.g.size() == 17);
  CHECK(b.report.in_graph == a.report.in_graph);
  CHECK(c.info.path == disguised.string());
  auto message = [](const std::filesystem::path& p) {
    try { dio::load_kineto(p); } catch (const daydream::error& e) { return std::string(e.what()); }
    return std::string();
  };
  auto fake = d.file("fake.json.gz", text);
  CHECK(message(fake) == "daydream: " + fake.string() +
                             ": the name ends in .gz but the file is not gzip data (it does not start with the gzip magic bytes 1f 8b)");
  auto empty = d.file("empty.json", "");
  CHECK(message(empty) == "daydream: " + empty.string() + ": empty file");
  CHECK(message(d.p / "missing.json").find(": cannot open: ") != std::string::npos);
  // a gzip file cut in half, and one with damaged data
  std::ifstream in(zipped, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto half = d.file("half.json.gz", std::string_view(bytes).substr(0, bytes.size() / 2));
  CHECK(message(half).find(": truncated gzip data") != std::string::npos);
  auto damaged = bytes;
  for (std::size_t i = 20; i < 60 && i < damaged.size(); ++i) damaged[i] = char(damaged[i] ^ 0x5a);
  auto bad = d.file("bad.json.gz", damaged);
  CHECK(message(bad).find(bad.string() + ": ") != std::string::npos);
  CHECK(message(bad).find("gzip") != std::string::npos);
  // truncated JSON inside a valid gzip stream
  auto cut = d.gz("cut.json.gz", std::string_view(text).substr(0, text.size() - 40));
  CHECK(message(cut).find("daydream: " + cut.string() + ": byte ") == 0);
}

TEST_CASE("strings with escapes are unescaped; the graph does not depend on the parser's memory") {
  // Names, categories, string pids and tids with escapes are unescaped into the decoded
  // tables' own storage; the others are views of the JSON text. The parser is gone before
  // the graph is built (a dangling view would show here, and under ASan).
  auto t = dio::parse_kineto(R"J({"traceEvents": [
    {"ph": "X", "cat": "cpu_\u006fp", "name": "a\"b\\c\u00e9", "pid": "p\u0031", "tid": "worker \"7\"", "ts": 1, "dur": 2},
    {"ph": "X", "cat": "cpu_op", "name": "plain", "pid": "p1", "tid": "worker \"7\"", "ts": 4, "dur": 2},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 5, "tid": 6, "ts": 10, "dur": 3}]})J",
                             "escapes");
  CHECK(t.report.in_graph == 3);
  check_accounting(t);
  CHECK(find(t.g, "a\"b\\c\xc3\xa9") != no_task);
  const auto plain = find(t.g, "plain"), mm = find(t.g, "aten::mm");
  CHECK(t.g.resource_of(plain) == t.g.resource_of(find(t.g, "a\"b\\c\xc3\xa9"))); // one thread: p1 / worker "7"
  CHECK(t.g.resource_of(plain) != t.g.resource_of(mm));
  CHECK(t.g.resource_at(t.g.resource_of(plain)).name.find("worker \"7\"") != std::string::npos);
  CHECK(t.g.resource_at(t.g.resource_of(plain)).name.find("pid p1") != std::string::npos);
}

TEST_CASE("load_kineto_files: every file as load_kineto loads it, in input order, whatever the threads") {
  temp_dir d{"daydream_io_test_"};
  const std::vector<std::filesystem::path> files = {
      testing::bundled("hta_sampled_128rank/sampled_rank-1.json.gz"),
      d.file("two_steps.json", two_steps()),
      testing::bundled("hta_micro_a100/cuda_event_sync_multi_stream_trace.json.gz"),
      d.gz("two_steps.json.gz", two_steps()),
      testing::bundled("hta_sampled_128rank/sampled_rank-0.json.gz"),
  };
  dio::ingest_options opt;
  opt.merge_slices = false; // the options reach every load
  std::vector<dio::kineto_trace> one_by_one;
  for (auto& f : files) one_by_one.push_back(dio::load_kineto(f, opt));
  CHECK(one_by_one[0].info.rank == 1);
  CHECK(one_by_one[4].info.rank == 0);
  for (unsigned threads : {0u, 1u, 2u, 3u, 8u}) {
    auto all = dio::load_kineto_files(files, opt, threads);
    REQUIRE(all.size() == files.size());
    for (std::size_t i = 0; i < files.size(); ++i) {
      CHECK(all[i].info.path == files[i].string());
      CHECK(testing::graph_difference(all[i].g, one_by_one[i].g) == "");
      CHECK(all[i].report.events == one_by_one[i].report.events);
      CHECK(all[i].report.in_graph == one_by_one[i].report.in_graph);
      CHECK(all[i].report.ignored == one_by_one[i].report.ignored);
      CHECK(all[i].iterations.size() == one_by_one[i].iterations.size());
      check_accounting(all[i]);
    }
  }
  CHECK(dio::load_kineto_files(std::vector<std::filesystem::path>{}).empty());
}

TEST_CASE("load_kineto_files: the error of the first failing file in input order, naming it") {
  temp_dir d{"daydream_io_test_"};
  auto good = d.file("good.json", two_steps());
  auto empty = d.file("empty.json", "");
  auto missing = d.p / "missing.json";
  auto fake = d.file("fake.json.gz", two_steps());
  const std::vector<std::filesystem::path> files = {good, good, missing, good, empty, fake, good};
  for (unsigned threads : {1u, 2u, 4u, 16u}) {
    std::string message;
    try {
      dio::load_kineto_files(files, {}, threads);
    } catch (const daydream::error& e) {
      message = e.what();
    }
    CHECK(message.rfind("daydream: " + missing.string() + ": cannot open: ", 0) == 0);
  }
  const std::vector<std::filesystem::path> later = {good, fake, empty};
  for (unsigned threads : {1u, 3u}) {
    std::string message;
    try {
      dio::load_kineto_files(later, {}, threads);
    } catch (const daydream::error& e) {
      message = e.what();
    }
    CHECK(message.rfind("daydream: " + fake.string() + ": the name ends in .gz", 0) == 0);
  }
}

TEST_CASE("every truncation and byte flip of a trace gives a result or an error, never a crash") {
  const auto text = two_steps();
  std::size_t errors = 0, fine = 0;
  for (std::size_t n = 0; n < text.size(); n += 7) {
    try {
      auto t = dio::parse_kineto(std::string_view(text).substr(0, n), "prefix");
      ++fine;
      CHECK(t.report.in_graph + t.report.ignored_total() == t.report.events);
    } catch (const daydream::error&) {
      ++errors;
    }
  }
  CHECK(errors > 0);
  const char junk[] = {'"', '}', ']', '{', '[', ',', ':', '0', '-', 'e', '\\', '\0', 'N'};
  for (std::size_t i = 0; i < text.size(); i += 5) {
    auto bad = text;
    bad[i] = junk[i % sizeof junk];
    try {
      auto t = dio::parse_kineto(bad, "flipped");
      ++fine;
      CHECK(t.report.in_graph + t.report.ignored_total() == t.report.events);
      check_invariants(t.g);
    } catch (const daydream::error&) {
      ++errors;
    }
  }
  CHECK(fine > 0);
}

TEST_CASE("keep_iterations keeps a range of iterations and bridges the rest") {
  auto t = dio::parse_kineto(two_steps(), "two_steps");
  dio::keep_iterations(t, 2, 2);
  check_invariants(t.g);
  REQUIRE(t.iterations.size() == 1);
  CHECK(t.iterations[0].number == 2);
  t.g.for_each_task([&](task_id id) { CHECK(t.g.iteration(id) == 2); });
  CHECK(t.g.size() == 8); // the 7 slices of step 2 and add_kernel
  auto r = replay(t.g);
  // nothing of step 1 delayed step 2: the same 97 us as in the whole graph
  CHECK(iteration_time(t.g, r, 2) == 97'000);
  auto all = dio::parse_kineto(two_steps(), "two_steps");
  CHECK_THROWS_WITH_AS(dio::keep_iterations(all, 5, 7), "daydream: keep_iterations: two_steps has no iteration in 5..7",
                       daydream::error);
  CHECK_THROWS_AS(dio::keep_iterations(all, 2, 1), daydream::error);
}

TEST_CASE("thread ids are named as the trace writes them: a legacy trace's string tids") {
  // Legacy Kineto writes "pid": "25738", "tid": "25772" as strings.
  const std::filesystem::path f =
      DAYDREAM_SOURCE_DIR "/tests/data/kineto_resnet50_v100_legacy/num_workers_0.steps5-8.json.gz";
  REQUIRE_MESSAGE(std::filesystem::exists(f), "missing bundled trace " << f.string());
  auto t = dio::load_kineto(f);
  CHECK(t.g.find_resource("thread 25738 (pid 25738, main)") != no_resource);
  // the autograd engine's thread, told by its *Backward operators (no evaluate_function
  // wrappers before PyTorch 1.9): all its work in an iteration is backward, the
  // AccumulateGrad calls that have no Backward in their name included
  auto bwd = t.g.find_resource("thread 25772 (pid 25738, backward)");
  REQUIRE(bwd != no_resource);
  std::size_t accumulate = 0, not_backward = 0;
  t.g.for_each_task([&](task_id x) {
    if (t.g.resource_of(x) != bwd || t.g.iteration(x) < 0) return;
    accumulate += t.g.name(x) == "torch::autograd::AccumulateGrad";
    not_backward += t.g.phase_of(x) != phase::backward;
  });
  CHECK(accumulate > 0);
  CHECK(not_backward == 0);
}
