// Defines the export command: a Kineto trace, a what-if of it, or every rank of a job, as Chakra execution traces.
// SPDX-License-Identifier: MIT
//
//   daydream export --chakra DIR TRACE [--pass SPEC] [--npus N]   one .et per NPU of the (predicted) graph
//   daydream export --chakra DIR RANK0 RANK1 ... | JOBDIR        one .et per rank of the job
#include "export_cmd.hpp"
#include "../program.hpp"
#include "scenario_chakra.hpp"

#include <CLI/CLI.hpp>

#include <daydream/daydream.hpp>
#include <daydream/io/job.hpp>
#include <daydream/io/json_writer.hpp>
#include <daydream/io/kineto.hpp>
#include <daydream/registry/bundled.hpp>

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace export_cmd {

void add_options(CLI::App& app, options& o) {
  app.add_option("traces", o.traces,
                 "a Kineto trace (.json or .json.gz), or every rank of a job (several traces or a directory)")
      ->required();
  app.add_option("--chakra", o.chakra,
                 "write Chakra execution traces (one DIR/PREFIX.N.et per NPU, ASTRA-sim's input; docs/formats.md)")
      ->required();
  app.add_option("--pass", o.pass,
                 "write the graph predicted under this what-if (as for `daydream whatif`, e.g. ddp:workers=64) "
                 "instead of the trace's");
  app.add_option("--npus", o.npus,
                 "NPUs to write for one trace: copies of its worker (default: its own, or as many as its "
                 "collectives' group, e.g. ddp:workers=64 writes 64)")
      ->check(CLI::Range(1, 65536));
  app.add_option("--prefix", o.prefix, "file names: PREFIX.N.et (default daydream)");
  app.add_flag("--json", o.json, "print what was written as JSON");
}

namespace {

/// Whether the arguments are a job: several traces, or a directory.
bool is_job(const std::vector<std::string>& traces) {
  return traces.size() > 1 || (traces.size() == 1 && std::filesystem::is_directory(traces.front()));
}

void print(std::FILE* out, const options& o, const std::string& what, const chakra_files& w) {
  if (o.json) {
    daydream::io::json_writer j(true);
    j.begin_object().field("source", what).field("npus", w.npus).field("copies", w.copies)
        .field("nodes", w.nodes).field("communication_nodes", w.collectives)
        .field("dropped_dependencies", w.dropped).key("files").begin_array();
    for (auto& p : w.files) j.value(p.string());
    j.end_array().end_object();
    std::fputs((j.take() + "\n").c_str(), out);
    return;
  }
  fmt::print(out, "{}: {} NPU(s){}, {} node(s), {} communication node(s)\n", what, w.npus,
             w.copies ? " (copies of its one worker)" : "", w.nodes, w.collectives);
  if (w.dropped)
    fmt::print(out, "note: {} dependencies between NPUs are not written (an ET holds one NPU; collectives "
                    "synchronize them)\n", w.dropped);
  for (auto& p : w.files) fmt::print(out, "wrote {}\n", p.string());
}

} // namespace

int run(const options& o, std::FILE* out) {
  const std::string who = "daydream export";
  if (!have_chakra) throw no_chakra(who);
  if (o.prefix.empty() || o.prefix.find('/') != std::string::npos)
    throw daydream::usage_error(who + ": --prefix must be a file name without '/'");
  const std::filesystem::path dir = o.chakra;
  if (is_job(o.traces)) {
    if (!o.pass.empty())
      throw daydream::usage_error(who + ": --pass takes one trace; for a job, export it as recorded, or "
                                        "export a what-if of one rank's trace");
    if (o.npus > 0) throw daydream::usage_error(who + ": --npus takes one trace; a job has one NPU per rank");
    std::vector<std::filesystem::path> paths(o.traces.begin(), o.traces.end());
    auto j = daydream::io::load_job(paths);
    chakra_files all;
    for (auto& r : j.ranks) {
      auto w = write_graph_chakra(dir, r.g, 1, o.prefix, who, r.measured, r.steady, j.world_size);
      all.npus += w.npus;
      all.nodes += w.nodes;
      all.collectives += w.collectives;
      all.dropped += w.dropped;
      all.files.insert(all.files.end(), w.files.begin(), w.files.end());
    }
    print(out, o, fmt::format("job of {} rank(s)", j.ranks.size()), all);
    return program::ok;
  }
  std::vector<daydream::passes::erased_pass<daydream::graph>> chain;
  auto reg = daydream::passes::bundled();
  if (!o.pass.empty()) {
    try {
      chain = reg.make_chain(o.pass);
    } catch (const daydream::usage_error&) {
      throw;
    } catch (const std::exception& e) {
      throw daydream::usage_error(e.what());
    }
  }
  auto t = daydream::io::load_kineto(o.traces.front());
  if (t.g.size() == 0) throw daydream::error(o.traces.front() + ": the trace holds no CPU or GPU activity");
  std::map<std::int32_t, daydream::time_ns> measured;
  std::vector<std::int32_t> steady;
  if (chain.empty()) {
    // The trace as recorded: its iterations' recorded times go with it.
    for (auto& it : t.iterations) measured[it.number] = t.measured(it.number);
    steady = t.steady_state_iterations();
  } else {
    (void)daydream::passes::run_chain(t.g, chain);
  }
  auto w = write_graph_chakra(dir, t.g, o.npus, o.prefix, who, measured, steady);
  print(out, o, o.pass.empty() ? o.traces.front() : o.traces.front() + " with " + o.pass, w);
  return program::ok;
}

} // namespace export_cmd
