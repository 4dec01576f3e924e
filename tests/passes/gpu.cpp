// Tests of the gpu pass (and semantics/retarget.hpp) on hand-built graphs: each rule's factor by hand from the catalogue's figures.
// SPDX-License-Identifier: MIT
#include <daydream/graph.hpp>
#include <daydream/io/device_catalogue.hpp>
#include <daydream/pass.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/registry/specs/gpu.hpp>
#include <daydream/replay.hpp>
#include <daydream/select.hpp>
#include <daydream/passes/gpu.hpp>
#include <daydream/semantics/retarget.hpp>
#include "builder.hpp"
#include <support/pass_laws.hpp>

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

using namespace daydream;
using namespace daydream::passes;

namespace {

const device_catalogue& gpus() { return io::bundled_device_catalogue(); }

gpu to(std::string target, std::string source = "") {
  return gpu{.target = std::move(target), .source = std::move(source), .catalogue = gpus()};
}

/// One stream, one thread; kernels added with their launch shape. The graph records the
/// GPU `recorded` (Kineto's deviceProperties name), none when empty.
struct one_stream {
  graph g;
  resource_id thread = g.add_resource({"thread 1", resource_kind::cpu_thread});
  resource_id stream = g.add_resource({"stream 7", resource_kind::gpu_stream, sharing::exclusive, 0, 0});
  resource_id copy = g.add_resource({"copy", resource_kind::copy_engine, sharing::exclusive, 0, 0});
  explicit one_stream(std::string recorded = "") {
    if (!recorded.empty()) g.set_devices({recorded_device{.id = 0, .name = recorded}});
  }
  task_id kernel(std::string name, time_ns d, kernel_launch l = {}) {
    return g.add(gpu_kernel{.device = 0, .stream = 7, .launch = l}, {.name = name, .duration = d, .resource = stream}).id;
  }
};

/// A launch with registers and shared memory recorded.
kernel_launch shape(std::uint32_t blocks, std::uint16_t threads, std::uint8_t regs, std::uint32_t smem = 0) {
  return {.blocks = blocks, .shared_memory = smem, .threads = threads, .registers = regs, .recorded = 1};
}

} // namespace

TEST_CASE("gpu: a memory-bound kernel scales by exactly the bandwidth ratio (A100 80GB -> H100: 2039 / 3352)") {
  // Without a launch shape: the class ratio. With 9504 blocks of 256 threads x 32
  // registers (8 per SM on both: 864 a wave on the A100's 108 SMs, 1056 on the H100's
  // 132), the grid fills 11 and 9 whole waves: the same ratio.
  for (auto l : {kernel_launch{}, shape(9504, 256, 32)}) {
    one_stream s("NVIDIA A100-SXM4-80GB");
    auto k = s.kernel("void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>", 3'352'000, l);
    auto rep = apply(s.g, to("H100"));
    CHECK(rep.applied);
    CHECK(s.g.duration(k) == 2'039'000);
    CHECK(rep.value("source -> target") == "A100-SXM4-80GB -> H100-SXM");
  }
  auto r = retarget_kernel(gpus().at("A100"), gpus().at("H100"), kernel_class::memory_bound, numeric_precision::fp32,
                           false, shape(9504, 256, 32));
  CHECK(r.rule == retarget_rule::waves);
  CHECK(r.waves_source == 11);
  CHECK(r.waves_target == 9);
  CHECK(r.factor == doctest::Approx(2039.0 / 3352.0).epsilon(1e-12));
}

