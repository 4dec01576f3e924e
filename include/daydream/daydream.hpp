// The umbrella header: the whole core of daydream, the vocabulary and the queries. The
// distributed tier has an umbrella of its own, <daydream/distributed.hpp> (net/: the
// cluster, collectives and links; job/: every rank of a job in one graph), which a
// single-GPU analysis need not compile; io/ (trace formats), align/ (clock alignment,
// GLPK) and the passes are opt-in targets.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_DAYDREAM_HPP
#define DAYDREAM_DAYDREAM_HPP

#include <daydream/analysis.hpp>
#include <daydream/config.hpp>
#include <daydream/depend.hpp>
#include <daydream/dependency.hpp>
#include <daydream/fidelity.hpp>
#include <daydream/fwd.hpp>
#include <daydream/graph.hpp>
#include <daydream/insert.hpp>
#include <daydream/iteration.hpp>
#include <daydream/kinds.hpp>
#include <daydream/launch.hpp>
#include <daydream/neighbourhood.hpp>
#include <daydream/overlay.hpp>
#include <daydream/pass.hpp>
#include <daydream/pass_laws.hpp>
#include <daydream/remove.hpp>
#include <daydream/replay.hpp>
#include <daydream/replay_result.hpp>
#include <daydream/report.hpp>
#include <daydream/reschedule.hpp>
#include <daydream/resource.hpp>
#include <daydream/select.hpp>
#include <daydream/slack.hpp>
#include <daydream/task.hpp>
#include <daydream/trace_order.hpp>
#include <daydream/units.hpp>
#include <daydream/unroll.hpp>
#include <daydream/update.hpp>
#include <daydream/validate.hpp>
#include <daydream/what_if.hpp>

#endif
