// Lab 12: a data-parallel trainer (reference solution).
//
// Forward and backward run on the learner's own kernels: lab 05's sgemm() for every product,
// lab 02's transpose_conflict_free() for the transposed operands of the backward pass, lab 06's
// softmax_forward() for the probabilities. The few kernels of this file are elementwise or
// column sums, written so every result is deterministic (no atomics): the same inputs give the
// same bits on every rank, which is what lets data-parallel ranks stay identical.
#include "trainer.h"

#include <cmath>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

#include "gemm.h"
#include "ring_allreduce.h"
#include "softmax_layernorm.h"
#include "transpose.h"

namespace lab12 {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(std::size_t n) {
  const std::size_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::min<std::size_t>(std::max<std::size_t>(b, 1), 65535));
}

#define WB_TRY(call)                             \
  do {                                           \
    const cudaError_t wb_try_error = (call);     \
    if (wb_try_error != cudaSuccess) return wb_try_error; \
  } while (0)

// z[r][c] = b[c]: the bias, which sgemm (beta = 1) then adds x W to.
__global__ void broadcast_rows_kernel(const float* __restrict__ b, int rows, int cols, float* __restrict__ z) {
  const std::size_t n = std::size_t(rows) * cols;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    z[i] = b[i % cols];
}

// y[r][c] += b[c]: a bias added after a sum over ranks.
__global__ void add_rows_kernel(const float* __restrict__ b, int rows, int cols, float* __restrict__ y) {
  const std::size_t n = std::size_t(rows) * cols;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    y[i] += b[i % cols];
}

__global__ void relu_kernel(const float* __restrict__ z, std::size_t n, float* __restrict__ h) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    h[i] = z[i] > 0.0f ? z[i] : 0.0f;
}

// dz = dh where z > 0, else 0 (in place on dh is fine).
__global__ void relu_backward_kernel(const float* __restrict__ z, const float* dh, std::size_t n, float* dz) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    dz[i] = z[i] > 0.0f ? dh[i] : 0.0f;
}

// dlogits = scale * (probs - onehot(label)); one thread per element.
__global__ void cross_entropy_grad_kernel(const float* __restrict__ probs, const int* __restrict__ labels, int rows,
                                          int classes, float scale, float* __restrict__ dlogits) {
  const std::size_t n = std::size_t(rows) * classes;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    const int r = static_cast<int>(i / classes), c = static_cast<int>(i % classes);
    dlogits[i] = scale * (probs[i] - (labels[r] == c ? 1.0f : 0.0f));
  }
}

// loss (+)= sum over rows of -log p[label], in one block: each thread sums a fixed set of rows
// in order, then a fixed tree over the block: the same bits every run.
__global__ void cross_entropy_loss_kernel(const float* __restrict__ probs, const int* __restrict__ labels, int rows,
                                          int classes, bool accumulate, float* __restrict__ loss) {
  __shared__ float partial[kThreads];
  float s = 0.0f;
  for (int r = threadIdx.x; r < rows; r += blockDim.x)
    s -= logf(fmaxf(probs[std::size_t(r) * classes + labels[r]], 1e-30f));
  partial[threadIdx.x] = s;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) *loss = accumulate ? *loss + partial[0] : partial[0];
}

// db[c] (+)= sum over rows of dz[r][c], rows in order: one thread per column, reads coalesced
// across the warp.
__global__ void column_sum_kernel(const float* __restrict__ dz, int rows, int cols, bool accumulate,
                                  float* __restrict__ db) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  float s = 0.0f;
  for (int r = 0; r < rows; ++r) s += dz[std::size_t(r) * cols + c];
  db[c] = accumulate ? db[c] + s : s;
}

__global__ void fill_kernel(float* __restrict__ p, std::size_t n, float value) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    p[i] = value;
}

__global__ void sgd_kernel(float* __restrict__ p, const float* __restrict__ g, float* __restrict__ vel, std::size_t n,
                           float lr, float momentum, float weight_decay) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    const float d = g[i] + weight_decay * p[i];
    const float v = momentum * vel[i] + d;
    vel[i] = v;
    p[i] -= lr * v;
  }
}

