// Lab 11's interface as requests to the lab's process (checker/support/remote/wb_comm_remote.h):
// the checks (the judge) call these; the worker runs the student's functions.
#include "timed.h"
#include "tree_allreduce.h"
#include "wb_comm_remote.h"

using comm::Collective;
using comm::Communicator;
using comm::DataType;
using comm::RedOp;

using wb::remote::comm_split::collective_bytes;

WB_COMM_REMOTE(lab11::TreeLinks, lab11::binary_tree, (int n, int rank), (ARG(n), ARG(rank)))
WB_COMM_REMOTE(lab11::TreeLinks, lab11::second_tree, (int n, int rank), (ARG(n), ARG(rank)))
WB_COMM_REMOTE(void, lab11::tree_allreduce,
               (const void* sendbuf, void* recvbuf, std::size_t count, DataType type, RedOp op, Communicator& comm,
                std::size_t segment_bytes),
               (BUFFER(sendbuf, count * comm::size_of(type)), BUFFER(recvbuf, count * comm::size_of(type)),
                ARG(count), ARG(type), ARG(op), COMM(comm), ARG(segment_bytes)))
WB_COMM_REMOTE(void, lab11::double_tree_allreduce,
               (const void* sendbuf, void* recvbuf, std::size_t count, DataType type, RedOp op, Communicator& comm,
                std::size_t segment_bytes),
               (BUFFER(sendbuf, count * comm::size_of(type)), BUFFER(recvbuf, count * comm::size_of(type)),
                ARG(count), ARG(type), ARG(op), COMM(comm), ARG(segment_bytes)))
WB_COMM_REMOTE(double, lab11::predicted_ring_time, (const lab11::AlphaBeta& m, int n, std::size_t bytes),
               (ARG(m), ARG(n), ARG(bytes)))
WB_COMM_REMOTE(double, lab11::predicted_tree_time, (const lab11::AlphaBeta& m, int n, std::size_t bytes),
               (ARG(m), ARG(n), ARG(bytes)))
WB_COMM_REMOTE(double, lab11::predicted_crossover_bytes, (const lab11::AlphaBeta& m, int n), (ARG(m), ARG(n)))
WB_COMM_REMOTE(lab11::Algorithm, lab11::select_algorithm, (const lab11::AlphaBeta& m, int n, std::size_t bytes),
               (ARG(m), ARG(n), ARG(bytes)))
WB_COMM_REMOTE(void, lab11::binomial_broadcast,
               (const void* sendbuf, void* recvbuf, std::size_t count, DataType type, int root, Communicator& comm),
               (BUFFER(sendbuf, collective_bytes(Collective::broadcast, true, count, type, comm)),
                BUFFER(recvbuf, collective_bytes(Collective::broadcast, false, count, type, comm)), ARG(count),
                ARG(type), ARG(root), COMM(comm)))
WB_COMM_REMOTE(void, lab11::binomial_reduce,
               (const void* sendbuf, void* recvbuf, std::size_t count, DataType type, RedOp op, int root,
                Communicator& comm),
               (BUFFER(sendbuf, collective_bytes(Collective::reduce, true, count, type, comm)),
                BUFFER(recvbuf, collective_bytes(Collective::reduce, false, count, type, comm)), ARG(count), ARG(type),
                ARG(op), ARG(root), COMM(comm)))
WB_COMM_REMOTE(void, lab11::binomial_gather,
               (const void* sendbuf, void* recvbuf, std::size_t count, DataType type, int root, Communicator& comm),
               (BUFFER(sendbuf, collective_bytes(Collective::gather, true, count, type, comm)),
                BUFFER(recvbuf, collective_bytes(Collective::gather, false, count, type, comm)), ARG(count),
                ARG(type), ARG(root), COMM(comm)))
WB_COMM_REMOTE(void, lab11::binomial_scatter,
               (const void* sendbuf, void* recvbuf, std::size_t count, DataType type, int root, Communicator& comm),
               (BUFFER(sendbuf, collective_bytes(Collective::scatter, true, count, type, comm)),
                BUFFER(recvbuf, collective_bytes(Collective::scatter, false, count, type, comm)), ARG(count),
                ARG(type), ARG(root), COMM(comm)))
WB_COMM_REMOTE(void, lab11::chain_broadcast,
               (const void* sendbuf, void* recvbuf, std::size_t count, DataType type, int root, Communicator& comm,
                std::size_t segment_bytes),
               (BUFFER(sendbuf, collective_bytes(Collective::broadcast, true, count, type, comm)),
                BUFFER(recvbuf, collective_bytes(Collective::broadcast, false, count, type, comm)), ARG(count),
                ARG(type), ARG(root), COMM(comm), ARG(segment_bytes)))
WB_COMM_REMOTE(void, lab11::chain_reduce,
               (const void* sendbuf, void* recvbuf, std::size_t count, DataType type, RedOp op, int root,
                Communicator& comm, std::size_t segment_bytes),
               (BUFFER(sendbuf, collective_bytes(Collective::reduce, true, count, type, comm)),
                BUFFER(recvbuf, collective_bytes(Collective::reduce, false, count, type, comm)), ARG(count), ARG(type),
                ARG(op), ARG(root), COMM(comm), ARG(segment_bytes)))
WB_COMM_REMOTE(double, lab11::predicted_binomial_broadcast_time, (const lab11::AlphaBeta& m, int n, std::size_t bytes),
               (ARG(m), ARG(n), ARG(bytes)))
WB_COMM_REMOTE(double, lab11::predicted_chain_broadcast_time,
               (const lab11::AlphaBeta& m, int n, std::size_t bytes, std::size_t segment_bytes),
               (ARG(m), ARG(n), ARG(bytes), ARG(segment_bytes)))
WB_COMM_REMOTE(comm::check::VsLibrary, lab11::timed::double_tree_vs_library,
               (const comm::HarnessOptions& options, std::size_t segment_bytes, Communicator& comm),
               (ARG(options), ARG(segment_bytes), COMM(comm)))
