// Includes every bundled pass (daydream/registry/bundled.hpp builds the registry of them).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASSES_ALL_HPP
#define DAYDREAM_PASSES_ALL_HPP

#include <daydream/config.hpp>
#include <daydream/fwd.hpp>
#include <daydream/kinds.hpp>
#include <daydream/passes/amp.hpp>
#include <daydream/passes/blueconnect.hpp>
#include <daydream/passes/compile.hpp>
#include <daydream/passes/cuda_graphs.hpp>
#include <daydream/passes/dataloader.hpp>
#include <daydream/passes/ddp.hpp>
#include <daydream/passes/dgc.hpp>
#include <daydream/passes/fused_adam.hpp>
#include <daydream/passes/gist.hpp>
#include <daydream/passes/gpu.hpp>
#include <daydream/passes/grad_accum.hpp>
#include <daydream/passes/p3.hpp>
#include <daydream/passes/precision.hpp>
#include <daydream/passes/recompute.hpp>
#include <daydream/passes/reconstruct_bn.hpp>
#include <daydream/passes/speedup.hpp>
#include <daydream/passes/substitute.hpp>
#include <daydream/passes/tensor_fusion.hpp>
#include <daydream/passes/tensor_partition.hpp>
#include <daydream/passes/tictac.hpp>
#include <daydream/passes/vdnn.hpp>

#endif
