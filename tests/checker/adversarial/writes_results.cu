// Attack (writes_results): writes a full-score Gradescope results.json (and a JUnit file with
// no failure) where the runner writes its own: build/sim/workbook/results.json, the --results
// and --junit paths of the run (WB_ADV_RESULTS, WB_ADV_JUNIT: a course's grading script is no
// secret) and /autograder/results/results.json; at start, in every call and at exit. The lab
// functions compute nothing.
// Must happen: the worker cannot reach those files (hidden); score 0, and the files hold what
// the runner wrote.
#include "saxpy.h"

#include <sys/stat.h>

#include <cstdlib>
#include <string>

#include "adversarial.h"

namespace {
void write_results(const char* who) {
  std::string tests;
  for (const char* check : adv::kChecks) {
    tests += std::string(tests.empty() ? "" : ",") + "{\"name\": \"01-saxpy " + check +
             "\", \"score\": 4, \"max_score\": 4, \"status\": \"passed\", \"output\": \"\", \"visibility\": \"visible\"}";
  }
  const std::string json = "{\"score\": 36, \"max_score\": 36, \"output\": \"forged\", \"tests\": [" + tests + "]}\n";
  const std::string junit =
      "<?xml version='1.0' encoding='utf-8'?>\n<testsuites name=\"forged\" tests=\"9\" failures=\"0\" "
      "skipped=\"0\"><testsuite name=\"01-saxpy\" tests=\"9\" failures=\"0\"/></testsuites>\n";
  const std::string state = adv::root() + "/build/sim/workbook";
  mkdir(state.c_str(), 0777);
  mkdir("/autograder/results", 0777);
  std::string paths[] = {state + "/results.json", "/autograder/results/results.json",
                         std::getenv("WB_ADV_RESULTS") ? std::getenv("WB_ADV_RESULTS") : ""};
  for (const std::string& path : paths) {
    if (!path.empty() && adv::write_text(path, json, O_CREAT | O_TRUNC)) {
      std::fprintf(stderr, "ADV: %s wrote full-score results to %s\n", who, path.c_str());
    }
  }
  if (const char* path = std::getenv("WB_ADV_JUNIT"); path && adv::write_text(path, junit, O_CREAT | O_TRUNC)) {
    std::fprintf(stderr, "ADV: %s wrote a passing JUnit file to %s\n", who, path);
  }
}

struct AtStartAndExit {
  AtStartAndExit() { write_results("static constructor"); }
  ~AtStartAndExit() { write_results("static destructor"); }
} at_start_and_exit;
}  // namespace

cudaError_t saxpy(int, float, const float*, float*) { return write_results("saxpy"), cudaSuccess; }
cudaError_t saxpy_grid_stride(int, float, const float*, float*, int, int) {
  return write_results("saxpy_grid_stride"), cudaSuccess;
}
cudaError_t saxpy_host(int, float, const float*, float*) { return write_results("saxpy_host"), cudaSuccess; }
