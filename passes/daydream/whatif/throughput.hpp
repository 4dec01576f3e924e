// Defines the throughput of a what-if scenario: steps and samples per second, relative to the baseline and to one GPU, and scaling efficiency.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_WHATIF_THROUGHPUT_HPP
#define DAYDREAM_WHATIF_THROUGHPUT_HPP

#include <daydream/task.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>

namespace daydream::whatif {

/// The traced run a throughput is relative to.
struct throughput_baseline {
  time_ns step = -1;       ///< its steady-state step (the baseline scenario's prediction)
  std::int32_t workers = 1; ///< workers of the traced job (its world size; 1 for one GPU)
  std::optional<std::int64_t> batch; ///< samples per worker and step, when known
};

/// Throughput of a scenario: steps per second, samples per second, and how it scales.
struct throughput {
  std::int32_t workers = 1;                  ///< data-parallel workers it runs on
  double steps_per_s = 0;                    ///< steps per second (0: no prediction)
  std::optional<double> samples_per_s;       ///< with a known batch, across the workers
  double vs_baseline = 0;                    ///< throughput / the baseline's throughput
  std::optional<double> vs_one_gpu;          ///< throughput / one GPU's (the baseline of a one-GPU trace)
  std::optional<double> scaling_efficiency;  ///< vs_one_gpu / workers, for data-parallel scenarios
};

/// The throughput of a step of `predicted` ns on `scenario_workers` data-parallel workers
/// (0: as many as the traced job), relative to `base`. Training throughput counts every
/// worker's samples: 16 workers at the baseline's step time are 16x one GPU.
inline throughput throughput_of(const throughput_baseline& base, time_ns predicted, std::int32_t scenario_workers) {
  throughput t;
  const auto base_workers = std::max<std::int32_t>(1, base.workers);
  t.workers = scenario_workers > 0 ? scenario_workers : base_workers;
  if (predicted <= 0 || base.step <= 0) return t;
  t.steps_per_s = 1e9 / double(predicted);
  if (base.batch) t.samples_per_s = t.steps_per_s * double(*base.batch) * t.workers;
  t.vs_baseline = double(t.workers) * double(base.step) / (double(base_workers) * double(predicted));
  if (base_workers == 1) {
    t.vs_one_gpu = t.vs_baseline;
    if (scenario_workers > 0) t.scaling_efficiency = *t.vs_one_gpu / t.workers;
  }
  return t;
}

} // namespace daydream::whatif

#endif