__global__ void adamw_kernel(float* __restrict__ p, const float* __restrict__ g, float* __restrict__ m,
                             float* __restrict__ v, std::size_t n, float lr, float beta1, float beta2, float eps,
                             float weight_decay, float bias1, float bias2) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    const float gi = g[i];
    const float mi = beta1 * m[i] + (1.0f - beta1) * gi;
    const float vi = beta2 * v[i] + (1.0f - beta2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    const float decayed = p[i] * (1.0f - lr * weight_decay);
    p[i] = decayed - lr * (mi / bias1) / (sqrtf(vi / bias2) + eps);
  }
}

cudaError_t launched() { return cudaGetLastError(); }

}  // namespace

cudaError_t mlp_forward(const Mlp& m, const float* params, const float* x, int rows, Activations& act) {
  if (rows < 0 || rows > act.max_rows || static_cast<int>(act.z.size()) != m.layers()) return cudaErrorInvalidValue;
  if (rows == 0) return cudaSuccess;
  const float* in = x;
  for (int l = 0; l < m.layers(); ++l) {
    const int fan_in = m.widths[l], fan_out = m.widths[l + 1];
    const Tensor w = m.weight(l), b = m.bias(l);
    const std::size_t n = std::size_t(rows) * fan_out;
    broadcast_rows_kernel<<<blocks_for(n), kThreads>>>(params + b.offset, rows, fan_out, act.z[l]);
    WB_TRY(launched());
    WB_TRY(sgemm(rows, fan_out, fan_in, 1.0f, in, fan_in, params + w.offset, fan_out, 1.0f, act.z[l], fan_out));
    if (l + 1 < m.layers()) {
      relu_kernel<<<blocks_for(n), kThreads>>>(act.z[l], n, act.h[l]);
      WB_TRY(launched());
      in = act.h[l];
    }
  }
  return cudaDeviceSynchronize();
}

namespace {

// The backward pass through layers L-1 down to `lowest` of `rows` rows whose forward pass is in
// act, from dz = dL/d(z_{L-1}) in act.scratch[0]: the gradients of the trained tensors
// (added to grads when acc), announce(l) once layer l's are complete, and when dx is given (and
// lowest == 0) dL/dx = dz_0 W_0^T into dx (rows x inputs).
cudaError_t backward_layers(const Mlp& m, const float* params, const float* x, int rows, Activations& act, float* grads,
                            bool acc, int lowest, const std::function<cudaError_t(int)>& announce, float* dx) {
  const int L = m.layers();
  // dz: the gradient of the current layer's pre-activation; dprev: the one below.
  float* dz = act.scratch[0];
  float* dprev = act.scratch[1];
  float* transposed = act.scratch[2];
  for (int l = L - 1; l >= lowest; --l) {
    const int fan_in = m.widths[l], fan_out = m.widths[l + 1];
    const Tensor w = m.weight(l), b = m.bias(l);
    const float* in = l == 0 ? x : act.h[l - 1];
    // dW = in^T dz (fan_in x fan_out), db = column sums of dz.
    if (m.trains(2 * l)) {
      WB_TRY(transpose_conflict_free(rows, fan_in, in, transposed));
      WB_TRY(sgemm(fan_in, fan_out, rows, 1.0f, transposed, rows, dz, fan_out, acc ? 1.0f : 0.0f, grads + w.offset,
                   fan_out));
    }
    if (m.trains(2 * l + 1)) {
      column_sum_kernel<<<(fan_out + kThreads - 1) / kThreads, kThreads>>>(dz, rows, fan_out, acc, grads + b.offset);
      WB_TRY(launched());
    }
    WB_TRY(announce(l));
    if (l == lowest && (l > 0 || dx == nullptr)) break;
    // dh_{l-1} = dz W^T (rows x fan_in), then through the ReLU of layer l-1; below layer 0, dL/dx.
    WB_TRY(transpose_conflict_free(fan_in, fan_out, params + w.offset, transposed));
    WB_TRY(sgemm(rows, fan_in, fan_out, 1.0f, dz, fan_out, transposed, fan_in, 0.0f, l == 0 ? dx : dprev, fan_in));
    if (l == 0) break;
    const std::size_t n = std::size_t(rows) * fan_in;
    relu_backward_kernel<<<blocks_for(n), kThreads>>>(act.z[l - 1], dprev, n, dprev);
    WB_TRY(launched());
    std::swap(dz, dprev);
  }
  return cudaDeviceSynchronize();
}

}  // namespace

