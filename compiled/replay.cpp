// The one definition of the replay kernels (detail::replay_flat_into) for programs that link
// daydream::compiled: the event-driven kernel and the chained pass are compiled here once,
// not in each translation unit that replays (see daydream/detail/replay_kernel.hpp).
// SPDX-License-Identifier: MIT
#define DAYDREAM_COMPILING_REPLAY 1
#include <daydream/detail/replay_kernel.hpp>

#ifndef DAYDREAM_COMPILED
#  error "compiled/replay.cpp is compiled with DAYDREAM_COMPILED (the daydream::compiled target sets it)"
#endif

template void daydream::detail::replay_flat_into<daydream::detail::graph_core>(const daydream::detail::graph_core&,
                                                                              daydream::detail::key_ref,
                                                                              const daydream::replay_options&,
                                                                              daydream::replay_result&,
                                                                              daydream::detail::replay_times);
