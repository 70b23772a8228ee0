# cmake -DWB_ROOT=<dir> -DLAB=<NN-name> -P require_interface.cmake: calls wb_require_interface()
# on a tree at WB_ROOT (ctest checker.build.requires_interface: a lab without interface.cpp stops
# the configure, with a message naming the file; a lab with one passes).
include("${CMAKE_CURRENT_LIST_DIR}/../../../cmake/WbRequireInterface.cmake")
wb_require_interface(${LAB} "WB_REMOTE, checker/support/remote/wb_remote_interface.h")
message(STATUS "checker/labs/${LAB}/interface.cpp found")
