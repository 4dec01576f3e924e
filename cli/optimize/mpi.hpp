// Defines optimize_cmd::mpi_session: the search's evaluator over MPI ranks when the program runs under mpirun (built with MPI), else one process.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_CLI_OPTIMIZE_MPI_HPP
#define DAYDREAM_CLI_OPTIMIZE_MPI_HPP

#include "../mpi.hpp"

#include <daydream/optimize/evaluator.hpp>

#include <vector>

namespace optimize_cmd {

/// The ranks of program::mpi_world as the search's evaluator: candidate i on rank
/// i % size; the times gathered with an element-wise minimum (every candidate is
/// evaluated on exactly one rank; the others hold +inf); rank 0 decides when the time
/// budget is spent. One process without MPI.
class mpi_session {
public:
  mpi_session() {
    ev_.rank = world_.rank();
    ev_.ranks = world_.size();
    if (world_.size() > 1) {
      ev_.min_all = [this](std::vector<double>& v) { world_.min_all(v); };
      ev_.agree = [this](bool flag) { return world_.agree(flag); };
    }
  }
  mpi_session(const mpi_session&) = delete;
  mpi_session& operator=(const mpi_session&) = delete;

  const daydream::optimize::evaluator& evaluator() const noexcept { return ev_; }

private:
  program::mpi_world world_;
  daydream::optimize::evaluator ev_;
};

} // namespace optimize_cmd

#endif
