// Lab 12's interface as requests to the lab's process (checker/support/remote/wb_comm_remote.h):
// the checks (the judge) call these; the worker runs the student's functions. The trainer's
// buffers are device memory, which lives in the worker: device pointers cross as numbers, and
// the checks' cudaMalloc/cudaMemcpy are requests to the worker too (judge_cuda.cpp). The
// structs of trainer.h that hold vectors or a callback cross by the Codecs below; a
// BucketReducer is a handle to one that lives in the worker.
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "ring_allreduce.h"
#include "trainer.h"
#include "wb_comm_remote.h"

using comm::Communicator;
using comm::DataType;
using comm::RedOp;
using lab12::Activations;
using lab12::BackwardOptions;
using lab12::Batch;
using lab12::Bucket;
using lab12::Mlp;
using lab12::Optimizer;
using lab12::OptimizerState;
using lab12::PipelineSlot;
using lab12::Reduction;
using lab12::Schedule;
using lab12::TensorParallelMlp;
using wb::remote::Reader;
using wb::remote::Writer;

namespace wb::remote::comm_split {

template <>
struct Codec<Mlp> {
  static void put(Writer& w, const Mlp& m) {
    Codec<std::vector<int>>::put(w, m.widths);
    Codec<std::vector<bool>>::put(w, m.frozen);
  }
  static Mlp get(Reader& r) {
    Mlp m;
    m.widths = Codec<std::vector<int>>::get(r);
    m.frozen = Codec<std::vector<bool>>::get(r);
    return m;
  }
};

// Device pointers and sizes; a call may change them (the checks read z and h after it).
template <>
struct Codec<Activations> {
  static void put(Writer& w, const Activations& a) {
    Codec<std::vector<float*>>::put(w, a.z);
    Codec<std::vector<float*>>::put(w, a.h);
    w.put(a.probs).put(a.scratch[0]).put(a.scratch[1]).put(a.scratch[2]).put(a.scratch_floats).put(a.max_rows);
  }
  static Activations get(Reader& r) {
    Activations a;
    a.z = Codec<std::vector<float*>>::get(r);
    a.h = Codec<std::vector<float*>>::get(r);
    a.probs = r.get<float*>();
    for (float*& s : a.scratch) s = r.get<float*>();
    a.scratch_floats = r.get<std::size_t>();
    a.max_rows = r.get<int>();
    return a;
  }
};

template <>
struct Codec<PipelineSlot> {
  static void put(Writer& w, const PipelineSlot& s) {
    Codec<Activations>::put(w, s.act);
    w.put(s.input).put(s.input_grad).put(s.output_grad);
  }
  static PipelineSlot get(Reader& r) {
    PipelineSlot s;
    s.act = Codec<Activations>::get(r);
    s.input = r.get<float*>();
    s.input_grad = r.get<float*>();
    s.output_grad = r.get<float*>();
    return s;
  }
};

// on_gradient is the checks' function: the lab's code calls it back in the judge, where it may
// read the gradients with cudaMemcpy (served by the worker meanwhile).
template <>
struct Codec<BackwardOptions> {
  static void put(Writer& w, const BackwardOptions& o) {
    w.put<std::uint8_t>(o.accumulate ? 1 : 0);
    std::uint32_t id = 0;
    if (o.on_gradient) {
      id = add_callback([f = o.on_gradient](Reader& in, Writer& out) { out.put(f(in.get<int>())); });
    }
    w.put(id);
  }
  static BackwardOptions get(Reader& r) {
    BackwardOptions o;
    o.accumulate = r.get<std::uint8_t>() != 0;
    if (const auto id = r.get<std::uint32_t>(); id != 0) {
      o.on_gradient = [id](int tensor) {
        Writer w;
        w.put(tensor);
        return call_back(id, w).get<cudaError_t>();
      };
    }
    return o;
  }
};

}  // namespace wb::remote::comm_split

// ---- the BucketReducer: a handle in the judge, the student's object in the worker --------------

namespace lab12::remote {
std::uint64_t reducer_create(const Mlp& m, float* grads, std::size_t bucket_floats, Communicator& comm);
std::vector<Bucket> reducer_buckets(std::uint64_t id);
cudaError_t reducer_ready(std::uint64_t id, int tensor);
cudaError_t reducer_wait(std::uint64_t id);
void reducer_destroy(std::uint64_t id);
}  // namespace lab12::remote

