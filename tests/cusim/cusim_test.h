// Helpers shared by cusim's tests. Plain CUDA host code: it builds with nvcc and with cusim.
//
// - EXPECT_CUDA / ASSERT_CUDA compare cudaError_t values and print both names on failure.
// - DeviceBuffer<T>: cudaMalloc'd array freed on scope exit, with host copies in and out.
// - StderrCapture / StdoutCapture: scoped GoogleTest capture (never left open by an ASSERT).
// - source_line("tag"): the line of this test's .cu file that carries the comment `// @tag`,
//   so report checks name kernel lines without hard-coding numbers.
// - finish_within(): runs a launch on a helper thread and ends the process with a clear
//   message if it does not return in time (a hang must fail, not stall the suite).
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <initializer_list>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace cusim_test {

inline ::testing::AssertionResult cuda_error_is(const char* expected_expr, const char* actual_expr,
                                                cudaError_t expected, cudaError_t actual) {
    if (expected == actual) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << actual_expr << " returned " << cudaGetErrorName(actual) << " (" << cudaGetErrorString(actual)
           << "), expected " << expected_expr << " = " << cudaGetErrorName(expected);
}

}  // namespace cusim_test

#define EXPECT_CUDA(expected, expr) EXPECT_PRED_FORMAT2(::cusim_test::cuda_error_is, expected, expr)
#define ASSERT_CUDA(expected, expr) ASSERT_PRED_FORMAT2(::cusim_test::cuda_error_is, expected, expr)
#define ASSERT_CUDA_OK(expr) ASSERT_CUDA(cudaSuccess, expr)
#define EXPECT_CUDA_OK(expr) EXPECT_CUDA(cudaSuccess, expr)

namespace cusim_test {

/// CUDA keeps the last error until cudaGetLastError() reads it: each test starts with it
/// cleared, so an error left by an earlier test is never blamed on the next one.
/// A test that ends with the context poisoned by a device fault (a sticky error) resets the
/// device, so the next test starts clean. cusim recovers on cudaDeviceReset(); on a GPU the
/// process would have to restart, and the later tests fail there.
class ClearLastErrorListener : public ::testing::EmptyTestEventListener {
    void OnTestStart(const ::testing::TestInfo&) override { (void)cudaGetLastError(); }
    void OnTestEnd(const ::testing::TestInfo&) override {
        if (cudaDeviceSynchronize() != cudaSuccess) (void)cudaDeviceReset();
        (void)cudaGetLastError();
    }
};
inline const bool kClearLastErrorInstalled = [] {
    ::testing::UnitTest::GetInstance()->listeners().Append(new ClearLastErrorListener);
    return true;
}();

/// A device array of `n` elements; status() is the cudaMalloc result.
template <class T>
class DeviceBuffer {
public:
    explicit DeviceBuffer(size_t n) : n_(n) { status_ = cudaMalloc(reinterpret_cast<void**>(&p_), n * sizeof(T)); }
    ~DeviceBuffer() {
        if (p_) cudaFree(p_);
    }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;

    cudaError_t status() const { return status_; }
    T* get() const { return p_; }
    size_t size() const { return n_; }
    size_t bytes() const { return n_ * sizeof(T); }

    cudaError_t upload(const std::vector<T>& host) {
        return cudaMemcpy(p_, host.data(), std::min(host.size(), n_) * sizeof(T), cudaMemcpyHostToDevice);
    }
    cudaError_t fill_bytes(int byte) { return cudaMemset(p_, byte, bytes()); }
    /// Copies the whole array to the host; on failure the vector is empty and `*err` set.
    std::vector<T> download(cudaError_t* err = nullptr) const {
        std::vector<T> host(n_);
        cudaError_t e = cudaMemcpy(host.data(), p_, bytes(), cudaMemcpyDeviceToHost);
        if (err) *err = e;
        if (e != cudaSuccess) host.clear();
        return host;
    }

private:
    T* p_ = nullptr;
    size_t n_;
    cudaError_t status_;
};

/// Captures stderr from construction until take(); the destructor ends an unfinished capture.
class StderrCapture {
public:
    StderrCapture() { ::testing::internal::CaptureStderr(); }
    ~StderrCapture() {
        if (open_) ::testing::internal::GetCapturedStderr();
    }
    std::string take() {
        open_ = false;
        std::fflush(stderr);
        return ::testing::internal::GetCapturedStderr();
    }

private:
    bool open_ = true;
};

class StdoutCapture {
public:
    StdoutCapture() {
        std::fflush(stdout);
        ::testing::internal::CaptureStdout();
    }
    ~StdoutCapture() {
        if (open_) ::testing::internal::GetCapturedStdout();
    }
    std::string take() {
        open_ = false;
        std::fflush(stdout);
        return ::testing::internal::GetCapturedStdout();
    }

private:
    bool open_ = true;
};

/// Line number of the line of `file` that contains the comment `// @tag` (0 if none).
inline int source_line(const char* file, const char* tag) {
    std::ifstream in(file);
    const std::string marker = std::string("// @") + tag;
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
        const size_t at = line.find(marker);
        if (at != std::string::npos) {
            const size_t end = at + marker.size();
            if (end == line.size() || line[end] == ' ' || line[end] == '\r') return n;
        }
    }
    return 0;
}
#define SOURCE_LINE(tag) ::cusim_test::source_line(__FILE__, tag)

