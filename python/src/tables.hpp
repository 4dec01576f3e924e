// The graph's columns for Python's tables (tables.cpp).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PYTHON_TABLES_HPP
#define DAYDREAM_PYTHON_TABLES_HPP

#include "common.hpp"

namespace daydream::python {

/// The live tasks of `g` by column (id, kind, name, layer, phase, iteration, resource, start,
/// duration, gap, launched_by), strings as codes with their `*_categories`.
py::dict task_columns(const graph& g);

/// The dependencies of `g` by column: src, dst, kind (codes, kind_categories).
py::dict dependency_columns(const graph& g);

} // namespace daydream::python

#endif
