// Strip and predict: remove the all-reduces of real multi-GPU traces, put them back with the ddp pass, compare with the measured iterations.
// SPDX-License-Identifier: MIT
#include <daydream/net/cluster.hpp>
#include <daydream/net/collective.hpp>
#include <daydream/daydream.hpp>
#include <daydream/io/kineto.hpp>
#include <daydream/passes/ddp.hpp>
#include <daydream/registry/specs/ddp.hpp>
#include <daydream/semantics/data_parallel.hpp>
#include <daydream/semantics/edit.hpp>
#include <daydream/semantics/gradients.hpp>

#include <doctest/doctest.h>
#include <support/corpus.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

using namespace daydream;
namespace dp = daydream::passes;

namespace {

/// A bundled trace (tests/data, examples/traces); throws when it is missing.
std::string traces(const char* rel) { return daydream::testing::bundled(rel).string(); }

bool is_all_reduce(const graph& g, task_id t) {
  return dp::is_recorded_communication(g, t) && g.name(t).find("AllReduce") != std::string_view::npos;
}

// The all-reduces the trace recorded, as gradients for ddp's explicit list: one per
// collective, of its recorded size, ready when the GPU work issued before its launch
// call ends. The size is the comm_task's (the nccl:all_reduce annotation's input dims);
// a trace recorded without shapes has none, and then the size of the device copy the
// framework made of the gradient just before the collective (compiled DDP clones each
// gradient) stands in. Collectives whose launch lies outside the trace are skipped.
struct recorded {
  std::vector<dp::gradient> grads;
  std::vector<std::pair<double, time_ns>> sizes; // (bytes, measured kernel time)
  std::size_t skipped = 0;
};

recorded recorded_all_reduces(const graph& g) {
  recorded out;
  g.for_each<comm_task>([&](handle<comm_task> h) {
    if (!is_all_reduce(g, h.id)) return;
    auto call = daydream::launch_of(g, h.id);
    if (call == no_task) { ++out.skipped; return; }
    std::uint64_t bytes = g.payload(h).bytes;
    task_id prev = no_task;
    for (auto d : g.predecessors(call))
      if (d.kind == dep_kind::cpu_order && g.resource_of(d.from) == g.resource_of(call)) prev = d.from;
    auto cur = prev;
    for (int steps = 0; bytes == 0 && cur != no_task && steps < 40; ++steps) {
      for (auto k : daydream::launched_by(g, cur))
        if (auto m = g.as<memcpy_task>(k); m && g.payload(m).bytes > 0) bytes = g.payload(m).bytes;
      task_id p = no_task;
      for (auto d : g.predecessors(cur))
        if (d.kind == dep_kind::cpu_order && g.resource_of(d.from) == g.resource_of(cur)) p = d.from;
      cur = p;
    }
    if (bytes == 0) { ++out.skipped; return; }
    auto ready = prev != no_task ? dp::last_launch_before(g, prev) : no_task;
    if (ready == no_task) ready = call;
    out.grads.push_back({g.iteration(h.id), "", bytes, ready, no_task, 0});
    out.sizes.push_back({double(bytes), g.duration(h.id)});
  });
  return out;
}

// The link of a ring all-reduce fitted to the trace's own kernels (in-sample): per
// distinct size the shortest kernel (the rank that arrived last does not wait), then
// T = 2(p-1) alpha + 2(p-1)/p n beta by least squares; one size, or a negative alpha,
// keeps alpha at 1 us and fits beta alone.
link_spec calibrate(const std::vector<std::pair<double, time_ns>>& samples, std::uint32_t p) {
  std::map<double, time_ns> best;
  for (auto& [n, t] : samples) {
    auto it = best.find(n);
    if (it == best.end() || t < it->second) best[n] = t;
  }
  const double steps = 2.0 * (p - 1), share = steps / p;
  std::vector<std::pair<double, double>> pts;
  for (auto& [n, t] : best) pts.push_back({share * n, double(t)});
  double alpha = 1'000, beta = 0;
  if (pts.size() >= 2) {
    double sx = 0, sy = 0, sxx = 0, sxy = 0, k = double(pts.size());
    for (auto& [x, y] : pts) { sx += x; sy += y; sxx += x * x; sxy += x * y; }
    beta = (k * sxy - sx * sy) / (k * sxx - sx * sx);
    alpha = (sy - beta * sx) / k / steps;
  }
  if (pts.size() < 2 || alpha < 0 || beta <= 0) {
    alpha = 1'000;
    auto& [x, y] = *std::max_element(pts.begin(), pts.end());
    beta = std::max(1e-6, (y - steps * alpha) / x);
  }
  return {1e9 / beta, alpha};
}

std::string spec_for(std::uint32_t workers, const link_spec& l) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "workers=%u,machines=1,nvlink=%.6gB/s,nvlink_latency=%.6gns", workers,
                l.bandwidth, l.latency);
  return buf;
}

