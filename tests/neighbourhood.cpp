// Tests of neighbourhood.hpp: the tasks near a task, and their dump as text and DOT.
// SPDX-License-Identifier: MIT
#include <daydream/config.hpp>
#include <daydream/neighbourhood.hpp>
#include <daydream/task.hpp>
#include <support/launch_chain.hpp>

#include <doctest/doctest.h>

#include <cstddef>
#include <utility>
#include <vector>

using namespace daydream;
using neighbours = std::vector<std::pair<task_id, std::size_t>>;

TEST_CASE("neighbourhood follows dependencies both ways, nearest first, ties by id") {
  testing::launch_chain m;
  CHECK(neighbourhood(m.g, m.relu, 0) == neighbours{{3, 0}});
  CHECK(neighbourhood(m.g, m.relu, 1) == neighbours{{3, 0}, {1, 1}, {2, 1}, {4, 1}});
  CHECK(neighbourhood(m.g, m.relu, 2) == neighbours{{3, 0}, {1, 1}, {2, 1}, {4, 1}, {0, 2}});
  CHECK(neighbourhood(m.g, m.relu, 9) == neighbourhood(m.g, m.relu, 2));
  CHECK(neighbourhood(m.g, m.launch_sgemm, 1) == neighbours{{0, 0}, {1, 1}, {2, 1}});
  CHECK_THROWS_AS(neighbourhood(m.g, 17, 1), error);
}

TEST_CASE("neighbourhood_text lists the tasks and the dependencies among them") {
  testing::launch_chain m;
  CHECK(neighbourhood_text(m.g, m.relu, 1) ==
        "neighbourhood of #3 within 1 dependency: 4 tasks, 4 dependencies\n"
        "  0  #3 gpu_kernel \"relu\" on \"stream 7\", 10 ns\n"
        "  1  #1 cpu_task \"launch relu\" on \"thread 1\", 5 ns\n"
        "  1  #2 gpu_kernel \"sgemm\" on \"stream 7\", 30 ns\n"
        "  1  #4 cpu_task \"cudaStreamSynchronize\" on \"thread 1\", 2 ns\n"
        "  #1 -> #3 launch\n"
        "  #1 -> #4 cpu_order\n"
        "  #2 -> #3 stream_order\n"
        "  #3 -> #4 sync\n");
  m.g.set_name(m.sgemm, "a \"quoted\" name");
  m.g.core().res[m.sgemm] = no_resource;
  CHECK(neighbourhood_text(m.g, m.sgemm, 0) ==
        "neighbourhood of #2 within 0 dependencies: 1 task, 0 dependencies\n"
        "  0  #2 gpu_kernel \"a \\\"quoted\\\" name\" on no resource, 30 ns\n");
}

TEST_CASE("neighbourhood_dot draws the tasks as a Graphviz digraph, the task itself bold") {
  testing::launch_chain m;
  CHECK(neighbourhood_dot(m.g, m.relu, 0) ==
        "digraph neighbourhood {\n"
        "  node [shape=box];\n"
        "  t3 [label=\"#3 gpu_kernel\\nrelu\\n10 ns\", style=bold];\n"
        "}\n");
  CHECK(neighbourhood_dot(m.g, m.launch_sgemm, 1) ==
        "digraph neighbourhood {\n"
        "  node [shape=box];\n"
        "  t0 [label=\"#0 cpu_task\\nlaunch sgemm\\n5 ns\", style=bold];\n"
        "  t1 [label=\"#1 cpu_task\\nlaunch relu\\n5 ns\"];\n"
        "  t2 [label=\"#2 gpu_kernel\\nsgemm\\n30 ns\"];\n"
        "  t0 -> t1 [label=\"cpu_order\"];\n"
        "  t0 -> t2 [label=\"launch\"];\n"
        "}\n");
}