cudaError_t mlp_backward(const Mlp& m, const float* params, const float* x, const int* labels, int rows, float scale,
                         Activations& act, float* grads, float* loss_sum, const BackwardOptions& options) {
  if (rows < 0 || rows > act.max_rows || static_cast<int>(act.z.size()) != m.layers()) return cudaErrorInvalidValue;
  const int L = m.layers(), classes = m.classes();
  const bool acc = options.accumulate;
  // The gradients of layer l are complete: tell the caller, b_l then W_l (the backward order).
  auto announce = [&](int l) -> cudaError_t {
    if (!options.on_gradient) return cudaSuccess;
    WB_TRY(cudaDeviceSynchronize());
    for (int t : {2 * l + 1, 2 * l})
      if (m.trains(t)) WB_TRY(options.on_gradient(t));
    return cudaSuccess;
  };
  if (rows == 0) {
    if (!acc) {
      const std::vector<Tensor> tensors = m.tensors();
      for (std::size_t i = 0; i < tensors.size(); ++i)
        if (m.trains(static_cast<int>(i))) {
          fill_kernel<<<blocks_for(tensors[i].count), kThreads>>>(grads + tensors[i].offset, tensors[i].count, 0.0f);
          WB_TRY(launched());
        }
      fill_kernel<<<1, 1>>>(loss_sum, 1, 0.0f);
      WB_TRY(launched());
    }
    WB_TRY(cudaDeviceSynchronize());
    for (int l = L - 1; l >= 0; --l) WB_TRY(announce(l));
    return cudaSuccess;
  }
  // Nothing below the lowest layer with a trained tensor needs a gradient.
  int lowest = L;
  for (int l = L - 1; l >= 0; --l)
    if (m.trains(2 * l) || m.trains(2 * l + 1)) lowest = l;
  WB_TRY(softmax_forward(act.z[L - 1], act.probs, rows, classes));
  cross_entropy_loss_kernel<<<1, kThreads>>>(act.probs, labels, rows, classes, acc, loss_sum);
  WB_TRY(launched());
  const std::size_t nl = std::size_t(rows) * classes;
  cross_entropy_grad_kernel<<<blocks_for(nl), kThreads>>>(act.probs, labels, rows, classes, scale, act.scratch[0]);
  WB_TRY(launched());
  return backward_layers(m, params, x, rows, act, grads, acc, lowest, announce, nullptr);
}

cudaError_t sgd_step(float* params, const float* grads, float* velocity, std::size_t n, const Sgd& opt) {
  if (n == 0) return cudaSuccess;
  sgd_kernel<<<blocks_for(n), kThreads>>>(params, grads, velocity, n, opt.lr, opt.momentum, opt.weight_decay);
  WB_TRY(launched());
  return cudaDeviceSynchronize();
}

cudaError_t adamw_step(float* params, const float* grads, float* m, float* v, std::size_t n, int t, const AdamW& opt) {
  if (t < 1) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  // The bias corrections in double on the host, rounded once.
  const float bias1 = static_cast<float>(1.0 - std::pow(double(opt.beta1), t));
  const float bias2 = static_cast<float>(1.0 - std::pow(double(opt.beta2), t));
  adamw_kernel<<<blocks_for(n), kThreads>>>(params, grads, m, v, n, opt.lr, opt.beta1, opt.beta2, opt.eps,
                                            opt.weight_decay, bias1, bias2);
  WB_TRY(launched());
  return cudaDeviceSynchronize();
}

Shard batch_shard(int global_rows, int n, int rank) {
  const lab10::Chunk c = lab10::chunk_of(static_cast<std::size_t>(global_rows), n, rank);
  return {static_cast<int>(c.offset), static_cast<int>(c.count)};
}

cudaError_t broadcast_parameters(float* params, std::size_t count, comm::Communicator& comm) {
  // A binomial tree from rank 0: in round k the 2^k ranks that have the data send to the
  // next 2^k, so every rank has it after ceil(log2 n) rounds.
  constexpr int kTag = 1201;
  const int n = comm.size(), r = comm.rank();
  const std::size_t bytes = count * sizeof(float);
  for (int span = 1; span < n; span *= 2) {
    if (r < span && r + span < n) {
      comm.send(params, bytes, r + span, kTag);
    } else if (r >= span && r < 2 * span) {
      comm.recv(params, bytes, r - span, kTag);
    }
  }
  return cudaSuccess;
}