#if defined(WB_REMOTE_WORKER)
namespace lab12::remote {
namespace {

// The model stays here beside its reducer: the student's constructor may keep a reference to it.
struct Held {
  Mlp m;
  std::unique_ptr<BucketReducer> reducer;
};
std::map<std::uint64_t, Held>& reducers() {
  static std::map<std::uint64_t, Held> held;
  return held;
}

BucketReducer& find(std::uint64_t id) {
  auto it = reducers().find(id);
  if (it == reducers().end() || !it->second.reducer) throw std::runtime_error("no BucketReducer " + std::to_string(id));
  return *it->second.reducer;
}

}  // namespace

std::uint64_t reducer_create(const Mlp& m, float* grads, std::size_t bucket_floats, Communicator& comm) {
  static std::uint64_t next = 0;
  const std::uint64_t id = ++next;
  Held& h = reducers()[id];
  h.m = m;
  try {
    h.reducer = std::make_unique<BucketReducer>(h.m, grads, bucket_floats, comm);
  } catch (...) {
    reducers().erase(id);
    throw;
  }
  return id;
}
std::vector<Bucket> reducer_buckets(std::uint64_t id) { return find(id).buckets(); }
cudaError_t reducer_ready(std::uint64_t id, int tensor) { return find(id).ready(tensor); }
cudaError_t reducer_wait(std::uint64_t id) { return find(id).wait(); }
void reducer_destroy(std::uint64_t id) { reducers().erase(id); }  // the student's destructor waits

}  // namespace lab12::remote
#endif

WB_COMM_REMOTE_AS(std::uint64_t, lab12::remote::reducer_create, "BucketReducer::BucketReducer",
                  (const Mlp& m, float* grads, std::size_t bucket_floats, Communicator& comm),
                  (ARG(m), ARG(grads), ARG(bucket_floats), COMM(comm)))
WB_COMM_REMOTE_AS(std::vector<Bucket>, lab12::remote::reducer_buckets, "BucketReducer::buckets", (std::uint64_t id),
                  (ARG(id)))
WB_COMM_REMOTE_AS(cudaError_t, lab12::remote::reducer_ready, "BucketReducer::ready", (std::uint64_t id, int tensor),
                  (ARG(id), ARG(tensor)))
WB_COMM_REMOTE_AS(cudaError_t, lab12::remote::reducer_wait, "BucketReducer::wait", (std::uint64_t id), (ARG(id)))
WB_COMM_REMOTE_AS(void, lab12::remote::reducer_destroy, "BucketReducer::~BucketReducer", (std::uint64_t id),
                  (ARG(id)))

#if defined(WB_REMOTE_JUDGE)
struct lab12::BucketReducer::Impl {
  std::uint64_t id = 0;
  bool have_buckets = false;
  std::vector<Bucket> buckets;
};

lab12::BucketReducer::BucketReducer(const Mlp& m, float* grads, std::size_t bucket_floats, Communicator& comm)
    : impl_(new Impl) {
  impl_->id = remote::reducer_create(m, grads, bucket_floats, comm);
}

lab12::BucketReducer::~BucketReducer() {
  try {
    remote::reducer_destroy(impl_->id);
  } catch (...) {  // a destructor does not throw; the check has its verdict already
  }
}

const std::vector<Bucket>& lab12::BucketReducer::buckets() const {
  if (!impl_->have_buckets) {
    impl_->buckets = remote::reducer_buckets(impl_->id);
    impl_->have_buckets = true;
  }
  return impl_->buckets;
}

cudaError_t lab12::BucketReducer::ready(int tensor) { return remote::reducer_ready(impl_->id, tensor); }
cudaError_t lab12::BucketReducer::wait() { return remote::reducer_wait(impl_->id); }
#endif

// ---- the trainer's functions -------------------------------------------------------------------

WB_COMM_REMOTE(cudaError_t, lab12::mlp_forward,
               (const Mlp& m, const float* params, const float* x, int rows, Activations& act),
               (ARG(m), ARG(params), ARG(x), ARG(rows), INOUT(act)))
WB_COMM_REMOTE(cudaError_t, lab12::mlp_backward,
               (const Mlp& m, const float* params, const float* x, const int* labels, int rows, float scale,
                Activations& act, float* grads, float* loss_sum, const BackwardOptions& options),
               (ARG(m), ARG(params), ARG(x), ARG(labels), ARG(rows), ARG(scale), INOUT(act), ARG(grads),
                ARG(loss_sum), ARG(options)))
