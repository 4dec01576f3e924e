// Defines passes::bundled(): the registry of every pass that ships with daydream.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_REGISTRY_BUNDLED_HPP
#define DAYDREAM_REGISTRY_BUNDLED_HPP

#include <daydream/config.hpp>
#include <daydream/fwd.hpp>
#include <daydream/registry/registry.hpp>
#include <daydream/registry/specs/all.hpp>

namespace daydream::passes {

/// Every bundled pass, by its command-line name: the single-GPU passes first, then the
/// distributed ones, each described and built through its pass_spec (registry/specs/).
///
/// Building the registry instantiates every pass's code. A program that calls bundled()
/// from many translation units can compile it once instead: link the CMake target
/// daydream::compiled (compiled/bundled.cpp), which defines DAYDREAM_COMPILED for its
/// users, and this header then only declares the function. Without it (the default, and
/// what the installed package gives), the definition is inline here.
#if defined(DAYDREAM_COMPILED) && !defined(DAYDREAM_COMPILING_BUNDLED)
registry<graph> bundled();
#else
DAYDREAM_COMPILED_INLINE registry<graph> bundled() {
  return registry<graph>::of<amp, precision, fused_adam, reconstruct_bn, gist, vdnn, substitute, recompute,
                             grad_accum, dataloader, cuda_graphs, compile, speedup, gpu, ddp, p3, blueconnect, dgc,
                             tictac, tensor_fusion, tensor_partition>();
}
#endif

} // namespace daydream::passes

#endif
