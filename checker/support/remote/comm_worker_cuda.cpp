// Linked into the worker of a collective lab whose code is CUDA (lab 12): the judge's CUDA
// runtime requests are served with this process's runtime (worker_cuda.cpp).
#include "wb_comm_remote.h"

namespace {
const bool g_registered = (wb::remote::comm_split::set_cuda_server(&wb::remote::serve_cuda), true);
}  // namespace