WB_COMM_REMOTE(cudaError_t, lab12::sgd_step,
               (float* params, const float* grads, float* velocity, std::size_t n, const lab12::Sgd& opt),
               (ARG(params), ARG(grads), ARG(velocity), ARG(n), ARG(opt)))
WB_COMM_REMOTE(cudaError_t, lab12::adamw_step,
               (float* params, const float* grads, float* m, float* v, std::size_t n, int t, const lab12::AdamW& opt),
               (ARG(params), ARG(grads), ARG(m), ARG(v), ARG(n), ARG(t), ARG(opt)))
WB_COMM_REMOTE(lab12::Shard, lab12::batch_shard, (int global_rows, int n, int rank),
               (ARG(global_rows), ARG(n), ARG(rank)))
WB_COMM_REMOTE(cudaError_t, lab12::broadcast_parameters, (float* params, std::size_t count, Communicator& comm),
               (ARG(params), ARG(count), COMM(comm)))
WB_COMM_REMOTE(cudaError_t, lab12::ddp_train_step,
               (Reduction reduction, const Mlp& m, const Batch& global, float* params, float* grads, Activations& act,
                const Optimizer& opt, OptimizerState& state, Communicator& comm),
               (ARG(reduction), ARG(m), ARG(global), ARG(params), ARG(grads), INOUT(act), ARG(opt), INOUT(state),
                COMM(comm)))
WB_COMM_REMOTE(std::vector<Bucket>, lab12::make_buckets, (const Mlp& m, std::size_t bucket_floats),
               (ARG(m), ARG(bucket_floats)))
WB_COMM_REMOTE(cudaError_t, lab12::bucketed_train_step,
               (const Mlp& m, const Batch& global, std::size_t bucket_floats, float* params, float* grads,
                Activations& act, const Optimizer& opt, OptimizerState& state, Communicator& comm),
               (ARG(m), ARG(global), ARG(bucket_floats), ARG(params), ARG(grads), INOUT(act), ARG(opt), INOUT(state),
                COMM(comm)))
WB_COMM_REMOTE(cudaError_t, lab12::accumulate_train_step,
               (const Mlp& m, const Batch& global, int micro_batches, float* params, float* grads, Activations& act,
                const Optimizer& opt, OptimizerState& state, Communicator& comm),
               (ARG(m), ARG(global), ARG(micro_batches), ARG(params), ARG(grads), INOUT(act), ARG(opt), INOUT(state),
                COMM(comm)))
WB_COMM_REMOTE(cudaError_t, lab12::zero1_train_step,
               (const Mlp& m, const Batch& global, float* params, float* grads, Activations& act, const Optimizer& opt,
                OptimizerState& shard, Communicator& comm),
               (ARG(m), ARG(global), ARG(params), ARG(grads), INOUT(act), ARG(opt), INOUT(shard), COMM(comm)))
WB_COMM_REMOTE(cudaError_t, lab12::tp_forward,
               (const TensorParallelMlp& block, const float* params, const float* x, int rows, Activations& act,
                float* y, Communicator& comm),
               (ARG(block), ARG(params), ARG(x), ARG(rows), INOUT(act), ARG(y), COMM(comm)))
WB_COMM_REMOTE(cudaError_t, lab12::tp_backward,
               (const TensorParallelMlp& block, const float* params, const float* x, int rows, const float* dy,
                Activations& act, float* grads, float* dx, Communicator& comm),
               (ARG(block), ARG(params), ARG(x), ARG(rows), ARG(dy), INOUT(act), ARG(grads), ARG(dx), COMM(comm)))
WB_COMM_REMOTE(cudaError_t, lab12::pipeline_train_step,
               (Schedule schedule, const Mlp& m, const Batch& global, int micro_batches, float* params, float* grads,
                std::vector<PipelineSlot>& slots, const Optimizer& opt, OptimizerState& state, Communicator& comm),
               (ARG(schedule), ARG(m), ARG(global), ARG(micro_batches), ARG(params), ARG(grads), INOUT(slots),
                ARG(opt), INOUT(state), COMM(comm)))

// The checks count one all-reduce of the learner's lab 10 beside the trainer's (device memory).
WB_COMM_REMOTE(void, lab10::ring_allreduce,
               (const void* sendbuf, void* recvbuf, std::size_t count, DataType type, RedOp op, Communicator& comm),
               (ARG(sendbuf), ARG(recvbuf), ARG(count), ARG(type), ARG(op), COMM(comm)))
