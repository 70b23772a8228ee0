/// @file
/// @brief cusim analysis results on the wire (sim backend): metrics and reports, field by field;
/// and the launch records of cusim/checker.h.
#pragma once

#include <cusim/analysis.h>
#include <cusim/checker.h>

#include "wb_remote.h"

namespace wb::remote {

inline void put_metrics(Writer& w, const cusim::analysis::KernelMetrics& m) {
  w.put_string(m.kernel);
  for (std::uint64_t v : {m.launches, m.global_load_requests, m.global_store_requests, m.global_load_sectors,
                          m.global_store_sectors, m.shared_load_requests, m.shared_store_requests,
                          m.shared_load_wavefronts, m.shared_store_wavefronts, m.global_bytes_read,
                          m.global_bytes_written, m.shared_bytes_read, m.shared_bytes_written, m.atomics,
                          m.global_atomics, m.shared_atomics}) {
    w.put(v);
  }
}

inline cusim::analysis::KernelMetrics get_metrics(Reader& r) {
  cusim::analysis::KernelMetrics m;
  m.kernel = r.get_string();
  for (std::uint64_t* v : {&m.launches, &m.global_load_requests, &m.global_store_requests, &m.global_load_sectors,
                           &m.global_store_sectors, &m.shared_load_requests, &m.shared_store_requests,
                           &m.shared_load_wavefronts, &m.shared_store_wavefronts, &m.global_bytes_read,
                           &m.global_bytes_written, &m.shared_bytes_read, &m.shared_bytes_written, &m.atomics,
                           &m.global_atomics, &m.shared_atomics}) {
    *v = r.get<std::uint64_t>();
  }
  return m;
}

inline void put_report(Writer& w, const cusim::analysis::Report& rep) {
  w.put_string(rep.tool).put_string(rep.kind).put_string(rep.file).put(rep.line).put_string(rep.message).put(rep.count);
}

inline cusim::analysis::Report get_report(Reader& r) {
  cusim::analysis::Report rep;
  rep.tool = r.get_string();
  rep.kind = r.get_string();
  rep.file = r.get_string();
  rep.line = r.get<int>();
  rep.message = r.get_string();
  rep.count = r.get<std::uint64_t>();
  return rep;
}

inline void put_launch(Writer& w, const cusim::checker::LaunchRecord& l) {
  w.put_string(l.kernel).put_string(l.file).put(l.line);
  for (std::uint32_t v : {l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1], l.block[2]}) w.put(v);
  w.put(l.dynamic_shared).put(l.launches);
}

inline cusim::checker::LaunchRecord get_launch(Reader& r) {
  cusim::checker::LaunchRecord l;
  l.kernel = r.get_string();
  l.file = r.get_string();
  l.line = r.get<int>();
  for (std::uint32_t* v : {&l.grid[0], &l.grid[1], &l.grid[2], &l.block[0], &l.block[1], &l.block[2]}) {
    *v = r.get<std::uint32_t>();
  }
  l.dynamic_shared = r.get<std::uint64_t>();
  l.launches = r.get<std::uint64_t>();
  return l;
}

}  // namespace wb::remote
