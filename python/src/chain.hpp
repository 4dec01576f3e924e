// Pass chains from Python: specs of bundled passes ("amp+fused_adam", "ddp:workers=16") and
// passes written in Python (callables on a GraphView), run like the registry's passes
// (graph_view.cpp).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PYTHON_CHAIN_HPP
#define DAYDREAM_PYTHON_CHAIN_HPP

#include "common.hpp"

#include <memory>
#include <string>
#include <vector>

namespace daydream::python {

/// A pass written in Python failed: the Python exception, raised again as it was when the
/// error reaches Python (the message, for a what-if scenario's refusal).
class python_pass_error : public error {
public:
  python_pass_error(const std::string& what, std::shared_ptr<py::error_already_set> e)
      : error(what), py_error(std::move(e)) {}
  std::shared_ptr<py::error_already_set> py_error;
};

/// A Python callable as a pass: `fn(view)` on a GraphView of the graph, applied as a
/// transaction (daydream::apply: a Python exception, a cycle or a broken invariant restores
/// the graph). Its report says whether the pass changed anything. Calls `fn` with the GIL,
/// so the caller may run it without. `fn.policy == "priority"` replays with priority_policy.
passes::erased_pass<graph> python_pass(py::object fn);

/// One scenario given from Python: a spec string, a callable, or a list of both (run in
/// order). `name` receives the scenario's name ("amp+fused_adam", "amp+my_pass").
std::vector<passes::erased_pass<graph>> make_chain(const py::handle& scenario, std::string& name);

/// Runs `chain` on a copy of `pt`'s graph and measures it as a what-if scenario (without
/// the GIL). With `raise`, an error of the chain is thrown (a Python pass's own exception);
/// without, it becomes the scenario's `error`, as `daydream whatif` reports a refused pass.
std::shared_ptr<whatif::scenario> run_chain_scenario(const py_trace& pt,
                                                     const std::vector<passes::erased_pass<graph>>& chain,
                                                     const std::string& name, bool raise, const replay_options& ro);

} // namespace daydream::python

#endif
