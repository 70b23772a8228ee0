// Data-parallel training step benchmark: lab 12's reference solution, per-tensor, flat,
// bucketed (a bucket-size sweep) and ZeRO-1, at 1, 2 and 4 ranks, each step split into
// compute (forward + backward), exposed communication (the time the step waits for the
// network after its backward pass has returned) and the optimizer step.
//
//   bench_trainer [--ranks 1,2,4] [--steps 30] [--rows-per-rank 32] [--out DIR]
//
// Started plainly, it runs itself under mpirun once per rank count, then prints the summary
// (scaling efficiency, the bucket-size sweep) and plots it (bench/trainer/plot_trainer.py,
// matplotlib) into DIR/trainer.png; DIR/trainer.csv holds every measurement. DIR defaults to
// the build tree's bench/ folder.
//
// Every variant's phases are timed by composing its step from the solution's own functions
// (mlp_forward, mlp_backward with on_gradient, BucketReducer, ring_allreduce,
// ring_reduce_scatter/allgather, the optimizer), with a barrier before each step and the
// slowest rank's time of each phase taken; the lab's own step function (ddp_train_step,
// bucketed_train_step, zero1_train_step) is timed beside it as a cross-check of the total.
// Weak scaling: each rank takes rows-per-rank rows, the global batch grows with the ranks.
// The variants run interleaved, step by step, so a slow moment of the machine hits them all.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/mpi_communicator.h"
#include "mpi_self_launch.h"
#include "ring_allreduce.h"
#include "trainer.h"

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

struct Options {
  std::vector<int> ranks = {1, 2, 4};
  int steps = 30, rows_per_rank = 32;
  std::string out;
};

// One variant of the step.
struct Variant {
  std::string name;       // per_tensor, flat, bucketed, zero1
  std::size_t floats = 0;  // bucketed: the bucket size
};

