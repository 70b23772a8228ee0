// Lab 09: point-to-point. Reference solution.
#include "point_to_point.h"

#include <algorithm>

#include "comm/error.h"

namespace lab09 {

double pingpong(comm::Communicator& comm, void* buf, std::size_t bytes, int iters) {
  if (comm.size() < 2 || comm.rank() > 1) return 0;
  std::vector<double> half_round_trips;
  half_round_trips.reserve(static_cast<std::size_t>(std::max(iters, 0)));
  for (int i = 0; i < iters; ++i) {
    if (comm.rank() == 0) {
      const double t0 = comm.wtime();
      comm.send(buf, bytes, 1, 0);
      comm.recv(buf, bytes, 1, 0);
      half_round_trips.push_back((comm.wtime() - t0) / 2);
    } else {
      comm.recv(buf, bytes, 0, 0);
      comm.send(buf, bytes, 0, 0);
    }
  }
  if (comm.rank() != 0 || half_round_trips.empty()) return 0;
  auto mid = half_round_trips.begin() + static_cast<std::ptrdiff_t>(half_round_trips.size() / 2);
  std::nth_element(half_round_trips.begin(), mid, half_round_trips.end());
  return *mid;
}

AlphaBeta fit_alpha_beta(const std::vector<Sample>& samples) {
  // Least squares on relative residuals (weights 1/t^2): a plain fit is dominated by the
  // largest messages and can even return a negative alpha; relative errors weigh a 1 us
  // latency as much as a 1 ms transfer. Centred sums keep it well conditioned.
  if (samples.empty()) COMM_THROW("fit_alpha_beta: no samples");
  double w_sum = 0, mb = 0, mt = 0;
  for (const Sample& s : samples) {
    if (!(s.seconds > 0)) COMM_THROW("fit_alpha_beta: sample times must be positive");
    const double w = 1 / (s.seconds * s.seconds);
    w_sum += w;
    mb += w * s.bytes;
    mt += w * s.seconds;
  }
  mb /= w_sum;
  mt /= w_sum;
  double sbb = 0, sbt = 0;
  for (const Sample& s : samples) {
    const double w = 1 / (s.seconds * s.seconds);
    sbb += w * (s.bytes - mb) * (s.bytes - mb);
    sbt += w * (s.bytes - mb) * (s.seconds - mt);
  }
  if (!(sbb > 0)) COMM_THROW("fit_alpha_beta: the samples need at least two different message sizes");
  AlphaBeta m;
  m.beta = sbt / sbb;
  m.alpha = mt - m.beta * mb;
  return m;
}

void naive_allreduce(const void* sendbuf, void* recvbuf, std::size_t count, comm::DataType type, comm::RedOp op,
                     comm::Communicator& comm) {
  const std::size_t bytes = count * comm::size_of(type);
  if (sendbuf != recvbuf) comm.copy(recvbuf, sendbuf, bytes);
  const int n = comm.size();
  if (n == 1) return;
  if (comm.rank() == 0) {
    void* incoming = comm.scratch(bytes);
    for (int r = 1; r < n; ++r) {
      comm.recv(incoming, bytes, r, 0);
      comm.reduce(recvbuf, incoming, count, type, op);
    }
    std::vector<comm::Request> sends;
    for (int r = 1; r < n; ++r) sends.push_back(comm.isend(recvbuf, bytes, r, 1));
    comm.wait_all(sends);
  } else {
    comm.send(recvbuf, bytes, 0, 0);
    comm.recv(recvbuf, bytes, 0, 1);
  }
}

double predicted_naive_allreduce_time(const AlphaBeta& m, int n, std::size_t bytes) {
  return 2.0 * (n - 1) * (m.alpha + static_cast<double>(bytes) * m.beta);
}

void linear_broadcast(const void* sendbuf, void* recvbuf, std::size_t count, comm::DataType type, int root,
                      comm::Communicator& comm) {
  const std::size_t bytes = count * comm::size_of(type);
  if (comm.rank() != root) {
    comm.recv(recvbuf, bytes, root, 0);
    return;
  }
  if (sendbuf != recvbuf) comm.copy(recvbuf, sendbuf, bytes);
  // All sends at once: the root's link is the bottleneck either way, and no receiver waits
  // for an earlier one to finish receiving.
  std::vector<comm::Request> sends;
  for (int r = 0; r < comm.size(); ++r)
    if (r != root) sends.push_back(comm.isend(recvbuf, bytes, r, 0));
  comm.wait_all(sends);
}

void linear_reduce(const void* sendbuf, void* recvbuf, std::size_t count, comm::DataType type, comm::RedOp op,
                   int root, comm::Communicator& comm) {
  const std::size_t bytes = count * comm::size_of(type);
  if (comm.rank() != root) {
    comm.send(sendbuf, bytes, root, 0);
    return;
  }
  if (sendbuf != recvbuf) comm.copy(recvbuf, sendbuf, bytes);
  // One receive at a time into one scratch buffer: memory stays one buffer whatever n is.
  void* incoming = comm.scratch(bytes);
  for (int r = 0; r < comm.size(); ++r) {
    if (r == root) continue;
    comm.recv(incoming, bytes, r, 0);
    comm.reduce(recvbuf, incoming, count, type, op);
  }
}

void linear_gather(const void* sendbuf, void* recvbuf, std::size_t count, comm::DataType type, int root,
                   comm::Communicator& comm) {
  const std::size_t block = count * comm::size_of(type);
  if (comm.rank() != root) {
    comm.send(sendbuf, block, root, 0);
    return;
  }
  char* out = static_cast<char*>(recvbuf);
  std::vector<comm::Request> recvs;
  for (int r = 0; r < comm.size(); ++r)
    if (r != root) recvs.push_back(comm.irecv(out + static_cast<std::size_t>(r) * block, block, r, 0));
  char* own = out + static_cast<std::size_t>(root) * block;
  if (sendbuf != own) comm.copy(own, sendbuf, block);
  comm.wait_all(recvs);
}

void linear_scatter(const void* sendbuf, void* recvbuf, std::size_t count, comm::DataType type, int root,
                    comm::Communicator& comm) {
  const std::size_t block = count * comm::size_of(type);
  if (comm.rank() != root) {
    comm.recv(recvbuf, block, root, 0);
    return;
  }
  const char* in = static_cast<const char*>(sendbuf);
  std::vector<comm::Request> sends;
  for (int r = 0; r < comm.size(); ++r)
    if (r != root) sends.push_back(comm.isend(in + static_cast<std::size_t>(r) * block, block, r, 0));
  const char* own = in + static_cast<std::size_t>(root) * block;
  if (recvbuf != own) comm.copy(recvbuf, own, block);
  comm.wait_all(sends);
}

}  // namespace lab09
