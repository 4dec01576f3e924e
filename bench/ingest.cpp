// Benchmarks Kineto trace ingestion: MB/s of JSON and peak memory, on real traces and on synthetic ones of growing size.
// SPDX-License-Identifier: MIT
//
//     cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DDAYDREAM_BUILD_BENCHMARKS=ON
//     cmake --build build-bench --target daydream_bench_ingest && build-bench/bench/daydream_bench_ingest
#include <daydream/io/detail/kineto_decode.hpp>
#include <daydream/io/detail/kineto_stream.hpp>
#include <daydream/io/detail/trace_file.hpp>
#include <daydream/io/kineto.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#if defined(__linux__)
#  include <unistd.h> // getpid
#endif

namespace {

namespace fs = std::filesystem;
namespace dio = daydream::io;

// ---------------------------------------------------------------------------------- memory

/// Peak resident memory of the process since the last reset_peak_memory(), in bytes
/// (Linux: VmHWM, which /proc/self/clear_refs can reset; elsewhere -1).
double peak_memory() {
#if defined(__linux__)
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) * 1024.0;
#endif
  return -1;
}
double current_memory() {
#if defined(__linux__)
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) * 1024.0;
#endif
  return -1;
}
void reset_peak_memory() {
#if defined(__linux__)
  std::ofstream("/proc/self/clear_refs") << "5";
#endif
}

// ---------------------------------------------------------------------------------- inputs

/// Where the real traces are: $DAYDREAM_EXTRA_TRACES when set (as for the tests), else
/// `../shared/traces` beside the source tree.
const fs::path traces = [] {
  if (const char* env = std::getenv("DAYDREAM_EXTRA_TRACES"); env && *env) return fs::path(env);
  return fs::path(DAYDREAM_SHARED_TRACES);
}();

/// A real trace decompressed once into a plain .json file in the temporary directory
/// (MB/s are counted on the JSON text, so the plain file is what the number is about).
fs::path plain_copy(const char* rel) {
  static std::map<std::string, fs::path> done;
  auto& p = done[rel];
  if (!p.empty()) return p;
  auto src = traces / rel;
  if (!fs::exists(src)) return {};
  auto buf = dio::detail::read_trace_file(src);
  p = fs::temp_directory_path() / ("daydream_bench_" + src.filename().string());
  if (p.extension() == ".gz") p.replace_extension();
  std::ofstream(p, std::ios::binary).write(buf.data(), static_cast<std::streamsize>(buf.size()));
  return p;
}

