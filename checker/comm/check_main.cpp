// main() of every collective check binary.
#include "comm/check.h"

int main(int argc, char** argv) { return comm::check::run_all_tests(argc, argv); }
