// An empty translation unit: the compiler's fixed cost, subtracted from the others.
// SPDX-License-Identifier: MIT