/// A synthetic Kineto trace of `iterations` training iterations, shaped like the real
/// ones: a main thread with ProfilerStep#N, nn.Module python frames, operators and
/// launches; an autograd thread with evaluate_function and fwdbwd flows; kernels on a
/// stream with launch flows; [memory] events; an optimizer step and a device sync.
std::string synthetic_trace(int iterations) {
  std::string s;
  s.reserve(std::size_t(iterations) * 2'400'000);
  s += "{\"schemaVersion\": 1, \"distributedInfo\": {\"rank\": 0, \"world_size\": 1}, \"traceEvents\": [\n";
  char buf[1024];
  char args[128]; // the extra arguments of one event, built before the event itself
  long long corr = 1, ext = 1, flow = 1;
  double t = 1'000'000.0;
  auto x = [&](const char* cat, const char* name, int tid, double ts, double dur, const char* extra) {
    std::snprintf(buf, sizeof buf,
                  "{\"ph\": \"X\", \"cat\": \"%s\", \"name\": \"%s\", \"pid\": 100, \"tid\": %d, \"ts\": %.3f, "
                  "\"dur\": %.3f, \"args\": {\"External id\": %lld%s}},\n",
                  cat, name, tid, ts, dur, ext++, extra);
    s += buf;
  };
  auto launch = [&](int tid, double ts, const char* kernel, double kts, double kdur) {
    std::snprintf(args, sizeof args, ", \"cbid\": 211, \"correlation\": %lld", corr);
    x("cuda_runtime", "cudaLaunchKernel", tid, ts, 4.0, args);
    std::snprintf(buf, sizeof buf,
                  "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"%s\", \"pid\": 0, \"tid\": 7, \"ts\": %.3f, \"dur\": %.3f, "
                  "\"args\": {\"queued\": 0, \"device\": 0, \"context\": 1, \"stream\": 7, \"correlation\": %lld, "
                  "\"registers per thread\": 64, \"shared memory\": 0, \"grid\": [128, 1, 1], \"block\": [256, 1, 1]}},\n"
                  "{\"ph\": \"s\", \"id\": %lld, \"pid\": 100, \"tid\": %d, \"ts\": %.3f, \"cat\": \"ac2g\", \"name\": \"ac2g\"},\n"
                  "{\"ph\": \"f\", \"id\": %lld, \"pid\": 0, \"tid\": 7, \"ts\": %.3f, \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"},\n",
                  kernel, kts, kdur, corr, corr, tid, ts, corr, kts);
    s += buf;
    ++corr;
  };
  constexpr int layers = 200;
  double gpu = t;
  for (int it = 0; it < iterations; ++it) {
    const double step = t;
    std::snprintf(buf, sizeof buf, "ProfilerStep#%d", it + 1);
    std::string step_name = buf;
    double fwd_start = t + 5;
    t = fwd_start;
    std::vector<long long> flows;
    for (int l = 0; l < layers; ++l) {
      std::snprintf(buf, sizeof buf, "nn.Module: Conv2d_%d", l);
      std::string mod = buf;
      x("python_function", mod.c_str(), 100, t, 30, ", \"Python id\": 1, \"Python parent id\": 0");
      x("cpu_op", "aten::conv2d", 100, t + 2, 26,
        ", \"Sequence number\": 7, \"Input Dims\": [[32, 64, 56, 56], [64, 64, 3, 3], [], [], [], [], []], "
        "\"Input type\": [\"float\", \"float\", \"\", \"ScalarList\", \"ScalarList\", \"ScalarList\", \"Scalar\"]");
      std::snprintf(buf, sizeof buf,
                    "{\"ph\": \"s\", \"id\": %lld, \"pid\": 100, \"tid\": 100, \"ts\": %.3f, \"cat\": \"fwdbwd\", \"name\": \"fwdbwd\"},\n",
                    flow, t + 2);
      s += buf;
      flows.push_back(flow++);
      std::snprintf(buf, sizeof buf,
                    "{\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\", \"pid\": 100, \"tid\": 100, "
                    "\"ts\": %.3f, \"args\": {\"Total Reserved\": 0, \"Total Allocated\": %d, \"Bytes\": 1048576, \"Addr\": 1, "
                    "\"Device Id\": 0, \"Device Type\": 1}},\n",
                    t + 5, 1048576 * (l + 1));
      s += buf;
      gpu = std::max(gpu, t + 20);
      launch(100, t + 15, "void cudnn::winograd_fwd_kernel<float, 4>(cudnn::winograd::Params)", gpu, 25);
      gpu += 26;
      t += 32;
    }
    // backward on the autograd thread
    const double bwd_call = t;
    x("user_annotation", "## backward ##", 100, bwd_call, layers * 40.0 + 30, "");
    double b = bwd_call + 10;
    for (int l = layers - 1; l >= 0; --l) {
      x("cpu_op", "autograd::engine::evaluate_function: ConvolutionBackward0", 101, b, 36, ", \"Sequence number\": 7, \"Fwd thread id\": 1");
      x("cpu_op", "ConvolutionBackward0", 101, b + 1, 34, ", \"Sequence number\": 7, \"Fwd thread id\": 1");
      std::snprintf(buf, sizeof buf,
                    "{\"ph\": \"f\", \"id\": %lld, \"pid\": 100, \"tid\": 101, \"ts\": %.3f, \"cat\": \"fwdbwd\", \"name\": \"fwdbwd\", \"bp\": \"e\"},\n",
                    flows[std::size_t(l)], b + 1);
      s += buf;
      std::snprintf(buf, sizeof buf,
                    "{\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\", \"pid\": 100, \"tid\": 101, "
                    "\"ts\": %.3f, \"args\": {\"Total Reserved\": 0, \"Total Allocated\": %d, \"Bytes\": -1048576, \"Addr\": 1, "
                    "\"Device Id\": 0, \"Device Type\": 1}},\n",
                    b + 30, 1048576 * l);
      s += buf;
      gpu = std::max(gpu, b + 20);
      launch(101, b + 10, "void cudnn::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int, int, int, float const*)", gpu, 30);
      gpu += 31;
      b += 40;
    }
    t = bwd_call + layers * 40.0 + 35;
    x("user_annotation", "Optimizer.step#SGD.step", 100, t, 60, "");
    gpu = std::max(gpu, t + 20);
    launch(100, t + 10, "void at::native::multi_tensor_apply_kernel<float>(int)", gpu, 40);
    gpu += 41;
    t += 65;
    std::snprintf(args, sizeof args, ", \"cbid\": 165, \"correlation\": %lld", corr++);
    const double sync_end = std::max(t + 5, gpu + 3);
    x("cuda_runtime", "cudaDeviceSynchronize", 100, t, sync_end - t, args);
    t = sync_end + 5;
    x("user_annotation", step_name.c_str(), 100, step, t - step, "");
    t += 40;
  }
  s += "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 100, \"tid\": 0, \"args\": {\"name\": \"python\"}}\n]}\n";
  return s;
}

