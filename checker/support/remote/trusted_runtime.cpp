// wb_trusted_runtime: the checker's own CUDA process. It is a worker's server (worker.cpp, whose
// main() it runs) linked with no lab code, started by a judge outside the sandbox: the timing
// baselines (the device copy) and the timed runs without work that calibrate the judge's clock
// run here, where no code of the lab can change them (judge_timing.cpp).
