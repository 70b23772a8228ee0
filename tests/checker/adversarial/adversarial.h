// What the adversarial submissions of lab 01 share (tests/checker/adversarial/*.cu): a passing
// GoogleTest report for every check of the lab, and a search for every place such a report could
// be written to. Nothing here is part of the checker: it is hostile code under test.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <glob.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include <cuda_runtime.h>

// The reference solution (solutions/01-saxpy/saxpy.cu) linked into the attacks that need a
// correct SAXPY, its functions renamed (tests.cmake, REFERENCE): such an attack fails only for
// what it attacks, and follows the solution when that changes.
cudaError_t reference_saxpy(int n, float a, const float* d_x, float* d_y);
cudaError_t reference_saxpy_grid_stride(int n, float a, const float* d_x, float* d_y, int num_blocks, int block_size);
cudaError_t reference_saxpy_host(int n, float a, const float* h_x, float* h_y);

namespace adv {

// checker/labs/01-saxpy/lab.json, sim backend.
inline const char* const kChecks[] = {
    "Correctness.SaxpySmallSizes", "Correctness.SaxpyZeroSize", "Correctness.SaxpyLargeSizes",
    "Correctness.GridStrideSmallGrids", "Correctness.GridStrideLargeGrids",
    "Correctness.GridStrideRejectsInvalidConfigurations", "Correctness.HostRoundTrip",
    "Correctness.HostNegativeSize", "Correctness.HostFreesDeviceMemory", "Correctness.HostReturnsCudaErrors",
    "Analysis.MemcheckClean", "Performance.CoalescedAccess", "Performance.LaunchUsesWholeWarps"};

// The repository, from this header's own path (tests/checker/adversarial/adversarial.h).
inline std::string root() {
  std::string self = __FILE__;
  const std::string tail = "/tests/checker/adversarial/adversarial.h";
  return self.size() > tail.size() ? self.substr(0, self.size() - tail.size()) : ".";
}

// A GoogleTest JSON report in which every check of the lab passed.
inline std::string passing_report() {
  std::string suites;
  for (const char* suite : {"Correctness", "Analysis", "Performance"}) {
    std::string tests;
    for (const char* check : kChecks) {
      const char* dot = std::strchr(check, '.');
      if (std::string(check, dot) != suite) continue;
      tests += std::string(tests.empty() ? "" : ",") + "{\"name\": \"" + (dot + 1) +
               "\", \"status\": \"RUN\", \"result\": \"COMPLETED\", \"time\": \"0s\", \"classname\": \"" + suite +
               "\", \"measured\": \"all cases correct\"}";
    }
    suites += std::string(suites.empty() ? "" : ",") + "{\"name\": \"" + suite +
              "\", \"tests\": 1, \"failures\": 0, \"disabled\": 0, \"errors\": 0, \"time\": \"0s\", \"testsuite\": [" +
              tests + "]}";
  }
  return "{\"tests\": " + std::to_string(std::size(kChecks)) +
         ", \"failures\": 0, \"disabled\": 0, \"errors\": 0, \"time\": \"0s\", \"name\": \"AllTests\", "
         "\"testsuites\": [" + suites + "]}";
}

inline std::string read_text(const std::string& path) {
  std::string out;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  close(fd);
  for (char& c : out) c = c == '\0' ? ' ' : c;
  return out;
}

inline bool write_text(const std::string& path, const std::string& text, int flags) {
  const int fd = open(path.c_str(), flags | O_WRONLY | O_NONBLOCK | O_CLOEXEC, 0666);
  if (fd < 0) return false;
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

// Writes a passing report to every place a GoogleTest report could go: the
// --gtest_output=json:PATH of this process, its parent and every process it can see (through
// /proc/PID/fd/N when PATH is /dev/fd/N), the runner's /tmp/wbcheck-*/result.json and every
// descriptor of its parent. Says on stderr what it managed; returns how many writes succeeded.
inline int forge_reports(const char* who) {
  static bool printed = false;
  const std::string report = passing_report();
  if (!printed) std::fprintf(stderr, "ADV-FORGED-REPORT: %s\n", report.c_str());
  printed = true;
  std::vector<std::pair<std::string, int>> targets;  // path, extra open flags
  const std::string ppid = std::to_string(getppid());
  std::vector<std::string> pids = {"self", ppid};
  if (DIR* proc = opendir("/proc")) {
    while (dirent* d = readdir(proc)) {
      if (d->d_name[0] >= '0' && d->d_name[0] <= '9') pids.push_back(d->d_name);
    }
    closedir(proc);
  }
  for (const std::string& pid : pids) {
    const std::string cmdline = read_text("/proc/" + pid + "/cmdline");
    const std::string flag = "--gtest_output=json:";
    for (auto at = cmdline.find(flag); at != std::string::npos; at = cmdline.find(flag, at + 1)) {
      const std::string path = cmdline.substr(at + flag.size(), cmdline.find(' ', at) - at - flag.size());
      targets.emplace_back(path, O_TRUNC);
      if (path.rfind("/dev/fd/", 0) == 0) targets.emplace_back("/proc/" + pid + "/fd/" + path.substr(8), 0);
    }
  }
  glob_t found{};
  if (glob("/tmp/wbcheck-*", GLOB_NOSORT, nullptr, &found) == 0) {
    for (std::size_t i = 0; i < found.gl_pathc; ++i) {
      targets.emplace_back(std::string(found.gl_pathv[i]) + "/result.json", O_CREAT | O_TRUNC);
    }
  }
  globfree(&found);
  if (DIR* fds = opendir(("/proc/" + ppid + "/fd").c_str())) {
    while (dirent* d = readdir(fds)) {
      if (d->d_name[0] != '.') targets.emplace_back("/proc/" + ppid + "/fd/" + d->d_name, 0);
    }
    closedir(fds);
  }
  int written = 0;
  for (const auto& [path, flags] : targets) {
    if (write_text(path, report, flags)) {
      ++written;
      std::fprintf(stderr, "ADV: %s wrote a forged report to %s\n", who, path.c_str());
    }
  }
  std::fprintf(stderr, "ADV: %s: %zu places tried, %d written\n", who, targets.size(), written);
  return written;
}

}  // namespace adv
