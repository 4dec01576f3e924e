// Passes written in Python: the GraphView a pass receives (select, update, insert, remove,
// reschedule, depend: the library's primitives, on task ids), the pass as a registry-like
// erased pass run transactionally, and chains mixing them with bundled passes' specs.
// SPDX-License-Identifier: MIT
#include "chain.hpp"
#include "common.hpp"

#include <daydream/depend.hpp>
#include <daydream/insert.hpp>
#include <daydream/remove.hpp>
#include <daydream/reschedule.hpp>
#include <daydream/update.hpp>

#include <fmt/format.h>

#include <map>
#include <optional>
#include <regex>

namespace daydream::python {

namespace {

/// What a Python pass sees: the graph being transformed, valid only while the pass runs.
struct graph_view {
  graph* g = nullptr;
  pass_report* rep = nullptr;
  bool changed = false;

  graph& get() const {
    if (!g) throw usage_error("daydream: this GraphView belonged to a pass that has finished; use the one a pass receives");
    return *g;
  }
  void check(task_id t) const { get().core().check_task(t, "GraphView"); }
};

std::vector<std::string> strings_of(const py::handle& h) {
  if (h.is_none()) return {};
  if (py::isinstance<py::str>(h)) return {h.cast<std::string>()};
  return h.cast<std::vector<std::string>>();
}

/// A regular expression searched in strings (ECMAScript, as the bundled passes' filters),
/// evaluated once per interned name.
struct name_filter {
  std::optional<std::regex> rx;
  std::map<name_id, bool> memo;
  name_filter(const py::handle& h, bool icase) {
    if (h.is_none()) return;
    auto s = h.cast<std::string>();
    try {
      auto flags = std::regex::ECMAScript | std::regex::optimize;
      if (icase) flags |= std::regex::icase;
      rx.emplace(s, flags);
    } catch (const std::regex_error& e) {
      throw usage_error("daydream: GraphView.tasks: '" + s + "' is not a regular expression: " + e.what());
    }
  }
  bool operator()(const graph& g, name_id n) {
    if (!rx) return true;
    auto [it, fresh] = memo.try_emplace(n, false);
    if (fresh) {
      auto s = g.str(n);
      it->second = std::regex_search(s.begin(), s.end(), *rx);
    }
    return it->second;
  }
};

py::array_t<std::uint32_t> select_tasks(graph_view& v, const py::handle& kind, const py::handle& phase_h,
                                         const py::handle& name, const py::handle& layer,
                                         const py::handle& iteration, const py::handle& resource, bool icase) {
  auto& g = v.get();
  std::array<bool, 4> kinds{true, true, true, true};
  if (auto ks = strings_of(kind); !ks.empty()) {
    kinds = {false, false, false, false};
    const std::string_view names[] = {"cpu_task", "gpu_kernel", "memcpy_task", "comm_task"};
    for (auto& k : ks) {
      if (k == "gpu") { kinds[1] = kinds[2] = kinds[3] = true; continue; }
      auto at = std::find(std::begin(names), std::end(names), k);
      if (at == std::end(names))
        throw usage_error("daydream: GraphView.tasks: unknown kind '" + k +
                          "' (cpu_task, gpu_kernel, memcpy_task, comm_task, or gpu for the three GPU kinds)");
      kinds[std::size_t(at - std::begin(names))] = true;
    }
  }
  std::array<bool, 4> phases{true, true, true, true};
  if (auto ps = strings_of(phase_h); !ps.empty()) {
    phases = {false, false, false, false};
    for (auto& p : ps) phases[std::size_t(phase_from(p))] = true;
  }
  name_filter by_name(name, icase), by_layer(layer, icase);
  std::optional<std::int32_t> it;
  if (!iteration.is_none()) it = iteration.cast<std::int32_t>();
  std::vector<bool> res_ok(g.resource_count(), true);
  if (!resource.is_none()) {
    name_filter by_res(resource, icase);
    for (std::size_t r = 0; r < res_ok.size(); ++r) {
      auto n = g.resource_at(resource_id(r)).name;
      res_ok[r] = std::regex_search(n.begin(), n.end(), *by_res.rx);
    }
  }
  const auto& c = g.core();
  std::vector<task_id> out;
  for (task_id t = 0; t < c.id_bound(); ++t) {
    if (!c.alive[t] || !kinds[c.kind[t]] || !phases[std::size_t(c.ph[t])]) continue;
    if (it && c.iteration[t] != *it) continue;
    if (c.res[t] < res_ok.size() && !res_ok[c.res[t]]) continue;
    if (!by_name(g, c.name[t]) || !by_layer(g, c.layer[t])) continue;
    out.push_back(t);
  }
  return to_array(out);
}

template <class F> void each(graph_view& v, const py::handle& ids, F f) {
  auto& g = v.get();
  auto ts = task_ids(ids);
  for (auto t : ts) v.check(t);
  for (auto t : ts) f(g, t);
  if (!ts.empty()) v.changed = true;
}

} // namespace

passes::erased_pass<graph> python_pass(py::object fn) {
  passes::erased_pass<graph> out;
  out.name = py::hasattr(fn, "__name__") ? fn.attr("__name__").cast<std::string>() : std::string("python_pass");
  if (py::hasattr(fn, "name") && py::isinstance<py::str>(fn.attr("name"))) out.name = fn.attr("name").cast<std::string>();
  out.spec = out.name;
  const bool priority = py::hasattr(fn, "policy") && py::str(fn.attr("policy")).cast<std::string>() == "priority";
  // The callable is released with the GIL held, wherever the last copy of the pass dies.
  auto holder = std::shared_ptr<py::object>(new py::object(std::move(fn)), [](py::object* o) {
    py::gil_scoped_acquire gil;
    delete o;
  });
  out.run = [holder, name = out.name](graph& g) {
    pass_report rep;
    rep.pass = name;
    std::shared_ptr<py::error_already_set> failed;
    bool changed = false;
    auto wrapped = [&](graph& gg) {
      py::gil_scoped_acquire gil;
      auto view = std::make_shared<graph_view>();
      view->g = &gg;
      view->rep = &rep;
      py::object handle = py::cast(view);
      try {
        (*holder)(handle);
      } catch (py::error_already_set& e) {
        view->g = nullptr;
        failed = std::make_shared<py::error_already_set>(std::move(e));
        throw error(failed->what());
      }
      view->g = nullptr;
      changed = view->changed;
    };
    try {
      daydream::apply(g, wrapped, name);
    } catch (const error& e) {
      if (failed) throw python_pass_error(e.what(), failed);
      throw;
    }
    if (!changed && rep.applied) rep.not_applied("the pass changed no task");
    return rep;
  };
  out.custom_policy = priority;
  if (priority) out.replay = [](const graph& g, const replay_options& o) { return replay(g, priority_policy{}, o); };
  else out.replay = [](const graph& g, const replay_options& o) { return replay(g, trace_order_policy{}, o); };
  return out;
}

std::vector<passes::erased_pass<graph>> make_chain(const py::handle& scenario, std::string& name) {
  std::vector<passes::erased_pass<graph>> chain;
  auto add = [&](const py::handle& item) {
    if (py::isinstance<py::str>(item)) {
      auto spec = item.cast<std::string>();
      for (auto& p : bundled_registry().make_chain(spec)) chain.push_back(std::move(p));
      name += (name.empty() ? "" : "+") + spec;
    } else if (PyCallable_Check(item.ptr())) {
      chain.push_back(python_pass(py::reinterpret_borrow<py::object>(item)));
      name += (name.empty() ? "" : "+") + chain.back().name;
    } else {
      throw usage_error("daydream: a scenario is a pass spec ('amp:compute=2'), a Python pass (a callable "
                        "taking a GraphView), or a list of them; got " +
                        py::repr(item).cast<std::string>());
    }
  };
  if (py::isinstance<py::list>(scenario) || py::isinstance<py::tuple>(scenario)) {
    for (auto item : scenario) add(item);
  } else {
    add(scenario);
  }
  if (chain.empty()) throw usage_error("daydream: an empty scenario (no pass)");
  return chain;
}

std::shared_ptr<whatif::scenario> run_chain_scenario(const py_trace& pt,
                                                     const std::vector<passes::erased_pass<graph>>& chain,
                                                     const std::string& name, bool raise, const replay_options& ro) {
  auto s = std::make_shared<whatif::scenario>();
  py::gil_scoped_release nogil;
  if (!raise) {
    *s = whatif::run_scenario(pt.trace.g, chain, name, pt.a.iterations, pt.a.memory, ro);
    return s;
  }
  s->name = name;
  for (auto& p : chain) s->passes.push_back(p.name);
  s->g = pt.trace.g;
  auto [r, reports] = passes::run_chain(s->g, chain, ro);
  s->r = std::move(r);
  s->reports = std::move(reports);
  whatif::measure(*s, pt.a.iterations, pt.a.memory);
  return s;
}

void bind_graph_view(py::module_& m) {
  py::class_<graph_view, std::shared_ptr<graph_view>>(m, "GraphView")
      .def("tasks", &select_tasks, py::arg("kind") = py::none(), py::arg("phase") = py::none(),
           py::arg("name") = py::none(), py::arg("layer") = py::none(), py::arg("iteration") = py::none(),
           py::arg("resource") = py::none(), py::arg("ignore_case") = false)
      .def("__len__", [](graph_view& v) { return v.get().size(); })
      .def("duration", [](graph_view& v, const py::handle& ids) {
        auto ts = task_ids(ids);
        auto out = new_array<std::int64_t>(ts.size());
        for (std::size_t i = 0; i < ts.size(); ++i) { v.check(ts[i]); out.mutable_data()[i] = v.get().duration(ts[i]); }
        return out;
      })
      .def("name", [](graph_view& v, task_id t) { v.check(t); return std::string(v.get().name(t)); })
      .def("layer", [](graph_view& v, task_id t) { v.check(t); return std::string(v.get().layer(t)); })
      .def("kind", [](graph_view& v, task_id t) { v.check(t); return std::string(v.get().kind_name(t)); })
      .def("phase", [](graph_view& v, task_id t) { v.check(t); return std::string(to_string(v.get().phase_of(t))); })
      .def("iteration", [](graph_view& v, task_id t) { v.check(t); return v.get().iteration(t); })
      .def("resource", [](graph_view& v, task_id t) {
        v.check(t);
        return v.get().resource_at(v.get().resource_of(t)).name;
      })
      .def("predecessors", [](graph_view& v, task_id t) {
        v.check(t);
        std::vector<task_id> out;
        for (auto d : v.get().predecessors(t)) out.push_back(d.from);
        return to_array(out);
      })
      .def("successors", [](graph_view& v, task_id t) {
        v.check(t);
        std::vector<task_id> out;
        for (auto d : v.get().successors(t)) out.push_back(d.to);
        return to_array(out);
      })
      .def("scale_duration", [](graph_view& v, const py::handle& ids, double factor) {
        each(v, ids, [&](graph& g, task_id t) { scale_duration(g, t, factor); });
      })
      .def("set_duration", [](graph_view& v, const py::handle& ids, time_ns d) {
        each(v, ids, [&](graph& g, task_id t) { set_duration(g, t, d); });
      })
      .def("set_gap", [](graph_view& v, const py::handle& ids, time_ns d) {
        each(v, ids, [&](graph& g, task_id t) { set_gap(g, t, d); });
      })
      .def("remove", [](graph_view& v, const py::handle& ids) {
        each(v, ids, [&](graph& g, task_id t) { remove(g, t); });
      })
      .def("reschedule", [](graph_view& v, const py::handle& ids, const py::object& priority) {
        std::int64_t p = py::isinstance<py::str>(priority) && priority.cast<std::string>() == "first"
                             ? as_soon_as_ready : priority.cast<std::int64_t>();
        each(v, ids, [&](graph& g, task_id t) { reschedule(g, t, p); });
      }, py::arg("ids"), py::arg("priority") = "first")
      .def("copy_task", [](graph_view& v, task_id t, const py::object& before, const py::object& after,
                           const py::object& name, const py::object& duration, const py::object& phase_o) {
        auto& g = v.get();
        v.check(t);
        if (!before.is_none() && !after.is_none())
          throw usage_error("daydream: GraphView.copy_task: give before= or after=, not both");
        auto f = fields_of(g, t);
        // The fields' strings are views: keep their text alive (and apart from the graph's
        // interner, which the copy grows) until the copy has interned it.
        std::string name_text = name.is_none() ? std::string(f.name) : name.cast<std::string>();
        std::string layer_text(f.layer);
        f.name = name_text;
        f.layer = layer_text;
        if (!duration.is_none()) f.duration = duration.cast<time_ns>();
        if (!phase_o.is_none()) f.phase = phase_from(phase_o.cast<std::string>());
        position pos;
        if (!before.is_none()) pos = just_before(before.cast<task_id>());
        if (!after.is_none()) pos = just_after(after.cast<task_id>());
        if (pos.anchor != no_task) v.check(pos.anchor);
        auto id = copy_task(g, t, f, pos);
        v.changed = true;
        return id;
      }, py::arg("task"), py::arg("before") = py::none(), py::arg("after") = py::none(), py::arg("name") = py::none(),
         py::arg("duration") = py::none(), py::arg("phase") = py::none())
      .def("wait_for", [](graph_view& v, task_id waiter, const py::handle& ids, const std::string& kind) {
        auto& g = v.get();
        v.check(waiter);
        dep_kind k = dep_kind::control;
        bool known = false;
        for (int i = 0; i < dep_kind_count; ++i)
          if (to_string(dep_kind(i)) == kind) { k = dep_kind(i); known = true; }
        if (!known) throw usage_error("daydream: GraphView.wait_for: unknown dependency kind '" + kind + "'");
        std::size_t added = 0;
        for (auto t : task_ids(ids)) { v.check(t); added += wait_for(g, waiter, t, k); }
        if (added) v.changed = true;
        return added;
      }, py::arg("waiter"), py::arg("tasks"), py::arg("kind") = "control")
      .def("note", [](graph_view& v, const std::string& text) {
        (void)v.get();
        v.rep->note(text);
      });
}

} // namespace daydream::python
