// Checks of lab 12's model-parallel steps: tensor parallelism (a Megatron-style MLP block split
// by its hidden units) and pipeline parallelism (the model's layers split into stages, GPipe
// and 1F1B schedules), each against the checker's double-precision model of the whole model
// with allowances from the summation order (trainer_reference.h), not tuned.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include <mpi.h>

#include "check_support.h"

namespace {

using namespace lab12_check;
using comm::check::record;

// "" when `v` holds rank 0's bits on every rank, else a message naming the first difference.
std::string same_on_every_rank(const std::vector<float>& v, const std::string& what, const std::string& why) {
  std::vector<float> root = v;
  if (!root.empty()) MPI_Bcast(root.data(), static_cast<int>(root.size()), MPI_FLOAT, 0, MPI_COMM_WORLD);
  for (std::size_t i = 0; i < v.size(); ++i)
    if (std::memcmp(&v[i], &root[i], sizeof(float)) != 0) {
      std::ostringstream s;
      s.precision(9);
      s << what << "[" << i << "] is " << v[i] << " on rank " << comm::check::world().rank() << " and " << root[i]
        << " on rank 0: " << why;
      return s.str();
    }
  return "";
}

// ---- tensor parallelism -------------------------------------------------------------------------

struct TpCase {
  lab12::TensorParallelMlp block;
  int rows;
};

std::string block_name(const lab12::TensorParallelMlp& b) {
  return "{in " + std::to_string(b.in) + ", hidden " + std::to_string(b.hidden) + ", out " + std::to_string(b.out) +
         "}";
}

// One forward and backward pass of the block split over the ranks, compared with the checker's
// double model of the whole block. With `count_messages`, each pass must send no more than one
// ring all-reduce of its output (y forward, dx backward), counted in the same run.
std::string check_tp(const TpCase& c, std::uint64_t seed, bool count_messages) {
  comm::Communicator& w = comm::check::world();
  const int n = w.size(), r = w.rank();
  const lab12::TensorParallelMlp& blk = c.block;
  const Mlp full{{blk.in, blk.hidden, blk.out}, {}};
  const Mlp local = blk.local(n, r);
  const lab12::Range units = blk.hidden_units(n, r);
  const int h = units.count, rows = c.rows;
  const std::string call = "(block " + block_name(blk) + ", rows=" + std::to_string(rows) + ", " + ranks_text(n) +
                           ", rank " + std::to_string(r) + " holds hidden units [" + std::to_string(units.offset) +
                           ", " + std::to_string(units.offset + h) + "))";
  // The whole block's parameters (W0 = A, b0 = a, W1 = B, b1 = b), the same on every rank, and
  // where each of this rank's local parameters sits in them.
  const std::vector<float> params = initial_params(full, seed);
  const std::vector<Tensor> ft = full.tensors(), lt = local.tensors();
  std::vector<std::size_t> at(local.parameter_count());
  const auto place = [&](int t, std::size_t row0, std::size_t col0) {  // from row row0, column col0 of the whole
    for (int i = 0; i < lt[t].rows; ++i)
      for (int j = 0; j < lt[t].cols; ++j)
        at[lt[t].offset + std::size_t(i) * lt[t].cols + j] = ft[t].offset + (row0 + i) * ft[t].cols + col0 + j;
  };
  place(0, 0, units.offset);  // A_r: its columns of A
  place(1, 0, units.offset);  // a_r
  place(2, units.offset, 0);  // B_r: its rows of B
  place(3, 0, 0);             // b
  std::vector<float> mine(at.size());
  for (std::size_t i = 0; i < at.size(); ++i) mine[i] = params[at[i]];
  const HostBatch b = random_batch(full, rows, seed + 1);
  std::vector<double> dy64(std::size_t(rows) * blk.out);
  std::vector<float> dy(dy64.size());
  {
    std::mt19937_64 rng(seed + 2);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (std::size_t i = 0; i < dy.size(); ++i) dy64[i] = dy[i] = static_cast<float>(u(rng) / std::max(rows, 1));
  }
  Device<float> d_params(mine), d_x(b.x), d_dy(dy), d_y(std::size_t(rows) * blk.out), d_grads(mine.size()),
      d_dx(std::size_t(rows) * blk.in);
  d_grads.upload(std::vector<float>(mine.size(), 1e6f));  // overwritten, not added to
  lab12::Activations act;
  std::string f = failed(lab12::allocate_activations(local, rows, &act), "allocate_activations");
  if (!f.empty()) return f;
  const std::uint64_t forward_budget = count_messages ? one_allreduce_sends(std::size_t(rows) * blk.out) : 0;
  const std::uint64_t backward_budget = count_messages ? one_allreduce_sends(std::size_t(rows) * blk.in) : 0;
  w.barrier();
  w.reset_stats();
  std::string library_calls;  // library collectives and raw MPI calls of the two passes
  {
    comm::check::LearnerCall window("tp_forward" + call);
    f = failed(lab12::tp_forward(blk, d_params.get(), d_x.get(), rows, act, d_y.get(), w), "tp_forward" + call);
    library_calls = window.close();
  }
  const std::uint64_t forward_sends = w.stats().sends;
  w.reset_stats();
  if (f.empty()) {
    comm::check::LearnerCall window("tp_backward" + call);
    f = failed(lab12::tp_backward(blk, d_params.get(), d_x.get(), rows, d_dy.get(), act, d_grads.get(), d_dx.get(), w),
               "tp_backward" + call);
    const std::string calls = window.close();
    if (library_calls.empty()) library_calls = calls;
  }
  const std::uint64_t backward_sends = w.stats().sends;
  if (f.empty()) f = library_calls;
  std::vector<float> z0, h0;
  if (f.empty()) {
    z0 = host_copy(act.z[0], std::size_t(rows) * h);
    h0 = host_copy(act.h[0], std::size_t(rows) * h);
  }
  lab12::free_activations(&act);
  if (stop_together(f)) return f;  // the comparisons below make collective calls
  if (count_messages) {
    auto too_many = [&](const char* fn, std::uint64_t got, std::uint64_t budget, const std::string& what) {
      return fn + call + ": rank " + std::to_string(r) + " sent " + std::to_string(got) + " messages; one ring " +
             "all-reduce of " + what + " sends " + std::to_string(budget) + " (counted in the same run). The block " +
             "communicates once each way: y's partial sums forward, dx's backward.";
    };
    if (forward_sends > forward_budget) return too_many("tp_forward", forward_sends, forward_budget, "y");
    if (backward_sends > backward_budget) return too_many("tp_backward", backward_sends, backward_budget, "dx");
    return "";
  }
  const std::vector<float> y = d_y.download(), grads = d_grads.download(), dx = d_dx.download();
  const lab12::reference::Pass ref =
      lab12::reference::run(full, params, b.x.data(), nullptr, rows, 1.0, true, n, &dy64, true);
  const double g = lab12::reference::gamma(ref.k);
  // This rank's hidden units of z0 and h0.
  std::vector<std::size_t> own;
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < h; ++j) own.push_back(std::size_t(i) * blk.hidden + units.offset + j);
  // Every comparison runs on every rank (two of them are collective), the first failure wins.
  std::vector<std::string> found;
  found.push_back(compare(z0, pick(ref.z[0], own), pick(scaled(ref.zmag[0], g), own),
                          matrix_element("z", h, units.offset),
                          "tp_forward" + call + ", act.z[0] (x A + a, this rank's hidden units)"));
  found.push_back(compare(h0, pick(ref.h[0], own), pick(scaled(ref.hmag[0], g), own),
                          matrix_element("h", h, units.offset), "tp_forward" + call + ", act.h[0] (relu of act.z[0])"));
  std::string fy = compare(y, ref.z[1], scaled(ref.zmag[1], g), matrix_element("y", blk.out),
                           "tp_forward" + call + ", y (expected: relu(x A + a) B + b of the whole block)");
  if (!fy.empty() && n > 1) {
    // b added on every rank before the sum: y is off by (n - 1) b everywhere.
    bool every = !y.empty();
    for (std::size_t i = 0; i < y.size() && every; ++i) {
      const double off = y[i] - ref.z[1][i], bb = params[ft[3].offset + i % blk.out];
      every = std::fabs(off - (n - 1) * bb) <= 1e-4 * (1 + std::fabs(bb) * n);
    }
    if (every)
      fy += "\n    y is (n - 1) b too large everywhere: b was added on every rank before the sum. Add it once, "
            "after the all-reduce.";
  }
  found.push_back(fy);
  found.push_back(
      same_on_every_rank(y, "y", "after the all-reduce every rank must hold the same y (b added the same way)."));
  found.push_back(compare(grads, pick(ref.grads, at), pick(scaled(ref.grads_mag, g), at),
                          [&](std::size_t i) { return "grads " + element_name(full, at[i]) + " (of the whole block)"; },
                          "tp_backward" + call + ", this rank's gradients (dA_r, da_r, dB_r, db)"));
  std::string fdx =
      compare(dx, ref.dx, scaled(ref.dx_mag, g), matrix_element("dx", blk.in),
              "tp_backward" + call + ", dx (expected: dy B^T through the ReLU, times A^T, of the whole block)");
  if (!fdx.empty() && n > 1)
    fdx += "\n    dx depends on every hidden unit: it is the sum over the ranks of dz_r A_r^T (one all-reduce).";
  found.push_back(fdx);
  found.push_back(same_on_every_rank(dx, "dx", "after the all-reduce every rank must hold the same dx."));
  for (const std::string& e : found)
    if (!e.empty()) return e;
  return "";
}