struct row {
  std::string trace;
  double measured = 0, replayed = 0, stripped = 0, ddp_nominal = 0, ddp_calibrated = 0, rec_nominal = 0,
         rec_calibrated = 0;
  std::size_t iterations = 0, recorded = 0, buckets = 0;
  link_spec calibrated;
  // The recorded all-reduce kernels against the cost model, per iteration.
  double kernel_ms = 0, model_nominal_ms = 0, model_calibrated_ms = 0, median_ratio = 0, per_iteration = 0;
};

double mean_iteration(const graph& g, const io::kineto_trace& t) {
  auto r = replay(g);
  double s = 0;
  auto its = t.steady_state_iterations();
  for (auto i : its) s += double(iteration_time(g, r, i));
  return s / double(its.size());
}

double err(double pred, double meas) { return 100.0 * (pred - meas) / meas; }

std::string cell(double pred, double meas) {
  if (pred <= 0) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f (%+.1f%%)", pred / 1e6, err(pred, meas));
  return buf;
}

row strip_and_predict(const std::string& name, const std::string& file, const link_spec& nominal,
                      const link_spec* calibration = nullptr) {
  auto t = io::load_kineto(file);
  row out;
  out.trace = name;
  const auto p = static_cast<std::uint32_t>(t.info.world_size);
  auto its = t.steady_state_iterations();
  out.iterations = its.size();
  for (auto i : its) out.measured += double(t.measured(i));
  out.measured /= double(its.size());
  out.replayed = mean_iteration(t.g, t);

  auto rec = recorded_all_reduces(t.g);
  out.recorded = rec.grads.size();
  if (!rec.sizes.empty()) out.calibrated = calibration ? *calibration : calibrate(rec.sizes, p);

  // The cost model against each recorded kernel.
  std::vector<double> ratios;
  for (auto& [n, d] : rec.sizes) {
    const auto m = double(all_reduce_time(n, p, nominal));
    out.kernel_ms += double(d) / 1e6;
    out.model_nominal_ms += m / 1e6;
    out.model_calibrated_ms += double(all_reduce_time(n, p, out.calibrated)) / 1e6;
    ratios.push_back(double(d) / m);
  }
  std::set<std::int32_t> with_collectives;
  for (auto& gr : rec.grads) with_collectives.insert(gr.iteration);
  const double per = std::max<double>(1, double(with_collectives.size()));
  out.per_iteration = double(rec.sizes.size()) / per;
  out.kernel_ms /= per;
  out.model_nominal_ms /= per;
  out.model_calibrated_ms /= per;
  if (!ratios.empty()) {
    std::sort(ratios.begin(), ratios.end());
    out.median_ratio = ratios[ratios.size() / 2];
  }

  graph stripped = t.g;
  dp::strip_communication(stripped, [&](std::string_view n) { return n.find("AllReduce") == std::string_view::npos; });
  out.stripped = mean_iteration(stripped, t);

  auto run = [&](const link_spec& l, bool recorded_points) {
    graph h = stripped;
    auto pass = dp::from_params<dp::ddp>(pass_params::parse("ddp", spec_for(p, l)));
    if (recorded_points) {
      pass.gradients = rec.grads;
      pass.bucket_cap = pass.first_bucket = 0; // one all-reduce per recorded one
    }
    apply(h, pass);
    std::size_t inserted = 0;
    std::set<std::int32_t> its_with;
    h.for_each<comm_task>([&](handle<comm_task> c) {
      if (!h.name(c).starts_with("all_reduce bucket")) return;
      ++inserted;
      its_with.insert(h.iteration(c));
    });
    if (!recorded_points && !its_with.empty()) out.buckets = inserted / its_with.size();
    if (recorded_points) CHECK(inserted == rec.grads.size());
    return inserted ? mean_iteration(h, t) : 0.0;
  };
  if (!rec.grads.empty()) {
    out.rec_nominal = run(nominal, true);
    out.rec_calibrated = run(out.calibrated, true);
  }
  if (!dp::find_gradients(stripped).grads.empty()) {
    out.ddp_nominal = run(nominal, false);
    out.ddp_calibrated = run(out.calibrated.bandwidth > 0 ? out.calibrated : nominal, false);
  }
  std::printf("| %s | %zu | %.2f | %s | %s | %s / %s | %s / %s |\n", out.trace.c_str(), out.iterations,
              out.measured / 1e6, cell(out.replayed, out.measured).c_str(), cell(out.stripped, out.measured).c_str(),
              cell(out.rec_nominal, out.measured).c_str(), cell(out.rec_calibrated, out.measured).c_str(),
              cell(out.ddp_nominal, out.measured).c_str(), cell(out.ddp_calibrated, out.measured).c_str());
  return out;
}

