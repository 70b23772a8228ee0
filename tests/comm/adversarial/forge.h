// The forgery of tests/comm/adversarial/forged_results*.cpp, one per collective lab: a
// submission that implements nothing, but writes a passing result for every check wherever the
// checks' results could be (every results.jsonl under /tmp/wb-mpi-*, the status folder it was
// given, GoogleTest's report named on the command lines of its parent processes) and leaves with
// _exit(0) from a static constructor, before any check runs. Define WB_FORGED_CHECKS (the
// checks' names, "Suite.Name") before including this file.
// Must happen: every check FAILS (the judges never hear from the lab's code) and nothing the
// attack wrote is read as a result.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

const char* const kChecks[] = {WB_FORGED_CHECKS};

void forge_jsonl(const std::string& path) {
  if (FILE* f = std::fopen(path.c_str(), "a")) {
    for (const char* c : kChecks)
      std::fprintf(f, "{\"name\": \"%s\", \"status\": \"passed\", \"time_ms\": 1, \"message\": \"\"}\n", c);
    std::fclose(f);
  }
}

void forge_everywhere() {
  if (const char* d = std::getenv("WB_COMM_STATUS_DIR")) forge_jsonl(std::string(d) + "/results.jsonl");
  if (DIR* tmp = opendir("/tmp")) {
    while (dirent* e = readdir(tmp)) {
      if (std::string(e->d_name).rfind("wb-mpi-", 0) == 0) forge_jsonl(std::string("/tmp/") + e->d_name + "/results.jsonl");
    }
    closedir(tmp);
  }
  // GoogleTest's report, if a parent names one: --gtest_output=json:<path>.
  for (pid_t pid = getppid(); pid > 1;) {
    std::ifstream cmd("/proc/" + std::to_string(pid) + "/cmdline");
    std::string arg;
    while (std::getline(cmd, arg, '\0')) {
      const std::string flag = "--gtest_output=json:";
      if (arg.rfind(flag, 0) == 0) {
        std::ofstream out(arg.substr(flag.size()));
        out << "{\"tests\": 9, \"failures\": 0, \"testsuites\": []}\n";
      }
    }
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(stat, line);
    const auto close = line.rfind(')');
    if (close == std::string::npos) break;
    std::istringstream rest(line.substr(close + 2));
    char state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    pid = ppid;
  }
}

struct Forger {
  Forger() {
    forge_everywhere();
    _exit(0);
  }
} forger;

}  // namespace