TEST_CASE("gpu: a compute-bound bf16 GEMM scales by the bf16 peak ratio (A100 312 -> H100 989.4 TFLOPS)") {
  one_stream s("NVIDIA A100-SXM4-80GB");
  auto k = s.kernel("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_nn", 9'894'000);
  auto rep = apply(s.g, to("H100"));
  CHECK(s.g.duration(k) == 3'120'000);
  CHECK(rep.value("kernels scaled by their class ratio (no launch shape or occupancy rules)") == "1 kernels, 9.89 ms -> 3.12 ms");
  // FP32: the FP32 peak (19.5 -> 66.9); an FP32 convolution runs on TF32 tensor cores
  // on the target (156 FP32 on the A100 -> 494.7 TF32 on the H100? no: FP32 source rate 19.5).
  auto sg = retarget_kernel(gpus().at("A100"), gpus().at("H100"), kernel_class::compute_bound,
                            numeric_precision::fp32, false, {});
  CHECK(sg.factor == doctest::Approx(19.5 / 66.9));
  CHECK(sg.on_target == numeric_precision::fp32);
  auto conv = retarget_kernel(gpus().at("V100"), gpus().at("H100"), kernel_class::compute_bound,
                              numeric_precision::fp32, true, {});
  CHECK(conv.on_target == numeric_precision::tf32);
  CHECK(conv.factor == doctest::Approx(15.7 / 494.7));
  // A precision the target lacks falls back: bf16 on a V100 is taken at its FP16 rate.
  auto bf = retarget_kernel(gpus().at("A100"), gpus().at("V100"), kernel_class::compute_bound,
                            numeric_precision::bf16, false, {});
  CHECK(bf.on_target == numeric_precision::fp16);
  CHECK(bf.factor == doctest::Approx(312.0 / 125.0));
}

TEST_CASE("gpu: a kernel in one wave on both GPUs scales by the clock ratio (A100 1410 -> H100 1980 MHz)") {
  one_stream s("NVIDIA A100-SXM4-80GB");
  auto k = s.kernel("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>", 1'980'000,
                    shape(10, 128, 32));
  auto rep = apply(s.g, to("H100"));
  CHECK(s.g.duration(k) == 1'410'000);
  CHECK(rep.value("small kernels, one wave on both GPUs (clock)") == "1 kernels, 1.98 ms -> 1.41 ms");
  // The H200's datasheet gives no clock: the one its FP32 peak implies, 67e12 / (2 x 128 x 132).
  bool derived = false;
  auto c = clock_of(gpus().at("H200"), derived);
  CHECK(derived);
  CHECK(*c == doctest::Approx(67e12 / (2.0 * 128 * 132)));
  auto r = retarget_kernel(gpus().at("H100"), gpus().at("H200"), kernel_class::memory_bound, numeric_precision::bf16,
                           false, shape(10, 128, 32));
  CHECK(r.rule == retarget_rule::one_wave);
  CHECK(r.clock_fallback);
  CHECK(r.factor == doctest::Approx(1980e6 / (67e12 / (2.0 * 128 * 132))));
  // One wave that reaches every SM (320 blocks of 512 threads x 27 registers: 4 per SM,
  // 528 a wave on 132 SMs; a multi_tensor_apply kernel) is throughput-bound: the bandwidth ratio.
  auto full = retarget_kernel(gpus().at("H100"), gpus().at("H200"), kernel_class::memory_bound,
                              numeric_precision::fp32, false, shape(320, 512, 27));
  CHECK(full.waves_source == 1);
  CHECK(full.waves_target == 1);
  CHECK(full.rule == retarget_rule::waves);
  CHECK(full.factor == doctest::Approx(3352.0 / 4800.0));
}