namespace {

// The steps do not report their loss; one device float for it.
cudaError_t loss_buffer(float** loss) {
  static float* buffer = nullptr;
  if (buffer == nullptr) WB_TRY(cudaMalloc(reinterpret_cast<void**>(&buffer), sizeof(float)));
  *loss = buffer;
  return cudaSuccess;
}

// One optimizer step of `n` parameters from `offset`, with state buffers `m`, `v` of the same
// elements (state.t already counts this step).
cudaError_t optimizer_step(const Optimizer& opt, const OptimizerState& state, float* params, const float* grads,
                           float* m, float* v, std::size_t n) {
  if (opt.kind == Optimizer::Kind::sgd) return sgd_step(params, grads, m, n, opt.sgd);
  return adamw_step(params, grads, m, v, n, state.t, opt.adamw);
}

// Forward and backward of this rank's shard of `global`, scaled by 1 / global.rows.
cudaError_t shard_pass(const Mlp& m, const Batch& global, const float* params, float* grads, Activations& act,
                       int rank, int n, const BackwardOptions& options = {}) {
  const Shard s = batch_shard(global.rows, n, rank);
  const float* x = global.x + std::size_t(s.offset) * m.inputs();
  float* loss = nullptr;
  WB_TRY(loss_buffer(&loss));
  WB_TRY(mlp_forward(m, params, x, s.rows, act));
  // Each rank scales by the global batch, so the sum over ranks is the gradient of the mean
  // loss over the global batch, whatever the shard sizes.
  return mlp_backward(m, params, x, global.labels + s.offset, s.rows, 1.0f / static_cast<float>(global.rows), act,
                      grads, loss, options);
}

}  // namespace

cudaError_t ddp_train_step(Reduction reduction, const Mlp& m, const Batch& global, float* params, float* grads,
                           Activations& act, const Optimizer& opt, OptimizerState& state, comm::Communicator& comm) {
  if (global.rows <= 0) return cudaErrorInvalidValue;
  WB_TRY(shard_pass(m, global, params, grads, act, comm.rank(), comm.size()));
  if (reduction == Reduction::flat) {
    lab10::ring_allreduce(grads, grads, m.parameter_count(), comm::DataType::f32, comm::RedOp::sum, comm);
  } else {
    for (const Tensor& t : m.tensors())
      lab10::ring_allreduce(grads + t.offset, grads + t.offset, t.count, comm::DataType::f32, comm::RedOp::sum, comm);
  }
  state.t += 1;
  return optimizer_step(opt, state, params, grads, state.m, state.v, m.parameter_count());
}

// ---- buckets ---------------------------------------------------------------------------------

std::vector<Bucket> make_buckets(const Mlp& m, std::size_t bucket_floats) {
  const std::vector<Tensor> tensors = m.tensors();
  std::vector<Bucket> out;
  bool open = false;
  for (int t = static_cast<int>(tensors.size()) - 1; t >= 0; --t) {
    if (!m.trains(t)) {
      open = false;  // a bucket is contiguous: a frozen tensor ends it
      continue;
    }
    if (!open) {
      out.push_back({tensors[t].offset + tensors[t].count, 0, t, t});
      open = true;
    }
    Bucket& b = out.back();
    b.offset = tensors[t].offset;
    b.count += tensors[t].count;
    b.first = t;
    if (b.count >= bucket_floats) open = false;
  }
  return out;
}

// The communication thread: it takes buckets from a queue in the order they became ready and
// runs each one's ring all-reduce while the caller's thread goes on with the backward pass.
// Every rank queues the same buckets in the same order, so the collectives match up. The
// communicator is used by this thread only while a step runs (the caller touches it again
// after wait()).
struct BucketReducer::Impl {
  float* grads = nullptr;
  comm::Communicator* comm = nullptr;
  std::vector<Bucket> buckets;
  std::vector<int> bucket_of;  // per tensor: its bucket, or -1 (frozen)
  std::vector<int> missing;    // per bucket: tensors not ready yet
  std::vector<bool> marked;    // per tensor

  std::mutex mu;
  std::condition_variable cv;
  std::deque<int> queue;  // buckets ready to go
  int launched = 0, finished = 0;
  bool stop = false;
  std::exception_ptr error;
  std::thread worker;

