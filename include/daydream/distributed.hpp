// The umbrella header of the distributed tier: the cluster, collectives and links (net/) and a job's ranks in one graph (job/).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_DISTRIBUTED_HPP
#define DAYDREAM_DISTRIBUTED_HPP

#include <daydream/job/alignment.hpp>
#include <daydream/job/graph.hpp>
#include <daydream/job/matching.hpp>
#include <daydream/job/model.hpp>
#include <daydream/job/replay.hpp>
#include <daydream/net/cluster.hpp>
#include <daydream/net/collective.hpp>
#include <daydream/net/collective_steps.hpp>
#include <daydream/net/fine_collective.hpp>
#include <daydream/net/network.hpp>

#endif
