// Lab 10's interface as requests to the lab's process (checker/support/remote/wb_comm_remote.h):
// the checks (the judge) call these; the worker runs the student's functions.
#include "ring_allreduce.h"
#include "timed.h"
#include "wb_comm_remote.h"

using comm::Collective;
using comm::Communicator;
using comm::DataType;
using comm::RedOp;

using wb::remote::comm_split::collective_bytes;

WB_COMM_REMOTE(lab10::Chunk, lab10::chunk_of, (std::size_t count, int n, int c), (ARG(count), ARG(n), ARG(c)))
WB_COMM_REMOTE(void, lab10::ring_reduce_scatter,
               (void* buf, std::size_t count, DataType type, RedOp op, Communicator& comm),
               (BUFFER(buf, count * comm::size_of(type)), ARG(count), ARG(type), ARG(op), COMM(comm)))
WB_COMM_REMOTE(void, lab10::ring_allgather, (void* buf, std::size_t count, DataType type, Communicator& comm),
               (BUFFER(buf, count * comm::size_of(type)), ARG(count), ARG(type), COMM(comm)))
WB_COMM_REMOTE(void, lab10::ring_allreduce,
               (const void* sendbuf, void* recvbuf, std::size_t count, DataType type, RedOp op, Communicator& comm),
               (BUFFER(sendbuf, count * comm::size_of(type)), BUFFER(recvbuf, count * comm::size_of(type)),
                ARG(count), ARG(type), ARG(op), COMM(comm)))
WB_COMM_REMOTE(void, lab10::ring_allreduce_pipelined,
               (const void* sendbuf, void* recvbuf, std::size_t count, DataType type, RedOp op, Communicator& comm,
                std::size_t segment_bytes),
               (BUFFER(sendbuf, count * comm::size_of(type)), BUFFER(recvbuf, count * comm::size_of(type)),
                ARG(count), ARG(type), ARG(op), COMM(comm), ARG(segment_bytes)))
WB_COMM_REMOTE(void, lab10::alltoall_pairwise,
               (const void* sendbuf, void* recvbuf, std::size_t count, DataType type, Communicator& comm),
               (BUFFER(sendbuf, collective_bytes(Collective::alltoall, true, count, type, comm)),
                BUFFER(recvbuf, collective_bytes(Collective::alltoall, false, count, type, comm)), ARG(count),
                ARG(type), COMM(comm)))
WB_COMM_REMOTE(void, lab10::alltoall_bruck,
               (const void* sendbuf, void* recvbuf, std::size_t count, DataType type, Communicator& comm),
               (BUFFER(sendbuf, collective_bytes(Collective::alltoall, true, count, type, comm)),
                BUFFER(recvbuf, collective_bytes(Collective::alltoall, false, count, type, comm)), ARG(count),
                ARG(type), COMM(comm)))
WB_COMM_REMOTE(double, lab10::predicted_pairwise_alltoall_time, (const lab10::AlphaBeta& m, int n, std::size_t bytes),
               (ARG(m), ARG(n), ARG(bytes)))
WB_COMM_REMOTE(double, lab10::predicted_bruck_alltoall_time, (const lab10::AlphaBeta& m, int n, std::size_t bytes),
               (ARG(m), ARG(n), ARG(bytes)))
WB_COMM_REMOTE(comm::check::VsLibrary, lab10::timed::pipelined_vs_library,
               (const comm::HarnessOptions& options, std::size_t segment_bytes, Communicator& comm),
               (ARG(options), ARG(segment_bytes), COMM(comm)))