  void run() {
    for (;;) {
      int b = -1;
      bool skip = false;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return stop || !queue.empty(); });
        if (queue.empty()) return;
        b = queue.front();
        queue.pop_front();
        skip = error != nullptr;  // after a failure the ranks no longer agree: send nothing more
      }
      std::exception_ptr failure;
      if (!skip) try {
          float* p = grads + buckets[b].offset;
          lab10::ring_allreduce(p, p, buckets[b].count, comm::DataType::f32, comm::RedOp::sum, *comm);
        } catch (...) {
          failure = std::current_exception();
        }
      {
        std::lock_guard<std::mutex> lock(mu);
        if (failure && !error) error = failure;
        ++finished;
      }
      cv.notify_all();
    }
  }
};

BucketReducer::BucketReducer(const Mlp& m, float* grads, std::size_t bucket_floats, comm::Communicator& comm)
    : impl_(new Impl) {
  Impl& d = *impl_;
  d.grads = grads;
  d.comm = &comm;
  d.buckets = make_buckets(m, bucket_floats);
  const std::size_t tensors = m.tensors().size();
  d.bucket_of.assign(tensors, -1);
  d.marked.assign(tensors, false);
  for (std::size_t b = 0; b < d.buckets.size(); ++b) {
    d.missing.push_back(d.buckets[b].last - d.buckets[b].first + 1);
    for (int t = d.buckets[b].first; t <= d.buckets[b].last; ++t) d.bucket_of[t] = static_cast<int>(b);
  }
  d.worker = std::thread([this] { impl_->run(); });
}

BucketReducer::~BucketReducer() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->cv.notify_all();
  if (impl_->worker.joinable()) impl_->worker.join();
}

const std::vector<Bucket>& BucketReducer::buckets() const { return impl_->buckets; }

cudaError_t BucketReducer::ready(int tensor) {
  Impl& d = *impl_;
  if (tensor < 0 || tensor >= static_cast<int>(d.bucket_of.size()) || d.bucket_of[tensor] < 0 || d.marked[tensor])
    return cudaErrorInvalidValue;
  d.marked[tensor] = true;
  const int b = d.bucket_of[tensor];
  if (--d.missing[b] == 0) {
    {
      std::lock_guard<std::mutex> lock(d.mu);
      d.queue.push_back(b);
      ++d.launched;
    }
    d.cv.notify_all();
  }
  return cudaSuccess;
}

cudaError_t BucketReducer::wait() {
  Impl& d = *impl_;
  std::unique_lock<std::mutex> lock(d.mu);
  d.cv.wait(lock, [&] { return d.finished == d.launched; });
  if (d.error) std::rethrow_exception(d.error);
  return d.launched == static_cast<int>(d.buckets.size()) ? cudaSuccess : cudaErrorInvalidValue;
}

cudaError_t bucketed_train_step(const Mlp& m, const Batch& global, std::size_t bucket_floats, float* params,
                                float* grads, Activations& act, const Optimizer& opt, OptimizerState& state,
                                comm::Communicator& comm) {
  if (global.rows <= 0) return cudaErrorInvalidValue;
  BucketReducer reducer(m, grads, bucket_floats, comm);
  BackwardOptions options;
  options.on_gradient = [&](int tensor) { return reducer.ready(tensor); };
  WB_TRY(shard_pass(m, global, params, grads, act, comm.rank(), comm.size(), options));
  WB_TRY(reducer.wait());
  state.t += 1;
  for (const Bucket& b : reducer.buckets())
    WB_TRY(optimizer_step(opt, state, params + b.offset, grads + b.offset, state.m + b.offset,
                          state.v ? state.v + b.offset : nullptr, b.count));
  return cudaSuccess;
}

// ---- gradient accumulation -------------------------------------------------------------------

