// Defines passes::bundled(): the registry of every pass that ships with daydream.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASSES_ALL_HPP
#define DAYDREAM_PASSES_ALL_HPP

#include <daydream/config.hpp>
#include <daydream/fwd.hpp>
#include <daydream/kinds.hpp>
#include <daydream/passes/amp.hpp>
#include <daydream/passes/blueconnect.hpp>
#include <daydream/passes/cuda_graphs.hpp>
#include <daydream/passes/dataloader.hpp>
#include <daydream/passes/ddp.hpp>
#include <daydream/passes/dgc.hpp>
#include <daydream/passes/fused_adam.hpp>
#include <daydream/passes/gist.hpp>
#include <daydream/passes/grad_accum.hpp>
#include <daydream/passes/p3.hpp>
#include <daydream/passes/precision.hpp>
#include <daydream/passes/recompute.hpp>
#include <daydream/passes/reconstruct_bn.hpp>
#include <daydream/passes/speedup.hpp>
#include <daydream/passes/support/registry.hpp>
#include <daydream/passes/substitute.hpp>
#include <daydream/passes/tensor_fusion.hpp>
#include <daydream/passes/tensor_partition.hpp>
#include <daydream/passes/tictac.hpp>
#include <daydream/passes/vdnn.hpp>

namespace daydream::passes {

/// Every bundled pass, by its command-line name: the single-GPU passes first, then the
/// distributed ones.
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
                             grad_accum, dataloader, cuda_graphs, speedup, ddp, p3, blueconnect, dgc, tictac, tensor_fusion,
                             tensor_partition>();
}
#endif

} // namespace daydream::passes

#endif
