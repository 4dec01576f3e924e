// Must not compile: `|` composes passes, and a resource is no pass (it has a run-time
// `name`, which is not a pass's constant name). The control composes two bundled passes
// outside namespace daydream, without a using-declaration: lookup finds `|` through them.
// SPDX-License-Identifier: MIT
#include <daydream/pass.hpp>
#include <daydream/passes/amp.hpp>
#include <daydream/passes/p3.hpp>
#include <daydream/resource.hpp>

#ifdef DAYDREAM_COMPILE_FAIL_CONTROL
auto misuse() { return daydream::passes::amp{} | daydream::passes::p3{}; }
#else
auto misuse() { return daydream::resource{} | daydream::resource{}; }
#endif
