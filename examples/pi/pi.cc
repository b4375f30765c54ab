// Monte Carlo estimate of pi across MPI ranks: each rank samples points in the square
// [-1,1]^2, counts those inside the unit circle, and MPI_Reduce sums the counts on rank 0.
// The same program as Kubeflow mpi-operator's pi example, so its MPIJob runs unchanged.
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <random>

namespace {

long long count_inside(int rank, long long samples) {
  std::minstd_rand generator(rank);
  std::uniform_real_distribution<double> distribution(-1.0, 1.0);
  long long inside = 0;
  for (long long i = 0; i < samples; ++i) {
    const double x = distribution(generator);
    const double y = distribution(generator);
    if (x * x + y * y <= 1.0) ++inside;
  }
  return inside;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  if (rank == 0) std::printf("Workers: %d\n", size);
  std::printf("Rank %d on host %s\n", rank, host);
  std::fflush(stdout);

  constexpr long long kSamples = 10'000'000;
  long long inside = count_inside(rank, kSamples);
  long long total = 0;
  MPI_Reduce(&inside, &total, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    std::printf("pi is approximately %.16lf\n", 4.0 * double(total) / double(kSamples) / size);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
