// Must not compile: replay with a policy that has no `key` member.
// SPDX-License-Identifier: MIT
#include <daydream/graph.hpp>
#include <daydream/replay.hpp>
#include <daydream/reschedule.hpp>

struct shortest_first {
#ifdef DAYDREAM_COMPILE_FAIL_CONTROL
  daydream::priority_key key(const daydream::graph& g, daydream::task_id t, daydream::time_ns) const {
    return {g.duration(t), 0, 0};
  }
#else
  // Misspelled: the replay cannot use it.
  daydream::priority_key rank(const daydream::graph& g, daydream::task_id t) const {
    return {g.duration(t), 0, 0};
  }
#endif
};

daydream::time_ns misuse(const daydream::graph& g) { return daydream::replay(g, shortest_first{}).makespan; }
