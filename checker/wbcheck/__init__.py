"""The workbook's command-line tool and checker runner (Python 3 standard library only).

Modules:
  project  paths of the source tree and build directories, backend resolution
  labs     lab metadata (checker/labs/NN-name/lab.json) and lab selection
  deps     system dependencies: detection, exact package names, apt-get installation
  build    CMake configure and incremental builds
  runner   runs each check of a check binary in its own process, with a time limit
  report   the results table, Gradescope results.json, JUnit XML, last results
  cli      `./workbook` subcommands
"""