struct Phases {
  double compute = 0, comm = 0, optimizer = 0, total = 0, lab_step = 0;
  double exposed = 0;  // total - the no-communication step's total of the same round
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The slowest rank's value.
double slowest(double local) {
  double out = 0;
  MPI_Allreduce(&local, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return out;
}

class Bench {
 public:
  Bench(comm::Communicator& c, const lab12::Mlp& m, int rows_per_rank)
      : c_(c), m_(m), P_(m.parameter_count()), rows_(rows_per_rank * c.size()) {
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> params(P_), x(std::size_t(rows_) * m.inputs());
    for (float& p : params) p = 0.05f * u(rng);
    for (float& v : x) v = u(rng);
    std::vector<int> labels(rows_);
    for (int r = 0; r < rows_; ++r) labels[r] = r % m.classes();
    params_ = alloc(P_);
    grads_ = alloc(P_);
    m_state_ = alloc(P_);
    v_state_ = alloc(P_);
    x_ = alloc(x.size());
    loss_ = alloc(1);
    check(cudaMalloc(reinterpret_cast<void**>(&labels_), labels.size() * sizeof(int)), "cudaMalloc");
    check(cudaMemcpy(params_, params.data(), P_ * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
    check(cudaMemcpy(x_, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
    check(cudaMemcpy(labels_, labels.data(), labels.size() * sizeof(int), cudaMemcpyHostToDevice), "cudaMemcpy");
    check(lab12::allocate_activations(m, rows_per_rank, &act_), "allocate_activations");
    opt_.kind = lab12::Optimizer::Kind::adamw;
    opt_.adamw = {1e-4f, 0.9f, 0.999f, 1e-8f, 0.0f};
  }
  ~Bench() {
    lab12::free_activations(&act_);
    for (float* p : {params_, grads_, m_state_, v_state_, x_, loss_}) cudaFree(p);
    cudaFree(labels_);
  }

  // One step of `v`, its phases timed (this rank's times).
  Phases step(const Variant& v) {
    const lab12::Batch batch{x_, labels_, rows_};
    const lab12::Shard s = lab12::batch_shard(rows_, c_.size(), c_.rank());
    const float* x = x_ + std::size_t(s.offset) * m_.inputs();
    const int* labels = labels_ + s.offset;
    const float scale = 1.0f / static_cast<float>(rows_);
    lab12::OptimizerState state{m_state_, v_state_, 1};
    Phases p;
    c_.barrier();
    const double t0 = MPI_Wtime();
    double t1 = 0, t2 = 0;
    if (v.name == "bucketed") {
      lab12::BucketReducer reducer(m_, grads_, v.floats, c_);
      lab12::BackwardOptions o;
      o.on_gradient = [&](int t) { return reducer.ready(t); };
      check(lab12::mlp_forward(m_, params_, x, s.rows, act_), "mlp_forward");
      check(lab12::mlp_backward(m_, params_, x, labels, s.rows, scale, act_, grads_, loss_, o), "mlp_backward");
      t1 = MPI_Wtime();
      check(reducer.wait(), "BucketReducer::wait");
      t2 = MPI_Wtime();
      for (const lab12::Bucket& b : reducer.buckets())
        check(lab12::adamw_step(params_ + b.offset, grads_ + b.offset, m_state_ + b.offset, v_state_ + b.offset, b.count,
                                state.t, opt_.adamw),
              "adamw_step");
    } else {
      check(lab12::mlp_forward(m_, params_, x, s.rows, act_), "mlp_forward");
      check(lab12::mlp_backward(m_, params_, x, labels, s.rows, scale, act_, grads_, loss_), "mlp_backward");
      t1 = MPI_Wtime();
      if (v.name == "flat") {
        lab10::ring_allreduce(grads_, grads_, P_, comm::DataType::f32, comm::RedOp::sum, c_);
      } else if (v.name == "per_tensor") {
        for (const lab12::Tensor& t : m_.tensors())
          lab10::ring_allreduce(grads_ + t.offset, grads_ + t.offset, t.count, comm::DataType::f32, comm::RedOp::sum,
                                c_);
      } else if (v.name == "zero1") {  // the reduce-scatter here, the all-gather after the update
        lab10::ring_reduce_scatter(grads_, P_, comm::DataType::f32, comm::RedOp::sum, c_);
      }
      t2 = MPI_Wtime();
      if (v.name == "zero1") {
        const lab10::Chunk ch = lab10::chunk_of(P_, c_.size(), c_.rank());
        check(lab12::adamw_step(params_ + ch.offset, grads_ + ch.offset, m_state_, v_state_, ch.count, state.t,
                                opt_.adamw),
              "adamw_step");
        const double t3 = MPI_Wtime();
        lab10::ring_allgather(params_, P_, comm::DataType::f32, c_);
        t2 += MPI_Wtime() - t3;  // the all-gather is communication too
      } else {
        check(lab12::adamw_step(params_, grads_, m_state_, v_state_, P_, state.t, opt_.adamw), "adamw_step");
      }
    }
    const double t_end = MPI_Wtime();
    p.compute = t1 - t0;
    p.comm = t2 - t1;
    p.optimizer = (t_end - t0) - p.compute - p.comm;
    p.total = t_end - t0;
    // The lab's own step function, timed whole.
    if (v.name == "none") return p;
    c_.barrier();
    const double l0 = MPI_Wtime();
    if (v.name == "bucketed")
      check(lab12::bucketed_train_step(m_, batch, v.floats, params_, grads_, act_, opt_, state, c_), "bucketed step");
    else if (v.name == "zero1")
      check(lab12::zero1_train_step(m_, batch, params_, grads_, act_, opt_, state, c_), "zero1 step");
    else
      check(lab12::ddp_train_step(v.name == "flat" ? lab12::Reduction::flat : lab12::Reduction::per_tensor, m_, batch,
                                  params_, grads_, act_, opt_, state, c_),
            "ddp_train_step");
    p.lab_step = MPI_Wtime() - l0;
    return p;
  }

  std::size_t parameters() const { return P_; }
  int global_rows() const { return rows_; }

 private:
  static float* alloc(std::size_t n) {
    float* p = nullptr;
    check(cudaMalloc(reinterpret_cast<void**>(&p), std::max<std::size_t>(n, 1) * sizeof(float)), "cudaMalloc");
    return p;
  }

  comm::Communicator& c_;
  lab12::Mlp m_;
  std::size_t P_;
  int rows_;
  float *params_ = nullptr, *grads_ = nullptr, *m_state_ = nullptr, *v_state_ = nullptr, *x_ = nullptr,
        *loss_ = nullptr;
  int* labels_ = nullptr;
  lab12::Activations act_;
  lab12::Optimizer opt_;
};

const lab12::Mlp kModel{{64, 256, 256, 256, 256, 10}};

std::string model_name() {
  std::string s = "{";
  for (std::size_t i = 0; i < kModel.widths.size(); ++i) s += (i ? ", " : "") + std::to_string(kModel.widths[i]);
  return s + "}";
}

std::vector<Variant> variants(std::size_t P) {
  // Bucket sizes: one bucket (the flat step with a thread), about a quarter and a sixteenth
  // of the model, and one bucket per tensor.
  // "none" is the baseline: the same forward, backward and optimizer with no communication.
  std::vector<Variant> out = {{"none", 0}, {"per_tensor", 0}, {"flat", 0}};
  std::size_t last = 0;
  for (std::size_t floats : {P, P / 4, P / 16, P / 64, std::size_t(1)}) {
    const std::size_t buckets = lab12::make_buckets(kModel, floats).size();
    if (buckets != last) out.push_back({"bucketed", floats});  // one entry per bucket count
    last = buckets;
  }
  out.push_back({"zero1", 0});
  return out;
}

int worker(const Options& o, int argc, char** argv) {
  comm::MpiSession session(&argc, &argv);
  std::unique_ptr<comm::Communicator> c = comm::make_mpi_communicator();
  Bench bench(*c, kModel, o.rows_per_rank);
  const std::vector<Variant> vs = variants(bench.parameters());
  std::vector<std::vector<Phases>> runs(vs.size());
  for (int s = -2; s < o.steps; ++s)  // two warm-up rounds
    for (std::size_t i = 0; i < vs.size(); ++i) {
      Phases p = bench.step(vs[i]);
      p.compute = slowest(p.compute);
      p.comm = slowest(p.comm);
      p.optimizer = slowest(p.optimizer);
      p.total = slowest(p.total);
      p.lab_step = slowest(p.lab_step);
      if (s < 0) continue;
      runs[i].push_back(p);
      runs[i].back().exposed = p.total - runs[0].back().total;  // vs[0] is "none", run first in each round
    }
  if (c->rank() == 0) {
    std::ofstream csv(o.out + "/trainer.csv", std::ios::app);
    for (std::size_t i = 0; i < vs.size(); ++i) {
      auto med = [&](double Phases::*f) {
        std::vector<double> v;
        for (const Phases& p : runs[i]) v.push_back(p.*f * 1e3);
        return median(v);
      };
      const std::size_t buckets = vs[i].name == "bucketed" ? lab12::make_buckets(kModel, vs[i].floats).size() : 0;
      csv << c->size() << ',' << vs[i].name << ',' << vs[i].floats << ',' << buckets << ',' << bench.global_rows()
          << ',' << med(&Phases::compute) << ',' << med(&Phases::comm) << ',' << med(&Phases::exposed) << ','
          << med(&Phases::optimizer) << ',' << med(&Phases::total) << ',' << med(&Phases::lab_step) << '\n';
    }
  }
  return 0;
}

struct Row {
  int ranks = 0;
  std::string variant;
  std::size_t floats = 0, buckets = 0;
  int rows = 0;
  double compute = 0, wait = 0, exposed = 0, optimizer = 0, total = 0, lab_step = 0;
  std::string label() const {
    return variant == "bucketed" ? "bucketed(" + std::to_string(buckets) + ")" : variant;
  }
};

std::vector<Row> read_csv(const std::string& path) {
  std::vector<Row> rows;
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::stringstream s(line);
    std::string f[11];
    for (auto& x : f) std::getline(s, x, ',');
    Row r;
    r.ranks = std::stoi(f[0]);
    r.variant = f[1];
    r.floats = std::stoul(f[2]);
    r.buckets = std::stoul(f[3]);
    r.rows = std::stoi(f[4]);
    r.compute = std::stod(f[5]);
    r.wait = std::stod(f[6]);
    r.exposed = std::stod(f[7]);
    r.optimizer = std::stod(f[8]);
    r.total = std::stod(f[9]);
    r.lab_step = std::stod(f[10]);
    rows.push_back(r);
  }
  return rows;
}

void summarize(const std::vector<Row>& rows, std::size_t P, int rows_per_rank) {
  std::printf("\nModel %s: %zu parameters (%.2f MB of fp32 gradients); %d rows per rank (weak scaling); medians "
              "of the slowest rank's times, ms.\n\n",
              model_name().c_str(), P, P * 4.0 / 1e6, rows_per_rank);
  std::printf("%5s  %-14s %9s %9s %10s %10s %9s %9s %11s\n", "ranks", "variant", "compute", "wait", "exposed",
              "optimizer", "step", "lab step", "efficiency");
  std::map<std::string, double> one_rank;
  for (const Row& r : rows)
    if (r.ranks == 1) one_rank[r.label()] = r.total;
  for (const Row& r : rows) {
    const double base = one_rank.count(r.label()) ? one_rank[r.label()] : 0;
    char eff[32] = "-";
    if (base > 0) std::snprintf(eff, sizeof eff, "%.0f%%", 100.0 * base / r.total);
    char lab[32] = "-";
    if (r.variant != "none") std::snprintf(lab, sizeof lab, "%.3f", r.lab_step);
    std::printf("%5d  %-14s %9.3f %9.3f %10.3f %10.3f %9.3f %9s %11s\n", r.ranks, r.label().c_str(), r.compute,
                r.wait, r.exposed, r.optimizer, r.total, lab, eff);
  }
  std::printf(
      "\ncompute: forward + backward (bucketed: with its buckets' all-reduces running beside it); wait: the time "
      "blocked on communication after the backward pass; exposed: the step minus the no-communication step "
      "(none) of the same round, the communication cost not hidden; lab step: the lab's own step function, "
      "timed whole; efficiency: the 1-rank step over this one (weak scaling, 100%% ideal).\n");
  // The overlap, side by side in this run: bucketed vs flat exposed communication.
  for (int n = 2; n <= 64; n *= 2) {
    const Row *flat = nullptr, *best = nullptr;
    for (const Row& r : rows)
      if (r.ranks == n) {
        if (r.variant == "flat") flat = &r;
        if (r.variant == "bucketed" && r.buckets > 1 && (!best || r.exposed < best->exposed)) best = &r;
      }
    if (!flat || !best) continue;
    std::printf("ranks=%d exposed_comm_ms flat=%.3f %s=%.3f", n, flat->exposed, best->label().c_str(), best->exposed);
    if (flat->exposed > 0)
      std::printf(" ratio=%.2f\n", best->exposed / flat->exposed);
    else
      std::printf(" (flat's exposed communication is within the noise of this machine: no ratio)\n");
  }
}

// The first Python that has matplotlib: $WB_PYTHON, python3 on PATH, the system's python3.
std::string python_with_matplotlib() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("WB_PYTHON")) candidates.push_back(env);
  candidates.push_back("python3");
  candidates.push_back("/usr/bin/python3");
  for (const std::string& py : candidates)
    if (std::system(("'" + py + "' -c 'import matplotlib' >/dev/null 2>&1").c_str()) == 0) return py;
  return "python3";  // the plot script then says what to install
}

std::string default_out(const char* argv0) {
  // <build>/bin/bench_trainer -> <build>/bench
  std::string self = argv0;
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n > 0) self.assign(buf, static_cast<std::size_t>(n));
  const std::size_t slash = self.rfind('/');
  const std::string bin = slash == std::string::npos ? "." : self.substr(0, slash);
  const std::string out = bin + "/../bench";
  char resolved[4096];
  // realpath needs the folder to exist; main creates it, so resolve the parent (the build tree).
  if (realpath((bin + "/..").c_str(), resolved)) return std::string(resolved) + "/bench";
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Options o;
    o.out = default_out(argv[0]);
    std::vector<char*> pass = {argv[0]};
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--ranks" && i + 1 < argc) {
        o.ranks = bench::parse_ranks(argv[++i]);
        continue;
      }
      if (a == "--steps" && i + 1 < argc) {
        pass.push_back(argv[i]);
        o.steps = std::atoi(argv[i + 1]);
      } else if (a == "--rows-per-rank" && i + 1 < argc) {
        pass.push_back(argv[i]);
        o.rows_per_rank = std::atoi(argv[i + 1]);
      } else if (a == "--out" && i + 1 < argc) {
        pass.push_back(argv[i]);
        o.out = argv[i + 1];
      } else {
        std::fprintf(stderr, "bench_trainer: unknown argument '%s'\nusage: bench_trainer [--ranks 1,2,4] "
                             "[--steps 30] [--rows-per-rank 32] [--out DIR]\n", a.c_str());
        return 2;
      }
      pass.push_back(argv[++i]);
    }
    if (o.steps < 1 || o.rows_per_rank < 1) throw std::runtime_error("--steps and --rows-per-rank must be >= 1");
    if (bench::under_mpi()) return worker(o, argc, argv);
    if (std::system(("mkdir -p '" + o.out + "'").c_str()) != 0)
      throw std::runtime_error("cannot create the output folder " + o.out);
    const std::string csv = o.out + "/trainer.csv";
    {
      std::ofstream head(csv, std::ios::trunc);
      head << "ranks,variant,bucket_floats,buckets,global_rows,compute_ms,wait_ms,exposed_comm_ms,optimizer_ms,"
              "step_ms,lab_step_ms\n";
    }
    std::string flags = "";
    for (std::size_t i = 1; i < pass.size(); ++i) flags += std::string(" ") + pass[i];
    int rc = 0;
    for (int n : o.ranks) {
      std::printf("running %d rank%s (%d steps of each variant)...\n", n, n == 1 ? "" : "s", o.steps);
      rc |= bench::launch(n, pass.data(), static_cast<int>(pass.size()));
    }
    if (rc != 0) return rc;
    summarize(read_csv(csv), kModel.parameter_count(), o.rows_per_rank);
    std::printf("\nmeasurements: %s\n", csv.c_str());
    const std::string plot = "'" + python_with_matplotlib() + "' '" + WB_BENCH_TRAINER_PLOT + "' '" + csv + "' '" + o.out +
                             "/trainer.png'";
    if (std::system(plot.c_str()) != 0) {
      std::fprintf(stderr, "bench_trainer: the plot was not written (%s failed); the table above is complete.\n",
                   WB_BENCH_TRAINER_PLOT);
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_trainer: %s\n", e.what());
    return 1;
  }
}
