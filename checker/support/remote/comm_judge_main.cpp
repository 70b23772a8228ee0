// main() of a collective lab's judge (the checks' half of the split, wb_comm_remote.h): waits
// for this rank's worker, runs the checks, then lets the worker go.
#include <cstring>

#include "comm/check.h"
#include "wb_comm_remote.h"

int main(int argc, char** argv) {
  bool listing = false;
  for (int i = 1; i < argc; ++i) listing = listing || std::strcmp(argv[i], "--gtest_list_tests") == 0;
  if (!listing) wb::remote::comm_split::accept_worker();
  const int rc = comm::check::run_all_tests(argc, argv);
  wb::remote::comm_split::release_worker();
  return rc;
}