const std::string& synthetic(int iterations) {
  static std::map<int, std::string> cache;
  auto& s = cache[iterations];
  if (s.empty()) s = synthetic_trace(iterations);
  return s;
}

void memory_counters(benchmark::State& state, double before) {
  const double peak = peak_memory();
  if (peak >= 0) {
    state.counters["peak_MB"] = peak / 1e6;
    state.counters["extra_peak_MB"] = (peak - before) / 1e6;
  }
}

// ---------------------------------------------------------------------------------- benchmarks

/// Times load_kineto on the file `p`, whose JSON text is `json_bytes` long; reports MB/s of
/// JSON, events/s, the graph's size and the peak memory of the process while loading.
void time_load(benchmark::State& state, const fs::path& p, std::size_t json_bytes, const dio::ingest_options& o = {}) {
  const double before = current_memory();
  reset_peak_memory();
  std::size_t events = 0, tasks = 0, deps = 0;
  for (auto _ : state) {
    auto t = dio::load_kineto(p, o);
    events = t.report.events;
    tasks = t.g.size();
    deps = t.g.core().live_edges;
    benchmark::DoNotOptimize(t.g.size());
  }
  state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(json_bytes));
  state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(events));
  state.counters["json_MB"] = double(json_bytes) / 1e6;
  state.counters["events"] = double(events);
  state.counters["tasks"] = double(tasks);
  state.counters["deps"] = double(deps);
  memory_counters(state, before);
}

/// The size of the JSON text of a trace file (inflated for gzip), read without holding it.
std::size_t json_size(const fs::path& p) {
  auto in = dio::detail::trace_reader::open(p);
  std::vector<char> chunk(std::size_t(1) << 20);
  std::size_t n = 0;
  while (const auto k = in.read(chunk.data(), chunk.size())) n += k;
  return n;
}

/// load_kineto on a real trace, plain JSON (decompressed once beforehand) or gzip as stored;
/// range(0): ingest_options::threads (1: the reading thread decodes; 0: one per core).
void load_real(benchmark::State& state, const char* rel, bool plain) {
  fs::path p = plain ? plain_copy(rel) : traces / rel;
  if (p.empty() || !fs::exists(p)) {
    state.SkipWithError("trace not found");
    return;
  }
  dio::ingest_options o;
  o.threads = static_cast<unsigned>(state.range(0));
  time_load(state, p, json_size(p), o);
}

