// The one part of the checks' support library that differs between check binaries: the
// implementation a binary was built from (WB_LAB_SOURCES, set per binary by
// wb_add_check_binary). Everything else of wb_check is compiled once (checker/CMakeLists.txt).
#ifndef WB_LAB_SOURCES
#define WB_LAB_SOURCES "the lab's source files"
#endif

namespace wb::check {

const char* lab_sources() { return WB_LAB_SOURCES; }

}  // namespace wb::check
