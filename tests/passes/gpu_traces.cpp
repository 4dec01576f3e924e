// Runs the gpu pass on real traces: the launch shapes and deviceProperties the ingest keeps, H100 -> H200 and back, a ROCm trace without registers, the same GPU as target.
// SPDX-License-Identifier: MIT
#include <daydream/graph.hpp>
#include <daydream/io/device_catalogue.hpp>
#include <daydream/io/kineto.hpp>
#include <daydream/pass.hpp>
#include <daydream/replay.hpp>
#include <daydream/select.hpp>
#include <daydream/passes/gpu.hpp>

#include <doctest/doctest.h>
#include <support/corpus.hpp>

#include <algorithm>
#include <cstdint>
#include <string>

using namespace daydream;
using namespace daydream::passes;

namespace {

gpu on_gpu_named(std::string target) { return gpu{.target = std::move(target), .catalogue = io::bundled_device_catalogue()}; }

time_ns kernel_time(const graph& g) {
  time_ns t = 0;
  for (auto k : tasks<gpu_kernel>(g)) t += g.duration(k);
  return t;
}

std::int64_t count_of(const pass_report& rep, std::string_view key) {
  for (auto& r : rep.items)
    if (r.key == key) return r.value.count;
  return 0;
}

} // namespace

TEST_CASE("the ingest keeps each kernel's launch and the trace's deviceProperties (H200 MLP)") {
  auto t = io::load_kineto(testing::bundled("ground_truth/h200/mlp_fp32.json.gz"));
  REQUIRE(t.g.devices().size() == 1);
  const auto& d = t.g.devices().front();
  CHECK(d.name == "NVIDIA H200");
  CHECK(d.sm_count == 132);
  CHECK(d.registers_per_sm == 65536);
  CHECK(d.shared_memory_per_sm == 233472);
  CHECK(d.shared_memory_per_block_optin == 232448);
  CHECK(d.max_threads_per_sm == 2048);
  CHECK(d.memory_bytes == 150109880320ull);
  CHECK(d.compute_major == 9);
  // Its first kernel by trace time (a distribution_elementwise_grid_stride_kernel): grid
  // [128, 1, 1], block [256, 1, 1], 44 registers, no shared memory, 12% occupancy (read
  // from the file with a JSON tool).
  task_id first = no_task;
  for (auto k : tasks<gpu_kernel>(t.g))
    if (first == no_task || t.g.trace_start(k) < t.g.trace_start(first)) first = k;
  REQUIRE(first != no_task);
  const auto& l = t.g.payload(t.g.as<gpu_kernel>(first)).launch;
  CHECK(l.blocks == 128);
  CHECK(l.threads == 256);
  CHECK(l.registers == 44);
  CHECK(l.shared_memory == 0);
  CHECK(l.occupancy_pct == 12);
  CHECK(l.has_resources());
  std::size_t with = 0, all = 0;
  for (auto k : tasks<gpu_kernel>(t.g)) {
    ++all;
    with += k.payload().launch.has_resources();
  }
  CHECK(with == all);
}

TEST_CASE("gpu on real traces: H100 -> H200 and back; the same GPU changes nothing") {
  for (std::string name : {"gpt2_bf16", "resnet50_amp_bf16"}) {
    CAPTURE(name);
    auto h100 = io::load_kineto(testing::bundled("ground_truth/h100-80gb-hbm3/" + name + ".json.gz"));
    auto h200 = io::load_kineto(testing::bundled("ground_truth/h200/" + name + ".json.gz"));
    auto up = h100.g;
    auto rep = apply(up, on_gpu_named("H200"));
    CHECK(rep.applied);
    CHECK(rep.value("source -> target") == "H100-SXM -> H200");
    CHECK(kernel_time(up) < kernel_time(h100.g)); // 4.8 TB/s against 3.35
    std::int64_t ruled = 0;
    for (auto key : {"kernels scaled by waves (launch shape on both GPUs)", "small kernels, one wave on both GPUs (clock)",
                     "kernels scaled by their class ratio (no launch shape or occupancy rules)",
                     "kernels unchanged (a figure of the catalogue is null)"})
      ruled += std::max<std::int64_t>(count_of(rep, key), 0);
    std::int64_t kernels = 0;
    for ([[maybe_unused]] auto k : tasks<gpu_kernel>(h100.g)) ++kernels;
    CHECK(ruled == kernels);
    CHECK(count_of(rep, "kernels scaled by waves (launch shape on both GPUs)") > 0);
    auto down = h200.g;
    CHECK(apply(down, on_gpu_named("H100")).applied);
    CHECK(kernel_time(down) > kernel_time(h200.g));
    auto same = h100.g;
    CHECK_FALSE(apply(same, on_gpu_named("H100")).applied);
    CHECK(replay(same).makespan == replay(h100.g).makespan);
  }
}

TEST_CASE("gpu on a ROCm trace: kernels without registers fall back to the class ratio, counted") {
  auto t = io::load_kineto(testing::bundled("hta_amd_mi250_minitoy/mi250_minitoy_train_ROCm6_2_kineto.json.gz"));
  auto g = t.g;
  // Its deviceProperties name the GPU "AMD Radeon Graphics": source= says which it is.
  REQUIRE(t.g.devices().size() >= 1);
  CHECK(t.g.devices().front().name == "AMD Radeon Graphics");
  CHECK_THROWS_AS(apply(g, on_gpu_named("MI300X")), usage_error);
  auto rep = apply(g, gpu{.target = "MI300X", .source = "MI250X", .catalogue = io::bundled_device_catalogue()});
  CHECK(rep.applied);
  CHECK(count_of(rep, "kernels scaled by waves (launch shape on both GPUs)") == 0);
  CHECK(count_of(rep, "kernels scaled by their class ratio (no launch shape or occupancy rules)") > 0);
  CHECK(count_of(rep, "kernels without a recorded launch (grid, block, registers): class ratio") > 0);
  CHECK(kernel_time(g) < kernel_time(t.g));
}
