// A ten-line program that uses the core, a bundled pass, the formatters and the bundled GPU catalogue of daydream.
// SPDX-License-Identifier: MIT
#include <daydream/daydream.hpp>
#include <daydream/io/device_catalogue.hpp>
#include <daydream/io/format.hpp>
#include <daydream/passes/amp.hpp>

#include <fmt/format.h>

int main() {
  daydream::graph g;
  auto st = g.add_resource({"stream 7", daydream::resource_kind::gpu_stream});
  auto k = g.add(daydream::gpu_kernel{}, {.name = "volta_sgemm_128x64_nn", .duration = 30'000, .resource = st});
  daydream::apply(g, daydream::passes::amp{});
  const auto& h100 = daydream::io::bundled_device_catalogue().at("H100");
  fmt::print("{} ends at {} ns; {}: {} SMs\n", daydream::io::describe(g, k), daydream::replay(g).end[k], h100.name, *h100.sm_count);
}