/// The JSON pass alone (simdjson On-Demand into event tables), on the plain real trace.
void decode_real(benchmark::State& state, const char* rel) {
  auto p = plain_copy(rel);
  if (p.empty()) {
    state.SkipWithError("trace not found");
    return;
  }
  auto buf = dio::detail::read_trace_file(p);
  for (auto _ : state) {
    simdjson::ondemand::parser parser;
    dio::detail::decoded_trace d;
    dio::detail::decode_kineto(parser, buf.padded(), p.string(), d);
    benchmark::DoNotOptimize(d.cpu.size());
  }
  state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(buf.size()));
}

/// parse_kineto on synthetic traces of growing size (iterations x ~2.3 MB of JSON).
void BM_parse_synthetic(benchmark::State& state) {
  const auto& json = synthetic(static_cast<int>(state.range(0)));
  const double before = current_memory();
  reset_peak_memory();
  std::size_t events = 0, tasks = 0;
  for (auto _ : state) {
    auto t = dio::parse_kineto(json, "synthetic");
    events = t.report.events;
    tasks = t.g.size();
    benchmark::DoNotOptimize(t.g.size());
  }
  state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(json.size()));
  state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(events));
  state.counters["json_MB"] = double(json.size()) / 1e6;
  state.counters["events"] = double(events);
  state.counters["tasks"] = double(tasks);
  memory_counters(state, before);
}
BENCHMARK(BM_parse_synthetic)->RangeMultiplier(4)->Range(1, 64)->Unit(benchmark::kMillisecond)->UseRealTime();

constexpr const char* mlp_ddp = "hta_mlp_ddp_v100_2rank/df_index_resolver.json.gz";
constexpr const char* resnet50 = "hta_resnet50_ddp_v100_ns/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz";
constexpr const char* dlrm = "param_dlrm_8rank_v100/kineto/worker0_step_12.1694128201545.pt.trace.json";

/// Reading the stored file alone, a window at a time as load_kineto reads it: for a
/// `.gz`, zlib's inflate (what a `.gz` load costs beyond the load of the plain JSON).
void read_real(benchmark::State& state, const char* rel) {
  const auto p = traces / rel;
  if (!fs::exists(p)) {
    state.SkipWithError("trace not found");
    return;
  }
  std::size_t bytes = 0;
  std::vector<char> window(dio::detail::default_window_bytes);
  for (auto _ : state) {
    auto in = dio::detail::trace_reader::open(p);
    bytes = 0;
    while (const auto k = in.read(window.data(), window.size())) bytes += k;
    benchmark::DoNotOptimize(window.data());
  }
  state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(bytes));
}

/// Reading and decoding the plain real trace as load_kineto does (a window at a time,
/// from the file), without building the graph; range(0): the decoding threads (1: the
/// reading thread decodes; 0: one per core, as load_kineto by default).
void stream_real(benchmark::State& state, const char* rel) {
  auto p = plain_copy(rel);
  if (p.empty()) {
    state.SkipWithError("trace not found");
    return;
  }
  for (auto _ : state) {
    auto in = dio::detail::trace_reader::open(p);
    dio::detail::decoded_trace d;
    dio::detail::stream_kineto(in, d, 0, static_cast<unsigned>(state.range(0)));
    benchmark::DoNotOptimize(d.cpu.size());
  }
  state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(fs::file_size(p)));
}

BENCHMARK_CAPTURE(read_real, mlp_ddp_54MB_gz, mlp_ddp)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(decode_real, mlp_ddp_54MB, mlp_ddp)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(stream_real, mlp_ddp_54MB, mlp_ddp)->ArgName("threads")->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(load_real, mlp_ddp_54MB_json, mlp_ddp, true)->ArgName("threads")->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(load_real, mlp_ddp_54MB_gz, mlp_ddp, false)->ArgName("threads")->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(load_real, resnet50_15MB_json, resnet50, true)->ArgName("threads")->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(load_real, dlrm_rank0_1MB_json, dlrm, true)->ArgName("threads")->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();