cudaError_t accumulate_train_step(const Mlp& m, const Batch& global, int micro_batches, float* params, float* grads,
                                  Activations& act, const Optimizer& opt, OptimizerState& state,
                                  comm::Communicator& comm) {
  if (global.rows <= 0 || micro_batches < 1) return cudaErrorInvalidValue;
  const Shard s = batch_shard(global.rows, comm.size(), comm.rank());
  float* loss = nullptr;
  WB_TRY(loss_buffer(&loss));
  for (int j = 0; j < micro_batches; ++j) {
    const lab10::Chunk c = lab10::chunk_of(static_cast<std::size_t>(s.rows), micro_batches, j);
    const int offset = s.offset + static_cast<int>(c.offset), rows = static_cast<int>(c.count);
    const float* x = global.x + std::size_t(offset) * m.inputs();
    BackwardOptions options;
    options.accumulate = j > 0;  // the first micro-batch overwrites, the others add
    WB_TRY(mlp_forward(m, params, x, rows, act));
    WB_TRY(mlp_backward(m, params, x, global.labels + offset, rows, 1.0f / static_cast<float>(global.rows), act,
                        grads, loss, options));
  }
  // Communication once, after the last micro-batch.
  lab10::ring_allreduce(grads, grads, m.parameter_count(), comm::DataType::f32, comm::RedOp::sum, comm);
  state.t += 1;
  return optimizer_step(opt, state, params, grads, state.m, state.v, m.parameter_count());
}

// ---- ZeRO-1 ------------------------------------------------------------------------------------

cudaError_t zero1_train_step(const Mlp& m, const Batch& global, float* params, float* grads, Activations& act,
                             const Optimizer& opt, OptimizerState& shard, comm::Communicator& comm) {
  if (global.rows <= 0) return cudaErrorInvalidValue;
  const std::size_t P = m.parameter_count();
  WB_TRY(shard_pass(m, global, params, grads, act, comm.rank(), comm.size()));
  // This rank's chunk of the summed gradient, then its chunk of the update, then everyone's.
  lab10::ring_reduce_scatter(grads, P, comm::DataType::f32, comm::RedOp::sum, comm);
  const lab10::Chunk c = lab10::chunk_of(P, comm.size(), comm.rank());
  shard.t += 1;
  if (c.count > 0)
    WB_TRY(optimizer_step(opt, shard, params + c.offset, grads + c.offset, shard.m, shard.v, c.count));
  lab10::ring_allgather(params, P, comm::DataType::f32, comm);
  return cudaSuccess;
}

// ---- tensor parallelism ------------------------------------------------------------------------

cudaError_t tp_forward(const TensorParallelMlp& block, const float* params, const float* x, int rows,
                       Activations& act, float* y, comm::Communicator& comm) {
  const int n = comm.size();
  if (rows < 0 || rows > act.max_rows || block.hidden < n || act.z.size() != 2) return cudaErrorInvalidValue;
  const Mlp local = block.local(n, comm.rank());
  const Tensor A = local.weight(0), a = local.bias(0), B = local.weight(1), b = local.bias(1);
  const int in = block.in, h = local.widths[1], out = block.out;
  const std::size_t nz = std::size_t(rows) * h, ny = std::size_t(rows) * out;
  if (rows > 0) {
    // This rank's hidden units (A is column-parallel): z = x A_r + a_r, h = relu(z).
    broadcast_rows_kernel<<<blocks_for(nz), kThreads>>>(params + a.offset, rows, h, act.z[0]);
    WB_TRY(launched());
    WB_TRY(sgemm(rows, h, in, 1.0f, x, in, params + A.offset, h, 1.0f, act.z[0], h));
    relu_kernel<<<blocks_for(nz), kThreads>>>(act.z[0], nz, act.h[0]);
    WB_TRY(launched());
    // Its share of y (B is row-parallel): h_r B_r, a partial sum over the hidden units.
    WB_TRY(sgemm(rows, out, h, 1.0f, act.h[0], h, params + B.offset, out, 0.0f, y, out));
    WB_TRY(cudaDeviceSynchronize());
  }
  // The sum over the ranks, then b, once: added before the sum it would count n times.
  lab10::ring_allreduce(y, y, ny, comm::DataType::f32, comm::RedOp::sum, comm);
  if (rows > 0) {
    add_rows_kernel<<<blocks_for(ny), kThreads>>>(params + b.offset, rows, out, y);
    WB_TRY(launched());
  }
  return cudaDeviceSynchronize();
}

