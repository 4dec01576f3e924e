// Includes the pass_spec of every bundled pass, and so every bundled pass (daydream/registry/bundled.hpp builds the registry of them).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_REGISTRY_SPECS_ALL_HPP
#define DAYDREAM_REGISTRY_SPECS_ALL_HPP

#include <daydream/registry/specs/amp.hpp>
#include <daydream/registry/specs/blueconnect.hpp>
#include <daydream/registry/specs/compile.hpp>
#include <daydream/registry/specs/cuda_graphs.hpp>
#include <daydream/registry/specs/dataloader.hpp>
#include <daydream/registry/specs/ddp.hpp>
#include <daydream/registry/specs/dgc.hpp>
#include <daydream/registry/specs/fused_adam.hpp>
#include <daydream/registry/specs/gist.hpp>
#include <daydream/registry/specs/gpu.hpp>
#include <daydream/registry/specs/grad_accum.hpp>
#include <daydream/registry/specs/p3.hpp>
#include <daydream/registry/specs/precision.hpp>
#include <daydream/registry/specs/recompute.hpp>
#include <daydream/registry/specs/reconstruct_bn.hpp>
#include <daydream/registry/specs/speedup.hpp>
#include <daydream/registry/specs/substitute.hpp>
#include <daydream/registry/specs/tensor_fusion.hpp>
#include <daydream/registry/specs/tensor_partition.hpp>
#include <daydream/registry/specs/tictac.hpp>
#include <daydream/registry/specs/vdnn.hpp>

#endif