const std::vector<TpCase>& tp_cases() {
  // Hidden units uneven over 2-4 ranks (7, 9, 97), one per rank at 4 ranks, an empty batch.
  static const std::vector<TpCase> cases = {
      {{64, 97, 10}, 37}, {{5, 7, 3}, 3}, {{16, 4, 8}, 1}, {{12, 9, 6}, 0}};
  return cases;
}

}  // namespace

WB_CHECK(Correctness, TensorParallelMatchesSingleRank, .weight = 3,
         .passes = "4 blocks: hidden 97, 7 and 9 (uneven over the ranks), 4 (one per rank at 4 ranks), rows 37, 3, "
                   "1, 0: every rank's `z`, `h` and gradients, `y` and `dx` within the fp32 bound of the whole "
                   "block in double; `y` and `dx` bitwise equal on every rank",
         .hint = "Forward: z = x A_r + a_r, h = relu(z), y = h B_r, ring_allreduce(y), then + b once. "
                 "Backward: db and dB_r from dy, dz = dy B_r^T where z > 0, dA_r and da_r from dz, dx = "
                 "dz A_r^T summed with ring_allreduce.") {
  int done = 0;
  const std::string f = run_lab([&] {
    for (const TpCase& c : tp_cases()) {
      std::string e = check_tp(c, 1300 + 11 * done, false);
      if (stop_together(e)) return e;
      ++done;
    }
    return std::string();
  });
  record("measured", std::to_string(done) + "/" + std::to_string(tp_cases().size()) + " blocks matched");
  verdict(f);
}

