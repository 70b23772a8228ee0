"""The workbook's command-line tool and checker runner (Python 3 standard library only).

Modules:
  project      paths of the source tree and build directories, backend resolution
  labs         lab metadata (checker/labs/NN-name/lab.json) and lab selection
  deps         system dependencies: detection, exact package names, apt-get installation
  build        CMake configure and incremental builds; compiler errors, learner's file first
  progress     the status line on a terminal, plain progress lines elsewhere
  runner       runs each check of a check binary in its own process, with a time limit
  collectives  the collective labs' runner: one mpirun job per rank count (checker/mpi_launch.py)
  report       the results table, the per-lab summary, Gradescope results.json, JUnit XML
  cli          `./workbook` subcommands
"""

from . import collectives  # noqa: F401,E402  (registers the "mpi" lab runner with runner)