cudaError_t tp_backward(const TensorParallelMlp& block, const float* params, const float* x, int rows,
                        const float* dy, Activations& act, float* grads, float* dx, comm::Communicator& comm) {
  const int n = comm.size();
  if (rows < 0 || rows > act.max_rows || block.hidden < n || act.z.size() != 2) return cudaErrorInvalidValue;
  const Mlp local = block.local(n, comm.rank());
  const Tensor A = local.weight(0), a = local.bias(0), B = local.weight(1), b = local.bias(1);
  const int in = block.in, h = local.widths[1], out = block.out;
  float* dz = act.scratch[0];
  float* transposed = act.scratch[1];
  if (rows == 0) {
    fill_kernel<<<blocks_for(local.parameter_count()), kThreads>>>(grads, local.parameter_count(), 0.0f);
    WB_TRY(launched());
    WB_TRY(cudaDeviceSynchronize());
  } else {
    // db = column sums of dy (the same on every rank); dB_r = h_r^T dy.
    column_sum_kernel<<<(out + kThreads - 1) / kThreads, kThreads>>>(dy, rows, out, false, grads + b.offset);
    WB_TRY(launched());
    WB_TRY(transpose_conflict_free(rows, h, act.h[0], transposed));
    WB_TRY(sgemm(h, out, rows, 1.0f, transposed, rows, dy, out, 0.0f, grads + B.offset, out));
    // dz_r = dy B_r^T through the ReLU: this rank's hidden units need no communication.
    WB_TRY(transpose_conflict_free(h, out, params + B.offset, transposed));
    WB_TRY(sgemm(rows, h, out, 1.0f, dy, out, transposed, h, 0.0f, dz, h));
    relu_backward_kernel<<<blocks_for(std::size_t(rows) * h), kThreads>>>(act.z[0], dz, std::size_t(rows) * h, dz);
    WB_TRY(launched());
    // dA_r = x^T dz_r, da_r = column sums of dz_r.
    WB_TRY(transpose_conflict_free(rows, in, x, transposed));
    WB_TRY(sgemm(in, h, rows, 1.0f, transposed, rows, dz, h, 0.0f, grads + A.offset, h));
    column_sum_kernel<<<(h + kThreads - 1) / kThreads, kThreads>>>(dz, rows, h, false, grads + a.offset);
    WB_TRY(launched());
    // This rank's share of dx: dz_r A_r^T.
    WB_TRY(transpose_conflict_free(in, h, params + A.offset, transposed));
    WB_TRY(sgemm(rows, in, h, 1.0f, dz, h, transposed, in, 0.0f, dx, in));
    WB_TRY(cudaDeviceSynchronize());
  }
  // x fed every rank's hidden units: its gradient is the sum of every rank's share.
  lab10::ring_allreduce(dx, dx, std::size_t(rows) * in, comm::DataType::f32, comm::RedOp::sum, comm);
  return cudaSuccess;
}

// ---- pipeline parallelism ----------------------------------------------------------------------

namespace {

// One entry of a stage's schedule: micro-batch `micro`'s forward or backward pass.
struct PipeOp {
  int micro;
  bool backward;
};

std::vector<PipeOp> stage_schedule(Schedule schedule, int micro_batches, int n, int stage) {
  std::vector<PipeOp> ops;
  if (schedule == Schedule::gpipe) {
    for (int j = 0; j < micro_batches; ++j) ops.push_back({j, false});
    for (int j = 0; j < micro_batches; ++j) ops.push_back({j, true});
    return ops;
  }
  // 1F1B: fill the pipe with the forwards the stages after this one still need, then one
  // forward for every backward, then drain. At most n - stage micro-batches are in flight.
  const int warmup = std::min(n - stage - 1, micro_batches);
  for (int j = 0; j < warmup; ++j) ops.push_back({j, false});
  for (int k = 0; warmup + k < micro_batches; ++k) {
    ops.push_back({warmup + k, false});
    ops.push_back({k, true});
  }
  for (int k = micro_batches - warmup; k < micro_batches; ++k) ops.push_back({k, true});
  return ops;
}

}  // namespace