/// "name.cu:LINE" for a tagged line of the calling file (the form cusim reports use).
inline std::string file_line(const char* file, const char* tag) {
    std::string f(file);
    const size_t slash = f.find_last_of('/');
    if (slash != std::string::npos) f = f.substr(slash + 1);
    return f + ":" + std::to_string(source_line(file, tag));
}
#define FILE_LINE(tag) ::cusim_test::file_line(__FILE__, tag)

/// Asserts that a cusim report contains every one of `parts`. Reports are printed unless
/// CUSIM_QUIET is set; then the text cannot be checked, which the test says by skipping.
inline ::testing::AssertionResult report_contains(const std::string& report,
                                                  std::initializer_list<std::string> parts) {
    for (const std::string& p : parts) {
        // "k.cu:4" must not match inside "k.cu:41": a part ending in a digit needs a non-digit after it.
        const bool ends_in_digit = !p.empty() && std::isdigit(static_cast<unsigned char>(p.back()));
        bool found = false;
        for (size_t at = report.find(p); at != std::string::npos && !found; at = report.find(p, at + 1)) {
            const size_t end = at + p.size();
            found = !ends_in_digit || end == report.size() || !std::isdigit(static_cast<unsigned char>(report[end]));
        }
        if (!found)
            return ::testing::AssertionFailure() << "the report does not contain \"" << p << "\"; report:\n"
                                                 << report;
    }
    return ::testing::AssertionSuccess();
}
inline bool reports_silenced() {
    const char* q = std::getenv("CUSIM_QUIET");
    return q && *q && std::string(q) != "0";
}

/// The results a launch produced, read on the thread that launched it (the last error is
/// per host thread, as in CUDA).
struct LaunchResult {
    cudaError_t launch;  // cudaGetLastError() right after the launch statement
    cudaError_t sync;    // cudaDeviceSynchronize() after it
};

/// Runs `launch` (which performs one kernel launch) on a helper thread and returns what the
/// launch and the following synchronize reported; with `report`, stderr printed meanwhile is
/// stored there. If they do not return within `limit`, the kernel hangs: the process prints
/// why and exits with status 3, since a hung launch cannot be cancelled.
template <class F>
LaunchResult finish_within(std::chrono::seconds limit, const char* what, F launch, std::string* report = nullptr) {
    auto promise = std::make_shared<std::promise<LaunchResult>>();
    std::future<LaunchResult> done = promise->get_future();
    std::thread([promise, launch, report]() mutable {
        std::unique_ptr<StderrCapture> capture;
        if (report) capture = std::make_unique<StderrCapture>();
        launch();
        LaunchResult r;
        r.launch = cudaGetLastError();
        r.sync = cudaDeviceSynchronize();
        if (report) *report = capture->take();
        promise->set_value(r);
    }).detach();
    if (done.wait_for(limit) != std::future_status::ready) {
        const std::string msg = std::string("FATAL: ") + what + " did not return within " +
                                std::to_string(limit.count()) +
                                " s: the launch hangs instead of failing with an error.\n";
        std::fputs(msg.c_str(), stdout);
        std::fflush(stdout);
        std::fputs(msg.c_str(), stderr);
        std::_Exit(3);
    }
    return done.get();
}

/// Error of the launch just made plus the synchronize after it, on the calling thread.
inline LaunchResult launch_result() {
    LaunchResult r;
    r.launch = cudaGetLastError();
    r.sync = cudaDeviceSynchronize();
    return r;
}

/// Fixture of the tests of what hangs or is undefined on a GPU and cusim reports instead:
/// skipped on a GPU; run() makes one launch within a time limit and keeps its report; the
/// device is reset after each test (a device fault is sticky; a GPU needs a process restart).
class SimFaultTest : public ::testing::Test {
protected:
    void SetUp() override {
#ifndef CUSIM
        GTEST_SKIP() << "these kernels hang or are undefined on a GPU; they test cusim's detection";
#endif
    }
    void TearDown() override { EXPECT_CUDA_OK(cudaDeviceReset()); }
    template <class F>
    LaunchResult run(const char* what, F launch) {
        return finish_within(std::chrono::seconds(30), what, launch, &report);
    }
    std::string report;
};

}  // namespace cusim_test

/// Skips the rest of a test that checks a report's text when reports are silenced.
#define SKIP_IF_REPORTS_SILENCED() \
    if (cusim_test::reports_silenced()) GTEST_SKIP() << "report text not checked: CUSIM_QUIET is set"