void collective_table(const std::vector<row>& rows) {
  std::printf("\n| trace | recorded all-reduces per iteration | their kernel time, ms | alpha-beta, nominal link, ms | "
              "median kernel / nominal | calibrated link | alpha-beta, calibrated, ms | ddp buckets per iteration |\n"
              "|---|---|---|---|---|---|---|---|\n");
  for (auto& r : rows) {
    std::printf("| %s | %.0f | %.3f | %.3f | %.1fx | %.1f GB/s, %.2f us | %.3f | %zu |\n", r.trace.c_str(),
                r.per_iteration,
                r.kernel_ms, r.model_nominal_ms, r.median_ratio, r.calibrated.bandwidth / 1e9,
                r.calibrated.latency / 1e3, r.model_calibrated_ms, r.buckets);
  }
}

// Nominal NVLink per hop of a ring: NVLink 2.0 (V100) 25 GB/s per link and direction,
// NVLink 3.0 through NVSwitch (A100) 300 GB/s per direction; 1 us per message.
const link_spec v100_nvlink{25e9, 1'000};
const link_spec a100_nvlink{300e9, 1'000};

void header() {
  std::printf("\n| trace | iterations | measured ms | replayed as traced | all-reduces stripped | "
              "recorded all-reduces re-inserted, nominal / calibrated | ddp pass (DDP buckets), nominal / "
              "calibrated |\n|---|---|---|---|---|---|---|\n");
}

} // namespace

TEST_CASE("strip and predict: DLRM, 8 ranks on V100 (all-to-all kept as traced)") {
  // rank 0 is the trace examples/memory reads; ranks 1-7 are in tests/data
  const char* names[] = {"dlrm_v100_rank0.json.gz",
                         "param_dlrm_8rank_v100/worker1_step_12.1694128201556.pt.trace.json.gz",
                         "param_dlrm_8rank_v100/worker2_step_12.1694128201554.pt.trace.json.gz",
                         "param_dlrm_8rank_v100/worker3_step_12.1694128201557.pt.trace.json.gz",
                         "param_dlrm_8rank_v100/worker4_step_12.1694128201547.pt.trace.json.gz",
                         "param_dlrm_8rank_v100/worker5_step_12.1694128201549.pt.trace.json.gz",
                         "param_dlrm_8rank_v100/worker6_step_12.1694128201553.pt.trace.json.gz",
                         "param_dlrm_8rank_v100/worker7_step_12.1694128201553.pt.trace.json.gz"};
  std::vector<std::string> files;
  for (auto* n : names) files.push_back(traces(n));
  // The calibration uses all eight ranks: for each size the shortest kernel of any rank.
  std::vector<std::pair<double, time_ns>> all;
  for (auto& f : files) {
    auto t = io::load_kineto(f);
    auto rec = recorded_all_reduces(t.g);
    all.insert(all.end(), rec.sizes.begin(), rec.sizes.end());
  }
  auto cal = calibrate(all, 8);
  header();
  std::vector<row> rows;
  double sum_abs = 0;
  for (int r = 0; r < 8; ++r) {
    rows.push_back(strip_and_predict("DLRM rank " + std::to_string(r), files[std::size_t(r)], v100_nvlink, &cal));
    auto& x = rows.back();
    CHECK(x.recorded == 3);
    CHECK(x.buckets == 2); // 15 gradients, 2.5 MB: a first bucket of 1.58 MB, then the rest
    sum_abs += std::fabs(err(x.ddp_nominal, x.measured));
  }
  collective_table(rows);
  std::printf("mean |error| of the ddp pass, nominal link, over the 8 ranks: %.2f%%\n", sum_abs / 8);
  CHECK(sum_abs / 8 < 5);
}

TEST_CASE("strip and predict: recommendation models and an MLP under DDP") {
  header();
  std::vector<row> rows;
  rows.push_back(strip_and_predict("recsys, V100, rank 1 of 2", traces("hta_recsys_v100_2rank/test.steps1009-1013.json.gz"),
                                   v100_nvlink));
  rows.push_back(strip_and_predict("recsys, A100, rank 3 of 8", traces("hta_recsys_a100_8rank/control.steps1009-1013.json.gz"),
                                   a100_nvlink));
  rows.push_back(strip_and_predict("MLP (compiled DDP), V100, rank 1 of 2",
                                   traces("hta_mlp_ddp_v100_2rank/df_index_resolver.steps2-4.json.gz"), v100_nvlink));
  collective_table(rows);
  for (auto& r : rows) {
    CHECK(r.rec_nominal > 0);
    CHECK(std::fabs(err(r.rec_nominal, r.measured)) < 10);
  }
  CHECK(rows[2].ddp_nominal == 0); // recorded without shapes: the ddp pass finds no sizes
}