WB_CHECK(Performance, TensorParallelCommunicatesOnceEachWay, .weight = 1, .ranks = {2, 4},
         .passes = "block {in 64, hidden 97, out 10}, 37 rows: `tp_forward` sends no more messages than one ring "
                   "all-reduce of `y`, `tp_backward` than one of `dx`, counted in the same run",
         .hint = "One ring_allreduce of y in tp_forward and one of dx in tp_backward; the gradients of "
                 "A_r, a_r and B_r need no communication.") {
  std::string f = run_lab([&] { return check_tp(tp_cases()[0], 1300, true); });
  verdict(f);
}

namespace {

// ---- pipeline parallelism -----------------------------------------------------------------------

struct PipeCase {
  Mlp m;
  lab12::Optimizer opt;
  int rows, micro_batches;
};

const char* schedule_name(lab12::Schedule s) { return s == lab12::Schedule::gpipe ? "GPipe" : "1F1B"; }

// 1F1B's point: stage s never holds more than n - s micro-batches between their forward and
// their backward pass. From the stage's messages: when it posts micro-batch j's activations to
// stage s + 1, at least j + 1 - (n - s) gradients from s + 1 must have arrived.
std::string check_in_flight(const std::vector<comm::MessageTime>& msgs, int n, int s, const std::string& call) {
  if (s == n - 1) return "";
  std::vector<double> sent, arrived;
  for (const comm::MessageTime& t : msgs)
    if (t.peer == s + 1) (t.recv ? arrived : sent).push_back(t.recv ? t.completed : t.posted);
  std::sort(sent.begin(), sent.end());
  for (std::size_t j = 0; j < sent.size(); ++j) {
    const long got = std::count_if(arrived.begin(), arrived.end(), [&](double c) { return c <= sent[j]; });
    const long in_flight = static_cast<long>(j) + 1 - got;
    if (in_flight > n - s) {
      std::ostringstream o;
      o << call << ": stage " << s << " sent micro-batch " << j << "'s activations with " << in_flight
        << " micro-batches in flight (forward done, backward not): 1F1B keeps at most n - s = " << n - s
        << " on stage " << s << ". Run n - s - 1 = " << n - s - 1
        << " forward passes first, then alternate one forward and one backward.";
      return o.str();
    }
  }
  return "";
}

// `steps` pipeline steps of one case: every stage's gradients are those of the mean loss over
// the whole global batch at the parameters before the step (its range of the flat buffer), its
// parameters one optimizer step from them, and nothing outside its range is touched.
std::string check_pipeline(lab12::Schedule schedule, const PipeCase& c, int steps, std::uint64_t seed, int* done) {
  comm::Communicator& w = comm::check::world();
  const int n = w.size(), s = w.rank();
  const Mlp& m = c.m;
  const std::size_t P = m.parameter_count();
  const Mlp stage = lab12::pipeline_stage_model(m, n, s);
  const lab12::Range layers = lab12::pipeline_layers(m, n, s);
  const std::size_t lo = m.weight(layers.offset).offset, hi = lo + stage.parameter_count();
  const int slots_n = lab12::pipeline_slots(schedule, c.micro_batches, n, s);
  const int max_rows = lab12::partition(c.rows, c.micro_batches, 0).count;
  std::ostringstream name;
  name << "pipeline_train_step(" << schedule_name(schedule) << ", model " << model_name(m) << ", global batch "
       << c.rows << ", " << c.micro_batches << " micro-batches, " << ranks_text(n) << "; stage " << s
       << " holds layers " << layers.offset << ".." << layers.offset + layers.count - 1 << " with " << slots_n
       << (slots_n == 1 ? " slot" : " slots") << ")";
  const float sentinel = 7777.0f;
  // The whole model as the stages hold it (each rank's buffer is current in its own range only).
  std::vector<float> model = initial_params(m, seed);
  Device<float> d_params(model), d_grads(std::vector<float>(P, sentinel)),
      d_m(std::vector<float>(P, 0.0f)), d_v(std::vector<float>(P, 0.0f));
  std::vector<lab12::PipelineSlot> slots(static_cast<std::size_t>(slots_n));
  std::string f;
  for (lab12::PipelineSlot& slot : slots)
    if (f.empty()) f = failed(lab12::allocate_pipeline_slot(stage, max_rows, &slot), "allocate_pipeline_slot");
  lab12::OptimizerState state{d_m.get(), d_v.get(), 0};
  for (int step = 1; step <= steps && f.empty(); ++step) {
    const std::string call = name.str() + ", step " + std::to_string(step);
    const HostBatch b = random_batch(m, c.rows, seed + 1000 * step);
    Device<float> d_x(b.x);
    Device<int> d_labels(b.labels);
    const std::vector<float> before = d_params.download(), grads0 = d_grads.download(), m0 = d_m.download(),
                             v0 = d_v.download();
    w.barrier();
    w.reset_stats();
    w.record_message_times(true);
    comm::check::LearnerCall window(call);  // library collectives and raw MPI calls of the step
    f = failed(lab12::pipeline_train_step(schedule, m, {d_x.get(), d_labels.get(), c.rows}, c.micro_batches,
                                          d_params.get(), d_grads.get(), slots, c.opt, state, w),
               call);
    const std::string library_calls = window.close();
    w.record_message_times(false);
    if (!f.empty()) break;
    const std::vector<float> grads = d_grads.download(), after = d_params.download(), m1 = d_m.download(),
                             v1 = d_v.download();
    const auto judge = [&]() -> std::string {
      if (state.t != step)
        return call + ": state.t is " + std::to_string(state.t) + " after " + std::to_string(step) + " steps.";
      if (schedule == lab12::Schedule::one_f_one_b && c.rows >= c.micro_batches) {
        std::string e = check_in_flight(w.message_times(), n, s, call);
        if (!e.empty()) return e;
      }
      for (std::size_t i = 0; i < P; ++i) {
        if (i >= lo && i < hi) continue;
        if (std::memcmp(&grads[i], &grads0[i], 4) || std::memcmp(&after[i], &before[i], 4) || m1[i] != m0[i] ||
            v1[i] != v0[i])
          return call + ": stage " + std::to_string(s) + " wrote " + element_name(m, i) +
                 ", outside its own tensors [" + std::to_string(lo) + ", " + std::to_string(hi) +
                 ") of the flat buffers: a stage owns its layers' parameters, gradients and optimizer state only.";
      }
      std::vector<std::size_t> own(hi - lo);
      std::iota(own.begin(), own.end(), lo);
      // Micro-batches add their partial sums: the chain is longer by their count.
      const lab12::reference::Pass ref = lab12::reference::run(m, model, b.x.data(), b.labels.data(), c.rows,
                                                               1.0 / c.rows, true, c.micro_batches + 1);
      const std::vector<double> allow = scaled(ref.grads_mag, lab12::reference::gamma(ref.k));
      std::string e = compare(pick(grads, own), pick(ref.grads, own), pick(allow, own), flat_element(m, "grads", &own),
                              call + ": stage " + std::to_string(s) + "'s gradients (expected: of the mean loss over " +
                                  "the whole global batch, summed over the micro-batches)");
      if (!e.empty()) return e;
      const Expected x = expected_step(c.opt, step, pick(before, own), pick(grads, own), pick(m0, own), pick(v0, own));
      return compare(pick(after, own), x.p, x.allow_p, flat_element(m, "params", &own),
                     call + ": stage " + std::to_string(s) + "'s parameters after the optimizer step (expected: one " +
                         "step from those before it with its summed gradients)");
    };
    f = library_calls.empty() ? judge() : library_calls;
    // The whole model after the step, every stage's own range (every rank takes part).
    std::vector<float> ranges(P, 0.0f);
    std::copy(after.begin() + lo, after.begin() + hi, ranges.begin() + lo);
    MPI_Allreduce(ranges.data(), model.data(), static_cast<int>(P), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    if (stop_together(f)) break;
    ++*done;
  }
  for (lab12::PipelineSlot& slot : slots) lab12::free_pipeline_slot(&slot);
  return f;
}

const std::vector<PipeCase>& pipe_cases() {
  // Four layers, so every rank count up to 4 has a stage each. Uneven micro-batches (37 rows
  // in 4 or 8), one micro-batch, more micro-batches than stages; a boundary 1100 floats wide
  // (its messages are too large to be buffered, so blocking sends deadlock as on a real
  // network); an empty micro-batch (3 rows in 4).
  static const std::vector<PipeCase> cases = {
      {{{32, 24, 20, 16, 10}, {}}, adamw(1e-2f, 0.01f), 37, 4},
      {{{32, 24, 20, 16, 10}, {}}, sgd(0.1f, 0.9f, 1e-3f), 37, 1},
      {{{8, 16, 1100, 16, 10}, {}}, sgd(0.05f, 0.9f, 0.0f), 37, 8},
      {{{5, 7, 6, 4, 3}, {}}, sgd(0.1f, 0.9f, 1e-3f), 3, 4},
  };
  return cases;
}

void pipeline_check(lab12::Schedule schedule) {
  int done = 0;
  const int steps = 2;
  const std::string f = run_lab([&] {
    int k = 0;
    for (const PipeCase& c : pipe_cases()) {
      std::string e = check_pipeline(schedule, c, steps, 1400 + 17 * k++, &done);
      if (stop_together(e)) return e;
    }
    return std::string();
  });
  record("measured", std::to_string(done) + "/" + std::to_string(pipe_cases().size() * steps) + " stage steps matched");
  verdict(f);
}

}  // namespace

// What passes, for PipelineGPipeMatchesSingleProcess, Pipeline1F1BMatchesSingleProcess.
constexpr char kPipelinePasses[] = "4-layer models over 1 to 4 stages, 2 steps each: 37 rows in 4, 1 and 8 "
                                   "micro-batches, a boundary 1100 floats wide (too large to buffer: blocking sends "
                                   "deadlock), 3 rows in 4 micro-batches (one empty): each stage's gradients those "
                                   "of the mean loss over the whole global batch (fp32 bound), its parameters one "
                                   "optimizer step on, nothing outside its layers written; 1F1B: at most `n - s` "
                                   "micro-batches in flight on stage s, from the order of its messages";

WB_CHECK(Correctness, PipelineGPipeMatchesSingleProcess, .weight = 3,
         .passes = kPipelinePasses,
         .hint = "Every forward (receive the input from rank - 1, mlp_forward, send relu(z_last) to rank "
                 "+ 1), then every backward (receive dL/d(output), through the ReLU, the layers' "
                 "gradients added, dL/d(input) to rank - 1); scale 1/global.rows on the last stage.") {
  pipeline_check(lab12::Schedule::gpipe);
}

WB_CHECK(Correctness, Pipeline1F1BMatchesSingleProcess, .weight = 3,
         .passes = kPipelinePasses,
         .hint = "n - s - 1 forwards, then one forward and one backward in turn, then the remaining "
                 "backwards; micro-batch j in slot j % slots.size(); send with isend so that a stage "
                 "never blocks in a send while its neighbour sends to it.") {
  pipeline_check(lab12::Schedule::one_f_one_b);
}
