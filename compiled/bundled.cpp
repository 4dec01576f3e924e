// The one definition of passes::bundled() for programs that link daydream::compiled: every
// bundled pass's code is compiled here once, not in each translation unit that builds the
// registry (see daydream/registry/bundled.hpp).
// SPDX-License-Identifier: MIT
#define DAYDREAM_COMPILING_BUNDLED 1
#include <daydream/registry/bundled.hpp>

#ifndef DAYDREAM_COMPILED
#  error "compiled/bundled.cpp is compiled with DAYDREAM_COMPILED (the daydream::compiled target sets it)"
#endif
