// Defines pass_spec<dataloader>: the line --help shows for the dataloader pass and how command-line parameters build it.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_REGISTRY_SPECS_DATALOADER_HPP
#define DAYDREAM_REGISTRY_SPECS_DATALOADER_HPP

#include <daydream/config.hpp>
#include <daydream/passes/dataloader.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/registry/pass_spec.hpp>

#include <cmath>
#include <string_view>

namespace daydream::passes {

/// The command line's side of passes::dataloader (see pass_spec).
template <> struct pass_spec<dataloader> {
  /// The line `daydream whatif --help` shows.
  static constexpr std::string_view help =
      "load batches in worker processes (DataLoader num_workers) instead of the main thread. "
      "params: workers=4, load_time= (per batch; default: measured __next__ time), "
      "handoff=100us, prefetch=2 (batches per worker), contention=0.25 (CPU slowdown per core busy loading)";

  /// Reads `workers`, `load_time`, `handoff`, `prefetch` and `contention`.
  static dataloader from_params(const pass_params& p) {
    dataloader d;
    d.workers = p.get_int("workers", d.workers);
    d.load_time = static_cast<time_ns>(std::llround(p.get_time_ns("load_time", double(d.load_time))));
    d.handoff = static_cast<time_ns>(std::llround(p.get_time_ns("handoff", double(d.handoff))));
    d.prefetch = p.get_int("prefetch", d.prefetch);
    d.contention = p.get_double("contention", d.contention);
    p.finish();
    d.check();
    return d;
  }
};

} // namespace daydream::passes

#endif
