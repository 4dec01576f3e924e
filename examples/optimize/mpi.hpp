// Defines optimize_cmd::mpi_session: the search's evaluator over MPI ranks when the program runs under mpirun (built with MPI), else one process.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_EXAMPLES_OPTIMIZE_MPI_HPP
#define DAYDREAM_EXAMPLES_OPTIMIZE_MPI_HPP

#include <daydream/optimize/search.hpp>

#include <cstdlib>
#include <vector>

#ifdef DAYDREAM_HAVE_MPI
#  include <mpi.h>
#endif

namespace optimize_cmd {

/// Whether this build can use MPI.
inline constexpr bool have_mpi =
#ifdef DAYDREAM_HAVE_MPI
    true;
#else
    false;
#endif

/// Whether the process was started by an MPI launcher (mpirun sets these).
inline bool under_mpi_launcher() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"})
    if (std::getenv(v)) return true;
  return false;
}

/// MPI for the lifetime of the object when the program runs under mpirun (and was built
/// with MPI): its evaluator spreads candidates over the ranks (candidate i on rank
/// i % size), gathers the times with an element-wise minimum (every candidate is
/// evaluated on exactly one rank; the others hold +inf), and lets rank 0 decide when the
/// time budget is spent. Otherwise one process, and the default evaluator.
class mpi_session {
public:
  mpi_session() {
#ifdef DAYDREAM_HAVE_MPI
    if (!under_mpi_launcher()) return;
    int ready = 0;
    MPI_Initialized(&ready);
    if (!ready) { MPI_Init(nullptr, nullptr); owned_ = true; }
    MPI_Comm_rank(MPI_COMM_WORLD, &ev_.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ev_.ranks);
    ev_.min_all = [](std::vector<double>& v) {
      if (!v.empty()) MPI_Allreduce(MPI_IN_PLACE, v.data(), int(v.size()), MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    };
    ev_.agree = [](bool flag) {
      int f = flag ? 1 : 0;
      MPI_Bcast(&f, 1, MPI_INT, 0, MPI_COMM_WORLD);
      return f != 0;
    };
#endif
  }
  ~mpi_session() {
#ifdef DAYDREAM_HAVE_MPI
    if (owned_) MPI_Finalize();
#endif
  }
  mpi_session(const mpi_session&) = delete;
  mpi_session& operator=(const mpi_session&) = delete;

  const daydream::optimize::evaluator& evaluator() const noexcept { return ev_; }

private:
  daydream::optimize::evaluator ev_;
  bool owned_ = false;
};

} // namespace optimize_cmd

#endif
