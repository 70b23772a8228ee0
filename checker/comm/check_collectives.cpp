// Checks of a lab's broadcast, reduce, gather, scatter, all-gather, reduce-scatter and
// all-to-all against the library's (MPI's or NCCL's) on the same inputs, bit for bit.
#include <algorithm>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "comm/check.h"
#include "comm/error.h"
#include "comm/verify.h"

namespace comm::check {
namespace {

bool rooted(Collective k) {
  return k == Collective::broadcast || k == Collective::reduce || k == Collective::gather ||
         k == Collective::scatter;
}
bool reduces(Collective k) {
  return k == Collective::allreduce || k == Collective::reduce || k == Collective::reduce_scatter;
}

// Where in a rank's send buffer element `i` of rank `r`'s result comes from, for the
// collectives that move data without reducing it: {source rank, index in its send buffer}.
struct Source {
  int rank = 0;
  std::size_t index = 0;
};
Source source_of(const CollectiveCase& c, int r, std::size_t i) {
  const std::size_t count = c.count;
  switch (c.kind) {
    case Collective::broadcast: return {c.root, i};
    case Collective::allgather:
    case Collective::gather: return {static_cast<int>(i / count), i % count};
    case Collective::scatter: return {c.root, static_cast<std::size_t>(r) * count + i};
    case Collective::alltoall: return {static_cast<int>(i / count), static_cast<std::size_t>(r) * count + i % count};
    default: return {r, i};
  }
}

// The value rank `rank` holds at element `index` of its send buffer.
std::uint64_t seed_of(const CollectiveCase& c) { return 31 + static_cast<std::uint64_t>(c.kind); }
RedOp data_op(const CollectiveCase& c) { return reduces(c.kind) ? c.op : RedOp::max; }

template <class T>
std::string value_text(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  std::ostringstream s;
  s << +v;
  return s.str();
}

std::string value_text(DataType t, const void* p) {
  switch (t) {
    case DataType::f32: return value_text<float>(p);
    case DataType::f64: return value_text<double>(p);
    case DataType::i32: return value_text<std::int32_t>(p);
  }
  return "?";
}

// True when element j of rank q's send buffer holds the bytes at `got`.
bool sends_value(const CollectiveCase& c, int n, int q, std::size_t j, const char* got) {
  return dispatch(c.type, [&](auto zero) {
    using T = decltype(zero);
    const T v = input_value<T>(DataMode::verifiable, data_op(c), n, q, j, seed_of(c));
    return std::memcmp(&v, got, sizeof v) == 0;
  });
}

// For a reduction: whether `got` is the reduction with one rank's contribution left out or
// counted twice (the usual mistakes), as text, or "".
std::string reduction_mixup(const CollectiveCase& c, int n, int r, std::size_t i, const char* got) {
  // Element i of this rank's result reduces element j of every rank's send buffer.
  const std::size_t j = c.kind == Collective::reduce_scatter ? static_cast<std::size_t>(r) * c.count + i : i;
  return dispatch(c.type, [&](auto zero) -> std::string {
    using T = decltype(zero);
    T g;
    std::memcpy(&g, got, sizeof g);
    auto value = [&](int q) { return input_value<T>(DataMode::verifiable, c.op, n, q, j, seed_of(c)); };
    auto combine = [&](T a, T b) -> T {
      switch (c.op) {
        case RedOp::sum: return static_cast<T>(a + b);
        case RedOp::prod: return static_cast<T>(a * b);
        case RedOp::min: return b < a ? b : a;
        case RedOp::max: return b > a ? b : a;
      }
      return a;
    };
    for (int q = 0; q < n; ++q) {
      bool first = true;
      T without{}, twice{};
      for (int p = 0; p < n; ++p) {
        const T v = value(p);
        twice = p == 0 ? v : combine(twice, v);
        if (p == q) {
          twice = combine(twice, v);
          continue;
        }
        without = first ? v : combine(without, v);
        first = false;
      }
      if (n > 1 && std::memcmp(&without, &g, sizeof g) == 0)
        return "the reduction over every rank but rank " + std::to_string(q) + " (its contribution is missing)";
      if (std::memcmp(&twice, &g, sizeof g) == 0 && c.op != RedOp::min && c.op != RedOp::max)
        return "the reduction with rank " + std::to_string(q) + "'s contribution counted twice";
    }
    if (std::memcmp(&g, &zero, sizeof g) == 0) return "zero";
    return "";
  });
}

std::string sentinel_or_value(DataType t, const char* p) {
  bool all_ff = true;
  for (std::size_t i = 0; i < size_of(t); ++i) all_ff = all_ff && static_cast<unsigned char>(p[i]) == 0xff;
  return all_ff ? std::string("never written (still the 0xff bytes it held before the call)") : value_text(t, p);
}

}  // namespace

std::string describe(const CollectiveCase& c, int nranks) {
  std::ostringstream s;
  s << name_of(c.kind) << " of " << c.count << " " << name_of(c.type);
  if (c.kind == Collective::allgather || c.kind == Collective::gather || c.kind == Collective::scatter ||
      c.kind == Collective::reduce_scatter || c.kind == Collective::alltoall)
    s << " per " << (c.kind == Collective::alltoall ? "block" : "rank");
  if (reduces(c.kind)) s << " with " << name_of(c.op);
  if (rooted(c.kind))
    s << (c.kind == Collective::gather || c.kind == Collective::reduce ? " to root " : " from root ") << c.root;
  s << " (" << (c.in_place ? "in place" : "out of place") << ", " << nranks << " ranks)";
  return s.str();
}

std::vector<int> sweep_roots(int n) {
  std::vector<int> r = {0, n - 1, n / 2};
  std::sort(r.begin(), r.end());
  r.erase(std::unique(r.begin(), r.end()), r.end());
  return r;
}

std::string check_collective(const CollectiveFn& fn, const CollectiveCase& c, const std::string& name) {
  Communicator& w = world();
  const int n = w.size(), r = w.rank();
  const std::size_t elem = size_of(c.type);
  const std::size_t send_n = send_elements(c.kind, c.count, n), recv_n = recv_elements(c.kind, c.count, n);
  const std::size_t block = c.count * elem;
  const bool is_root = r == c.root;

  // This rank's send buffer contents, the same for the lab and the library.
  std::vector<char> input(send_n * elem);
  fill_input(input.data(), send_n, c.type, DataMode::verifiable, data_op(c), n, r, seed_of(c));

  // In place, as NCCL expresses it; only the root is in place for reduce, gather and scatter
  // (the other ranks' receive or send buffer is not used).
  bool in_place = c.in_place;
  if (rooted(c.kind) && c.kind != Collective::broadcast && !is_root) in_place = false;
  // One buffer for send and receive when in place (its size: the larger of the two), else two.
  // Each run gets fresh buffers with the same contents: 0xff bytes where nothing is input.
  struct Layout {
    Buffer a, b;
    void* send = nullptr;
    void* recv = nullptr;
  };
  auto make = [&]() {
    Layout L;
    if (!in_place) {
      L.a = w.allocate(std::max<std::size_t>(send_n * elem, 1));
      L.b = w.allocate(std::max<std::size_t>(recv_n * elem, 1));
      copy(L.a.data(), L.a.space(), input.data(), MemorySpace::host, send_n * elem);
      fill_bytes(L.b.data(), L.b.space(), 0xff, recv_n * elem);
      L.send = L.a.data();
      L.recv = L.b.data();
      return L;
    }
    const std::size_t big = std::max(send_n, recv_n) * elem;
    L.a = w.allocate(std::max<std::size_t>(big, 1));
    fill_bytes(L.a.data(), L.a.space(), 0xff, big);
    char* base = static_cast<char*>(L.a.data());
    std::size_t send_at = 0;  // byte offset of the send buffer in the one buffer
    if (c.kind == Collective::allgather || c.kind == Collective::gather) send_at = static_cast<std::size_t>(r) * block;
    L.send = base + send_at;
    L.recv = base;
    if (c.kind == Collective::reduce_scatter || c.kind == Collective::scatter)
      L.recv = base + static_cast<std::size_t>(r) * block;
    copy(L.send, L.a.space(), input.data(), MemorySpace::host, send_n * elem);
    return L;
  };

  Layout lab = make(), lib = make();
  std::string not_implemented;
  guarded([&] {
    LearnerCall window(describe(c, n) + ": " + (name.empty() ? std::string("the lab's ") + name_of(c.kind) : name));
    try {
      fn(lab.send, lab.recv, c.count, c.type, c.op, c.root, w);
    } catch (const NotImplemented& e) {
      not_implemented = e.what();
    }
    const std::string library = window.close();
    if (not_implemented.empty()) not_implemented = library;
  });
  if (!agree_all(not_implemented.empty())) return gather_text(not_implemented);
  guarded([&] {
    w.library({c.kind, lib.send, lib.recv, c.count, c.type, c.op, c.root});  // the reference: no window open
  });

  // What this rank must compare: the result where it has one, and the buffers that must stay.
  const bool has_result = !(c.kind == Collective::reduce || c.kind == Collective::gather) || is_root;
  std::ostringstream local;
  auto fetch = [&](const void* p, std::size_t bytes) {
    std::vector<char> h(bytes);
    copy(h.data(), MemorySpace::host, p, w.memory_space(), bytes);
    return h;
  };
  const std::vector<char> got = fetch(lab.recv, recv_n * elem), want = fetch(lib.recv, recv_n * elem);
  if (has_result) {
    Mismatch m;
    const std::size_t wrong = count_wrong(got.data(), want.data(), nullptr, recv_n, c.type, &m);
    if (wrong > 0) {
      const char* g = got.data() + m.index * elem;
      local << describe(c, n) << ": " << wrong << " of " << recv_n << " elements of recvbuf wrong; first at index "
            << m.index;
      if (c.count > 0) {
        const Source src = source_of(c, r, m.index);
        const std::size_t b = m.index / c.count, k = m.index % c.count;
        switch (c.kind) {
          case Collective::broadcast: local << " (root " << c.root << "'s element " << m.index << ")"; break;
          case Collective::gather:
          case Collective::allgather:
            local << " (block " << b << ": element " << k << " of rank " << b << "'s sendbuf)";
            break;
          case Collective::scatter:
            local << " (root " << c.root << "'s send element " << src.index << ", in its block for rank " << r << ")";
            break;
          case Collective::alltoall:
            local << " (block " << b << ": element " << k << " of rank " << b << "'s block for rank " << r
                  << ", its send element " << src.index << ")";
            break;
          default: break;
        }
      }
      local << ": expected " << value_text(c.type, want.data() + m.index * elem) << " (what the library's "
            << name_of(c.kind) << " gives), got " << sentinel_or_value(c.type, g);
      if (reduces(c.kind)) {
        const std::string d = reduction_mixup(c, n, r, m.index, g);
        if (!d.empty()) local << ", which is " << d;
      } else {
        // Whose value arrived instead: the same element of another rank, or another block.
        std::string from;
        const std::size_t blocks = std::max<std::size_t>(send_n / std::max<std::size_t>(c.count, 1), 1);
        const std::size_t k = c.count > 0 ? m.index % c.count : 0;
        for (int q = 0; q < n && from.empty(); ++q)
          for (std::size_t b = 0; b < blocks && from.empty(); ++b)
            if (sends_value(c, n, q, b * c.count + k, g)) {
              std::ostringstream f;
              f << "rank " << q << "'s send element " << b * c.count + k;
              if (blocks > 1) f << " (its block " << b << ")";
              from = f.str();
            }
        if (!from.empty()) local << ", which is " << from;
      }
      local << ".";
    }
  }
  if (local.str().empty() && !in_place && (!(c.kind == Collective::broadcast || c.kind == Collective::scatter) || is_root)) {
    const std::vector<char> after = fetch(lab.send, send_n * elem);
    if (std::memcmp(after.data(), input.data(), after.size()) != 0) {
      std::size_t i = 0;
      while (after[i] == input[i]) ++i;
      local << describe(c, n) << ": the send buffer was modified (element " << i / elem
            << "); an out-of-place " << name_of(c.kind)
            << " must leave its input untouched: work in recvbuf or in comm.scratch() memory.";
    }
  }
  if (local.str().empty() && !has_result) {
    // reduce and gather: the receive buffer of a rank other than the root is not the
    // collective's to write (NCCL and MPI use it on the root only).
    for (std::size_t i = 0; i < got.size(); ++i)
      if (static_cast<unsigned char>(got[i]) != 0xff) {
        local << describe(c, n) << ": recvbuf of rank " << r << " (not the root) was written (element "
              << i / elem << "); only the root's receive buffer holds the result: keep partial results in "
              << "comm.scratch() memory.";
        break;
      }
  }
  if (agree_all(local.str().empty())) return "";
  return gather_text(local.str());
}

std::string sweep_collective(const CollectiveFn& fn, Collective kind, DataType type, RedOp op, std::size_t* cases,
                             const std::string& name) {
  *cases = 0;
  const int n = world().size();
  const std::vector<int> roots = rooted(kind) ? sweep_roots(n) : std::vector<int>{0};
  for (std::size_t count : sweep_counts(n, type))
    for (int root : roots)
      for (bool in_place : {false, true}) {
        std::string failure = check_collective(fn, {kind, count, type, op, root, in_place}, name);
        if (!failure.empty()) return failure;
        ++*cases;
      }
  return "";
}

}  // namespace comm::check
