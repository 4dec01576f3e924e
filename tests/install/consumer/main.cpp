// A ten-line program that uses the core, a bundled pass and the formatters of daydream.
// SPDX-License-Identifier: MIT
#include <daydream/daydream.hpp>
#include <daydream/io/format.hpp>
#include <daydream/passes/amp.hpp>

#include <fmt/format.h>

int main() {
  daydream::graph g;
  auto st = g.add_resource({"stream 7", daydream::resource_kind::gpu_stream});
  auto k = g.add(daydream::gpu_kernel{}, {.name = "volta_sgemm_128x64_nn", .duration = 30'000, .resource = st});
  daydream::apply(g, daydream::passes::amp{});
  fmt::print("{} ends at {} ns\n", daydream::io::describe(g, k), daydream::replay(g).end[k]);
}
