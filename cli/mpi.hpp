// Defines program::mpi_world: the MPI ranks of a program started by mpirun (built with MPI), else one process.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_CLI_MPI_HPP
#define DAYDREAM_CLI_MPI_HPP

#include <cstdlib>
#include <string>
#include <vector>

#ifdef DAYDREAM_HAVE_MPI
#  include <mpi.h>
#endif

namespace program {

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

/// MPI for the lifetime of the object when the program runs under mpirun and was built
/// with MPI; otherwise one process (rank 0 of 1), and every collective below is the
/// identity. A program makes one, then spreads its work over rank() of size().
class mpi_world {
public:
  mpi_world() {
#ifdef DAYDREAM_HAVE_MPI
    if (!under_mpi_launcher()) return;
    int ready = 0;
    MPI_Initialized(&ready);
    if (!ready) { MPI_Init(nullptr, nullptr); owned_ = true; }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
#endif
  }
  ~mpi_world() {
#ifdef DAYDREAM_HAVE_MPI
    if (owned_) MPI_Finalize();
#endif
  }
  mpi_world(const mpi_world&) = delete;
  mpi_world& operator=(const mpi_world&) = delete;

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }

  /// The element-wise minimum of `v` over all ranks, in place on every rank.
  void min_all(std::vector<double>& v) const {
#ifdef DAYDREAM_HAVE_MPI
    if (size_ > 1 && !v.empty())
      MPI_Allreduce(MPI_IN_PLACE, v.data(), int(v.size()), MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
#else
    (void)v;
#endif
  }

  /// Rank 0's `flag`, on every rank.
  bool agree(bool flag) const {
#ifdef DAYDREAM_HAVE_MPI
    if (size_ > 1) {
      int f = flag ? 1 : 0;
      MPI_Bcast(&f, 1, MPI_INT, 0, MPI_COMM_WORLD);
      return f != 0;
    }
#endif
    return flag;
  }

  /// Every rank's `mine`, in rank order, on rank 0; the other ranks get an empty vector.
  std::vector<std::string> gather(const std::string& mine) const {
#ifdef DAYDREAM_HAVE_MPI
    if (size_ > 1) {
      int n = int(mine.size());
      std::vector<int> sizes(std::size_t(size_), 0), offsets(std::size_t(size_), 0);
      MPI_Gather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
      std::string all;
      if (rank_ == 0) {
        std::size_t total = 0;
        for (int r = 0; r < size_; ++r) { offsets[std::size_t(r)] = int(total); total += std::size_t(sizes[std::size_t(r)]); }
        all.resize(total);
      }
      MPI_Gatherv(mine.data(), n, MPI_CHAR, all.data(), sizes.data(), offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
      std::vector<std::string> out;
      if (rank_ == 0)
        for (int r = 0; r < size_; ++r)
          out.push_back(all.substr(std::size_t(offsets[std::size_t(r)]), std::size_t(sizes[std::size_t(r)])));
      return out;
    }
#endif
    return {mine};
  }

private:
  int rank_ = 0;
  int size_ = 1;
  [[maybe_unused]] bool owned_ = false; // whether this object initialized MPI (and so finalizes it)
};

} // namespace program

#endif
