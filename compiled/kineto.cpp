// The one definition of the Kineto ingest (io::parse_kineto, load_kineto,
// load_kineto_files) and of the Nsight Systems reader that shares its stages
// (io::load_nsys) for programs that link daydream::compiled: the decode and build stages
// are compiled here once, not in each translation unit that loads a trace (see
// daydream/io/kineto.hpp).
// SPDX-License-Identifier: MIT
#define DAYDREAM_COMPILING_KINETO 1
#include <daydream/io/kineto.hpp>
#include <daydream/io/nsys.hpp>

#ifndef DAYDREAM_COMPILED
#  error "compiled/kineto.cpp is compiled with DAYDREAM_COMPILED (the daydream::compiled target sets it)"
#endif