/// load_kineto on the trace named by DAYDREAM_BENCH_TRACE (any size; run once): how a
/// trace of your own, or the 1 GiB one of scripts/gen_big_trace.py, loads, and the peak
/// resident memory of the process while it does.
///
///     python3 scripts/gen_big_trace.py /tmp/big.json
///     DAYDREAM_BENCH_TRACE=/tmp/big.json build-bench/bench/daydream_bench_ingest --benchmark_filter=load_file
void load_file(benchmark::State& state, const fs::path& p) {
  dio::ingest_options o;
  o.threads = static_cast<unsigned>(state.range(0));
  time_load(state, p, json_size(p), o);
}
/// The JSON pass alone on the same file (read into memory first, not timed): the
/// decode speed load_file is compared with.
void decode_file(benchmark::State& state, const fs::path& p) {
  auto buf = dio::detail::read_trace_file(p);
  for (auto _ : state) {
    simdjson::ondemand::parser parser;
    dio::detail::decoded_trace d;
    dio::detail::decode_kineto(parser, buf.padded(), p.string(), d);
    benchmark::DoNotOptimize(d.cpu.size());
  }
  state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(buf.size()));
}
/// Reading and decoding the file as load_kineto does, without building the graph.
void stream_file(benchmark::State& state, const fs::path& p) {
  std::size_t bytes = 0;
  for (auto _ : state) {
    auto in = dio::detail::trace_reader::open(p);
    dio::detail::decoded_trace d;
    dio::detail::stream_kineto(in, d);
    bytes = in.bytes_read();
    benchmark::DoNotOptimize(d.cpu.size());
  }
  state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(bytes));
}
[[maybe_unused]] const bool load_file_registered = [] {
  if (const char* p = std::getenv("DAYDREAM_BENCH_TRACE")) {
    benchmark::RegisterBenchmark("decode_file", decode_file, fs::path(p))
        ->Iterations(1)
        ->Unit(benchmark::kSecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark("stream_file", stream_file, fs::path(p))
        ->Iterations(1)
        ->Unit(benchmark::kSecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark("load_file", load_file, fs::path(p))
        ->ArgName("threads")
        ->Arg(1)
        ->Arg(0)
        ->Iterations(1)
        ->Unit(benchmark::kSecond)
        ->UseRealTime();
  }
  return true;
}();

/// A job's rank traces loaded at once: load_kineto_files on `range(0)` copies of the
/// bundled ResNet-50 trace (plain JSON; the copies are distinct files) with `range(1)`
/// threads (0: one per hardware thread). Throughput is MB/s of JSON over all files; the
/// speedup is threads:N against threads:1 of the same run.
void load_files(benchmark::State& state) {
  const auto one = plain_copy(resnet50);
  if (one.empty()) {
    state.SkipWithError("trace not found");
    return;
  }
  std::vector<fs::path> files;
  for (std::int64_t k = 0; k < state.range(0); ++k) {
    auto p = fs::temp_directory_path() / ("daydream_bench_rank" + std::to_string(k) + ".json");
    if (!fs::exists(p)) fs::copy_file(one, p);
    files.push_back(p);
  }
  const auto bytes = std::int64_t(fs::file_size(one)) * state.range(0);
  std::size_t tasks = 0;
  for (auto _ : state) {
    auto all = dio::load_kineto_files(files, {}, unsigned(state.range(1)));
    tasks = 0;
    for (auto& t : all) tasks += t.g.size();
    benchmark::DoNotOptimize(tasks);
  }
  state.SetBytesProcessed(std::int64_t(state.iterations()) * bytes);
  state.counters["files"] = double(files.size());
  state.counters["tasks"] = double(tasks);
  state.counters["hardware_threads"] = double(std::thread::hardware_concurrency());
}
BENCHMARK(load_files)
    ->ArgsProduct({{8}, {1, 2, 0}})
    ->ArgNames({"files", "threads"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

} // namespace