cudaError_t pipeline_train_step(Schedule schedule, const Mlp& m, const Batch& global, int micro_batches,
                                float* params, float* grads, std::vector<PipelineSlot>& slots, const Optimizer& opt,
                                OptimizerState& state, comm::Communicator& comm) {
  const int n = comm.size(), s = comm.rank();
  if (global.rows <= 0 || micro_batches < 1 || n > m.layers() ||
      static_cast<int>(slots.size()) < pipeline_slots(schedule, micro_batches, n, s))
    return cudaErrorInvalidValue;
  const Mlp stage = pipeline_stage_model(m, n, s);
  const std::size_t base = m.weight(pipeline_layers(m, n, s).offset).offset, count = stage.parameter_count();
  const int in = stage.inputs(), out = stage.classes(), last = stage.layers() - 1;
  const bool first_stage = s == 0, last_stage = s == n - 1;
  for (const PipelineSlot& slot : slots)
    if (slot.act.max_rows < partition(global.rows, micro_batches, 0).count ||
        static_cast<int>(slot.act.z.size()) != stage.layers())
      return cudaErrorInvalidValue;
  float* p = params + base;
  float* g = grads + base;
  fill_kernel<<<blocks_for(count), kThreads>>>(g, count, 0.0f);  // the micro-batches add to it
  WB_TRY(launched());
  WB_TRY(cudaDeviceSynchronize());
  constexpr int kTag = 1400;  // micro-batch j: activations kTag + 2j, their gradients kTag + 2j + 1
  // Sends do not block (isend): a stage waits only for what it receives, and each send is
  // waited for before its slot is used again. With blocking sends, 1F1B's steady state
  // deadlocks: stage s sends micro-batch j's activations while stage s + 1 sends micro-batch
  // j - (n - s - 1)'s gradient, each waiting for the other to receive.
  std::vector<std::vector<comm::Request>> pending(slots.size());
  const std::size_t nslots = slots.size();
  for (const PipeOp& op : stage_schedule(schedule, micro_batches, n, s)) {
    const Range mb = partition(global.rows, micro_batches, op.micro);
    if (mb.count == 0) continue;  // every stage skips an empty micro-batch alike
    PipelineSlot& slot = slots[static_cast<std::size_t>(op.micro) % nslots];
    std::vector<comm::Request>& sent = pending[static_cast<std::size_t>(op.micro) % nslots];
    const int rows = mb.count;
    const int tag = kTag + 2 * op.micro;
    if (!op.backward) {
      comm.wait_all(sent);  // the slot's previous micro-batch has left it
      sent.clear();
      if (first_stage) {
        WB_TRY(cudaMemcpy(slot.input, global.x + std::size_t(mb.offset) * in, std::size_t(rows) * in * sizeof(float),
                          cudaMemcpyDeviceToDevice));
      } else {
        comm.recv(slot.input, std::size_t(rows) * in * sizeof(float), s - 1, tag);
      }
      WB_TRY(mlp_forward(stage, p, slot.input, rows, slot.act));
      if (!last_stage) {
        // The stage's output is its last layer's ReLU (the next stage's input).
        const std::size_t no = std::size_t(rows) * out;
        relu_kernel<<<blocks_for(no), kThreads>>>(slot.act.z[last], no, slot.act.h[last]);
        WB_TRY(launched());
        WB_TRY(cudaDeviceSynchronize());
        sent.push_back(comm.isend(slot.act.h[last], no * sizeof(float), s + 1, tag));
      }
      continue;
    }
    // Backward: dL/d(z of the last layer) into scratch[0].
    const std::size_t no = std::size_t(rows) * out;
    if (last_stage) {
      WB_TRY(softmax_forward(slot.act.z[last], slot.act.probs, rows, out));
      cross_entropy_grad_kernel<<<blocks_for(no), kThreads>>>(slot.act.probs, global.labels + mb.offset, rows, out,
                                                               1.0f / static_cast<float>(global.rows),
                                                               slot.act.scratch[0]);
    } else {
      comm.recv(slot.output_grad, no * sizeof(float), s + 1, tag + 1);
      relu_backward_kernel<<<blocks_for(no), kThreads>>>(slot.act.z[last], slot.output_grad, no, slot.act.scratch[0]);
    }
    WB_TRY(launched());
    WB_TRY(backward_layers(stage, p, slot.input, rows, slot.act, g, true, 0,
                           [](int) { return cudaSuccess; }, first_stage ? nullptr : slot.input_grad));
    if (!first_stage)
      sent.push_back(comm.isend(slot.input_grad, std::size_t(rows) * in * sizeof(float), s - 1, tag + 1));
  }
  for (std::vector<comm::Request>& sent : pending) comm.wait_all(sent);
  state.t += 1;
  return optimizer_step(opt, state, p, g, state.m + base, state.v ? state.v + base : nullptr, count);
}

}  // namespace lab12
