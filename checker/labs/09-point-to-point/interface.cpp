// Lab 09's interface as requests to the lab's process (checker/support/remote/wb_comm_remote.h):
// the checks (the judge) call these; the worker runs the student's functions.
#include "point_to_point.h"
#include "wb_comm_remote.h"

using comm::Collective;
using comm::Communicator;
using comm::DataType;
using comm::RedOp;

using wb::remote::comm_split::collective_bytes;

WB_COMM_REMOTE(double, lab09::pingpong, (Communicator & comm, void* buf, std::size_t bytes, int iters),
               (COMM(comm), BUFFER(buf, bytes), ARG(bytes), ARG(iters)))
WB_COMM_REMOTE(lab09::AlphaBeta, lab09::fit_alpha_beta, (const std::vector<lab09::Sample>& samples), (VECTOR(samples)))
WB_COMM_REMOTE(void, lab09::naive_allreduce,
               (const void* sendbuf, void* recvbuf, std::size_t count, DataType type, RedOp op, Communicator& comm),
               (BUFFER(sendbuf, count * comm::size_of(type)), BUFFER(recvbuf, count * comm::size_of(type)), ARG(count),
                ARG(type), ARG(op), COMM(comm)))
WB_COMM_REMOTE(double, lab09::predicted_naive_allreduce_time, (const lab09::AlphaBeta& m, int n, std::size_t bytes),
               (ARG(m), ARG(n), ARG(bytes)))
WB_COMM_REMOTE(void, lab09::linear_broadcast,
               (const void* sendbuf, void* recvbuf, std::size_t count, DataType type, int root, Communicator& comm),
               (BUFFER(sendbuf, collective_bytes(Collective::broadcast, true, count, type, comm)),
                BUFFER(recvbuf, collective_bytes(Collective::broadcast, false, count, type, comm)), ARG(count), ARG(type),
                ARG(root), COMM(comm)))
WB_COMM_REMOTE(void, lab09::linear_reduce,
               (const void* sendbuf, void* recvbuf, std::size_t count, DataType type, RedOp op, int root,
                Communicator& comm),
               (BUFFER(sendbuf, collective_bytes(Collective::reduce, true, count, type, comm)),
                BUFFER(recvbuf, collective_bytes(Collective::reduce, false, count, type, comm)), ARG(count), ARG(type),
                ARG(op), ARG(root), COMM(comm)))
WB_COMM_REMOTE(void, lab09::linear_gather,
               (const void* sendbuf, void* recvbuf, std::size_t count, DataType type, int root, Communicator& comm),
               (BUFFER(sendbuf, collective_bytes(Collective::gather, true, count, type, comm)),
                BUFFER(recvbuf, collective_bytes(Collective::gather, false, count, type, comm)), ARG(count), ARG(type),
                ARG(root), COMM(comm)))
WB_COMM_REMOTE(void, lab09::linear_scatter,
               (const void* sendbuf, void* recvbuf, std::size_t count, DataType type, int root, Communicator& comm),
               (BUFFER(sendbuf, collective_bytes(Collective::scatter, true, count, type, comm)),
                BUFFER(recvbuf, collective_bytes(Collective::scatter, false, count, type, comm)), ARG(count), ARG(type),
                ARG(root), COMM(comm)))