TEST_CASE("gpu: blocks per SM recomputed on the target for a register, a shared-memory and a warp limit") {
  const auto& a100 = gpus().at("A100");
  const auto& h100 = gpus().at("H100");
  const auto& v100 = gpus().at("V100");
  // 256 threads x 70 registers: a warp takes ceil(70 x 32 / 256) x 256 = 2304 registers;
  // 4 x floor(16384 / 2304) = 28 warps, floor(28 / 8) = 3 blocks on the A100 and the H100
  // (both 64 K registers); the V100 likewise 3.
  auto regs = retarget_kernel(a100, h100, kernel_class::memory_bound, numeric_precision::fp32, false,
                              shape(100'000, 256, 70));
  CHECK(regs.blocks_per_sm_source == 3);
  CHECK(regs.blocks_per_sm_target == 3);
  CHECK(regs.waves_source == 309); // ceil(100000 / 324)
  CHECK(regs.waves_target == 253); // ceil(100000 / 396)
  // 128 threads, 40,000 B of shared memory: + 1 KiB reserve = 41,024, rounded to 128 B:
  // 41,088; A100 floor(167,936 / 41,088) = 4; H100 floor(233,472 / 41,088) = 5; V100 (no
  // reserve, 256-B units: 40,192) floor(98,304 / 40,192) = 2.
  auto smem = retarget_kernel(a100, h100, kernel_class::memory_bound, numeric_precision::fp32, false,
                              shape(100'000, 128, 32, 40'000));
  CHECK(smem.blocks_per_sm_source == 4);
  CHECK(smem.blocks_per_sm_target == 5);
  auto smem_v = retarget_kernel(v100, a100, kernel_class::memory_bound, numeric_precision::fp32, false,
                                shape(100'000, 128, 32, 40'000));
  CHECK(smem_v.blocks_per_sm_source == 2);
  // 768 threads x 16 registers: 24 warps a block, floor(64 / 24) = 2 on the A100 and H100.
  auto warps = retarget_kernel(a100, h100, kernel_class::memory_bound, numeric_precision::fp32, false,
                               shape(100'000, 768, 16));
  CHECK(warps.blocks_per_sm_source == 2);
  CHECK(warps.blocks_per_sm_target == 2);
  // The factor: bandwidth ratio x block slots (waves x blocks/SM x SMs) target / source.
  CHECK(smem.factor ==
        doctest::Approx(2039.0 / 3352.0 * (double(smem.waves_target) * 5 * 132) / (double(smem.waves_source) * 4 * 108)));
}

TEST_CASE("gpu: the same GPU as target changes nothing; the launch floor; copies, collectives, CPU") {
  {
    one_stream s("NVIDIA H100 80GB HBM3");
    auto k = s.kernel("sm90_xmma_gemm_bf16bf16_bf16f32", 1'000'000, shape(264, 128, 32));
    auto rep = apply(s.g, to("H100-SXM"));
    CHECK_FALSE(rep.applied);
    CHECK(s.g.duration(k) == 1'000'000);
  }
  {
    // 1.5 us on the A100 -> 0.91 us on the H100 by bandwidth: floored at 1 us.
    one_stream s("NVIDIA A100-SXM4-80GB");
    auto k = s.kernel("void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>", 1'500);
    auto fast = s.kernel("void at::native::vectorized_elementwise_kernel<4, at::native::MulFunctor<float>>", 800);
    auto rep = apply(s.g, to("H100"));
    CHECK(s.g.duration(k) == 1'000);
    CHECK(s.g.duration(fast) == 800); // shorter than the floor already: unchanged
    CHECK(rep.value("kernels at the launch floor (1 us)") == "2 kernels");
  }
  {
    one_stream s("NVIDIA A100-SXM4-80GB");
    auto h2d = s.g.add(memcpy_task{.direction = copy_kind::h2d, .bytes = 1 << 20},
                       {.name = "Memcpy HtoD", .duration = 128'000, .resource = s.copy});
    auto d2d = s.g.add(memcpy_task{.direction = copy_kind::d2d, .bytes = 1 << 20},
                       {.name = "Memcpy DtoD", .duration = 3'352'000, .resource = s.copy});
    auto link = s.g.add_resource({"nccl", resource_kind::link});
    auto ar = s.g.add(comm_task{.op = comm_op::all_reduce, .bytes = 1 << 20},
                      {.name = "ncclKernel_AllReduce", .duration = 900'000, .resource = link});
    auto c = s.g.add(cpu_task{}, {.name = "aten::add", .duration = 10'000, .resource = s.thread, .gap = 4'000});
    apply(s.g, gpu{.target = "H100", .cpu = 2, .catalogue = gpus()});
    CHECK(s.g.duration(h2d) == 64'000);     // PCIe 4 (64 GB/s) -> 5 (128 GB/s)
    CHECK(s.g.duration(d2d) == 2'039'000);  // memory bandwidth
    CHECK(s.g.duration(ar) == 600'000);     // NVLink 3 (600 GB/s) -> 4 (900 GB/s)
    CHECK(s.g.duration(c) == 5'000);        // cpu=2
    CHECK(s.g.gap(c) == 2'000);
  }
}

TEST_CASE("gpu: a kernel with FLOPs and bytes is classified by its intensity against each GPU's ridge point") {
  // FP32 (no precision in the names, no compute-bound kernel to lend one): ridge points
  // A100 19.5e12 / 2039e9 = 9.56 and H100 66.9e12 / 3352e9 = 19.96 FLOP per byte.
  auto run = [](std::string name, time_ns d, std::uint64_t flops, std::uint64_t bytes, kernel_launch l = {}) {
    one_stream s("NVIDIA A100-SXM4-80GB");
    auto k = s.g.add(gpu_kernel{.device = 0, .stream = 7, .bytes = bytes, .launch = l, .flops = flops},
                     {.name = name, .duration = d, .resource = s.stream});
    auto rep = apply(s.g, to("H100"));
    return std::pair{s.g.duration(k), rep};
  };
  // Intensity 5, below both ridges: memory-bound on both, although its name says GEMM:
  // the bandwidth ratio, 2039 / 3352.
  auto [mem, rep] = run("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n", 3'352'000, 5'000'000, 1'000'000);
  CHECK(mem == 2'039'000);
  CHECK(rep.value("kernels classified by shape (their operator's FLOPs and bytes against the ridge points)") ==
        "1 kernels (0 compute-bound, 1 memory-bound on the target; 0 of another class on the source), 3.35 ms -> 2.04 ms");
  CHECK(rep.value("kernels scaled by their roofline ratio (FLOPs and bytes, no launch shape or occupancy rules)") ==
        "1 kernels, 3.35 ms -> 2.04 ms");
  // Intensity 100, above both: compute-bound on both, although its name is no GEMM's:
  // the FP32 peak ratio, 19.5 / 66.9.
  CHECK(run("my_fused_kernel", 66'900'000, 100'000'000, 1'000'000).first == 19'500'000);
  // Intensity 15: compute-bound on the A100 (above 9.56), memory-bound on the H100 (below
  // 19.96): the roofline times' ratio (B / 3352e9) / (F / 19.5e12) = 19.5e12 / (15 x 3352e9).
  auto [between, rep2] = run("my_fused_kernel", 50'280'000, 15'000'000, 1'000'000);
  CHECK(between == 19'500'000);
  CHECK(rep2.value("kernels classified by shape (their operator's FLOPs and bytes against the ridge points)") ==
        "1 kernels (0 compute-bound, 1 memory-bound on the target; 1 of another class on the source), 50.3 ms -> 19.5 ms");
  // With a launch shape that fills whole waves on both (9504 blocks, 11 and 9 waves): the
  // same ratios through the wave rule.
  CHECK(run("my_fused_kernel", 3'352'000, 5'000'000, 1'000'000, shape(9504, 256, 32)).first == 2'039'000);
  // Without bytes, the name decides (a GEMM: the FP32 peak ratio).
  CHECK(run("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n", 66'900'000, 5'000'000, 0).first == 19'500'000);
  auto r = roofline_ratio(gpus().at("A100"), gpus().at("H100"), numeric_precision::bf16, false, 200e6, 1e6);
  REQUIRE(r);
  CHECK(r->on_source == kernel_class::compute_bound); // 200 > 312e12 / 2039e9 = 153
  CHECK(r->on_target == kernel_class::memory_bound);  // 200 < 989.4e12 / 3352e9 = 295
  CHECK(r->factor == doctest::Approx((1e6 / 3352e9) / (200e6 / 312e12)).epsilon(1e-12));
  CHECK_FALSE(roofline_ratio(gpus().at("A100"), gpus().at("H100"), numeric_precision::bf16, false, 200e6, 0));
}

TEST_CASE("gpu: with cluster keys each recorded collective is priced on the cluster by its bytes and group") {
  auto params = [](std::string s) { return from_params<gpu>(pass_params::parse("gpu", s)); };
  struct comms {
    one_stream s{"NVIDIA A100-SXM4-80GB"};
    resource_id link = s.g.add_resource({"nccl", resource_kind::link});
    task_id add(comm_op op, std::uint64_t bytes, std::uint32_t group) {
      return s.g.add(comm_task{.op = op, .bytes = bytes, .group_size = group},
                     {.name = "ncclKernel", .duration = 900'000, .resource = link}).id;
    }
  };
  {
    // Groups of two on machines of one GPU (bandwidth= alone): the NIC, 25 Gbit/s =
    // 3.125e9 B/s, 5 us. Ring all-reduce of 100 MB among 2: 2 x 5 us + 2 x 1/2 x 32 ms;
    // reduce-scatter and all-gather: 5 us + 1/2 x 32 ms.
    comms c;
    auto ar = c.add(comm_op::all_reduce, 100'000'000, 2);
    auto rs = c.add(comm_op::reduce_scatter, 100'000'000, 2);
    auto ag = c.add(comm_op::all_gather, 100'000'000, 2);
    auto one = c.add(comm_op::all_reduce, 100'000'000, 1);  // a group of one: by the interconnect
    auto other = c.add(comm_op::other, 100'000'000, 2);     // no cost function: likewise
    auto k = c.s.kernel("void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>", 3'352'000);
    auto rep = apply(c.s.g, params("target=H100,bandwidth=25Gbps"));
    CHECK(c.s.g.duration(ar) == 32'010'000);
    CHECK(c.s.g.duration(rs) == 16'005'000);
    CHECK(c.s.g.duration(ag) == 16'005'000);
    CHECK(c.s.g.duration(one) == 600'000); // NVLink 3 -> 4: 600 / 900 GB/s
    CHECK(c.s.g.duration(other) == 600'000);
    CHECK(c.s.g.duration(k) == 2'039'000); // kernels as without the cluster
    std::string priced;
    for (auto& item : rep.items)
      if (item.key.starts_with("collectives priced on the cluster (")) priced = item.key + ": " + item.text;
    CAPTURE(priced);
    CHECK(priced.find("NIC 25 Gbit/s 5 us") != std::string::npos);
    CHECK(priced.find("ring all-reduce): 3 of 5 ") != std::string::npos);
  }
  {
    // A group of 8 in machines of 8 GPUs stays on NVLink (300 GB/s, 1 us): 14 x 1 us +
    // 14/8 x 4 ms for 1.2 GB; a group of 16 spans two machines: the NIC bounds the ring.
    // The same GPU as target: only the collectives change.
    comms c;
    auto in = c.add(comm_op::all_reduce, 1'200'000'000, 8);
    auto across = c.add(comm_op::all_reduce, 1'200'000'000, 16);
    auto k = c.s.kernel("sm80_xmma_gemm_bf16bf16_bf16f32", 1'000'000, shape(264, 128, 32));
    auto rep = apply(c.s.g, params("target=A100,workers=16,workers_per_machine=8,nvlink=300GB/s,bandwidth=100Gbps"));
    CHECK(rep.applied);
    CHECK(c.s.g.duration(in) == 7'014'000);
    const double nic = 100e9 / 8; // 12.5 GB/s, 5 us
    CHECK(c.s.g.duration(across) == std::llround(30 * 5'000 + 30.0 / 16 * 1.2e9 / nic * 1e9));
    CHECK(c.s.g.duration(k) == 1'000'000);
  }
  // Tree all-reduce by algorithm=; bad keys are usage errors.
  {
    comms c;
    auto ar = c.add(comm_op::all_reduce, 100'000'000, 4);
    apply(c.s.g, params("target=H100,bandwidth=25Gbps,algorithm=tree"));
    CHECK(c.s.g.duration(ar) == 2 * 2 * (5'000 + 32'000'000)); // 2 ceil(log2 4) (alpha + n beta)
  }
  CHECK_THROWS_AS(params("target=H100,algorithm=spiral"), usage_error);
  CHECK_THROWS_AS(params("target=H100,workers=16,machines=3"), usage_error);
  CHECK_THROWS_WITH_AS(params("target=H100,ps=2"), doctest::Contains("parameter servers"), usage_error);
  CHECK_FALSE(params("target=H100").cluster);
}

TEST_CASE("gpu: errors name what is wrong") {
  one_stream none; // no deviceProperties
  none.kernel("sgemm", 1000);
  CHECK_THROWS_WITH_AS(apply(none.g, to("H100")), doctest::Contains("no deviceProperties"), usage_error);
  CHECK_THROWS_WITH_AS(apply(none.g, to("H100")), doctest::Contains("give source=NAME"), usage_error);
  auto with_source = none.g;
  CHECK(apply(with_source, to("H100", "A100")).applied);
  one_stream odd("Tesla V100-SXM2-16GB"); // not the catalogue's 32 GB entry
  odd.kernel("sgemm", 1000);
  CHECK_THROWS_WITH_AS(apply(odd.g, to("H100")), doctest::Contains("'Tesla V100-SXM2-16GB'"), usage_error);
  auto params = [](std::string s) { return pass_params::parse("gpu", s); };
  CHECK_THROWS_WITH_AS(from_params<gpu>(params("target=H900")), doctest::Contains("unknown target GPU 'H900'"),
                       usage_error);
  CHECK_THROWS_WITH_AS(from_params<gpu>(params("target=H900")), doctest::Contains("H100-SXM, H100-PCIe, H200"),
                       usage_error);
  CHECK_THROWS_WITH_AS(from_params<gpu>(params("cpu=2")), doctest::Contains("give target=NAME"), usage_error);
  CHECK_THROWS_AS(from_params<gpu>(params("target=H100,cpu=0")), usage_error);
  CHECK_THROWS_AS(from_params<gpu>(params("target=H100,source=nope")), usage_error);
  // A catalogue file with a negative or a missing figure: a usage error naming the field.
  const auto dir = std::filesystem::temp_directory_path() / "daydream-gpu-test";
  std::filesystem::create_directories(dir);
  auto file_with = [&](std::string name, std::string sm_count) {
    std::string fields = R"("name": "Lab-GPU", "vendor": "nvidia", "aliases": [], )" + sm_count +
                         R"("boost_clock_mhz": 1410, "memory_bandwidth_gbs": 2039, "memory_gb": 80, "l2_cache_mb": 40,
      "fp32_tflops": 19.5, "fp32_matrix_tflops": null, "tf32_tflops": 156, "fp16_tflops": 312, "bf16_tflops": 312,
      "fp8_tflops": null, "registers_per_sm": 65536, "max_registers_per_thread": 255, "register_allocation_unit": 256,
      "warp_allocation_granularity": 4, "shared_memory_per_sm_kib": 164, "shared_memory_per_block_kib": 163,
      "reserved_shared_memory_per_block_bytes": 1024, "shared_memory_allocation_unit_bytes": 128,
      "max_threads_per_sm": 2048, "max_warps_per_sm": 64, "max_blocks_per_sm": 32, "max_threads_per_block": 1024,
      "warp_size": 32, "interconnect": null, "interconnect_gbs": null, "pcie_generation": 4, "pcie_gbs": 64)";
    const auto path = dir / name;
    std::ofstream(path) << R"({"format": "daydream-devices", "version": 1, "references": {}, "devices": [{)" << fields
                        << "}]}";
    return path.string();
  };
  CHECK(from_params<gpu>(params("target=Lab-GPU,catalogue=" + file_with("good.json", R"("sm_count": 108, )")))
            .catalogue.find("Lab-GPU") != nullptr);
  CHECK_THROWS_WITH_AS(from_params<gpu>(params("target=H100,catalogue=" + file_with("negative.json", R"("sm_count": -108, )"))),
                       doctest::Contains("sm_count"), usage_error);
  CHECK_THROWS_WITH_AS(from_params<gpu>(params("target=H100,catalogue=" + file_with("missing.json", ""))),
                       doctest::Contains("sm_count"), usage_error);
  CHECK_THROWS_WITH_AS(from_params<gpu>(params("target=H100,catalogue=" + (dir / "none.json").string())),
                       doctest::Contains("none.json"), usage_error);
  // A good parameter set builds the pass.
  auto g = from_params<gpu>(params("target=B200,source=A100,cpu=1.5,launch_floor=2us"));
  CHECK(g.target == "B200");
  CHECK(g.launch_floor == 2'000);
}

TEST_CASE("gpu obeys the pass laws") {
  testing::check_pass_laws(to("H100", "A100"), testing::pass_graphs::pass_fixtures(), {.allow_refusal = true});
  testing::check_pass_laws(to("A100", "A100"), testing::pass_graphs::pass_fixtures(), {.allow_refusal = true});
  testing::check_pass_laws(to("MI300X", "V100"), testing::pass_graphs::pass_fixtures(), {.allow_refusal = true});
  auto clustered = to("H100", "A100");
  clustered.cluster = daydream::cluster{.machines = 2, .workers_per_machine = 8, .nvlink = {300e9, 1'000}};
  testing::check_pass_laws(clustered, testing::pass_graphs::pass_fixtures(), {.allow_refusal = true});
}
