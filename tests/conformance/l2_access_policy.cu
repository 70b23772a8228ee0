// Persisting L2 and access-policy windows as NVIDIA's simpleAttributes uses them: the device's
// set-aside maximum and window limit (nonzero on compute capability 8.0 and later, and consistent
// between cudaGetDeviceProperties and cudaDeviceGetAttribute), cudaLimitPersistingL2CacheSize set
// and read back, a window set on a stream through cudaStreamSetAttribute and read back field by
// field, the windows CUDA refuses (a hit ratio above 1, a window larger than
// accessPolicyMaxWindowSize, a persisting miss property), cudaStreamCopyAttributes,
// cudaCtxResetPersistingL2Cache, and a kernel on the stream still computing 2 i + 1, whose sum over
// i < n is n * n. The hints change speed, never results; no value of one GPU model is printed.
#include <cstdio>

#define CHECK(call)                                                                       \
    do {                                                                                  \
        cudaError_t e_ = (call);                                                          \
        if (e_ != cudaSuccess) {                                                          \
            printf("%s failed at line %d: %s\n", #call, __LINE__, cudaGetErrorName(e_)); \
            return 1;                                                                     \
        }                                                                                 \
    } while (0)

const int N = 4096;

__global__ void odd_numbers(const int* x, int* y, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2 * x[i] + 1;
}

const char* yes(bool b) { return b ? "yes" : "no"; }

int main() {
    cudaDeviceProp p;
    CHECK(cudaGetDeviceProperties(&p, 0));
    int max_persisting = 0, max_window = 0;
    CHECK(cudaDeviceGetAttribute(&max_persisting, cudaDevAttrMaxPersistingL2CacheSize, 0));
    CHECK(cudaDeviceGetAttribute(&max_window, cudaDevAttrMaxAccessPolicyWindowSize, 0));
    printf("persisting L2 supported: %s\n", yes(p.persistingL2CacheMaxSize > 0 && p.accessPolicyMaxWindowSize > 0));
    printf("set-aside no larger than the L2: %s\n", yes(p.persistingL2CacheMaxSize <= p.l2CacheSize));
    printf("properties and attributes agree: %s\n",
           yes(max_persisting == p.persistingL2CacheMaxSize && max_window == p.accessPolicyMaxWindowSize));

    // 4 MiB: below every persisting-capable GPU's maximum.
    const size_t set_aside = size_t(4) << 20;
    CHECK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, set_aside));
    size_t limit = 0;
    CHECK(cudaDeviceGetLimit(&limit, cudaLimitPersistingL2CacheSize));
    printf("persisting L2 limit: %zu bytes (set %zu)\n", limit, set_aside);

    int *x, *y;
    CHECK(cudaMalloc(&x, N * sizeof(int)));
    CHECK(cudaMalloc(&y, N * sizeof(int)));
    cudaStream_t stream, other;
    CHECK(cudaStreamCreate(&stream));
    CHECK(cudaStreamCreate(&other));

    cudaStreamAttrValue value;
    CHECK(cudaStreamGetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &value));
    printf("a new stream's window: %zu bytes\n", value.accessPolicyWindow.num_bytes);

    cudaStreamAttrValue window = {};
    window.accessPolicyWindow.base_ptr = x;
    window.accessPolicyWindow.num_bytes = N * sizeof(int);
    window.accessPolicyWindow.hitRatio = 0.5f;
    window.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    window.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    CHECK(cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &window));
    CHECK(cudaStreamGetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &value));
    const cudaAccessPolicyWindow& w = value.accessPolicyWindow;
    printf("window read back: base is x %s, %zu bytes, hit ratio %.2f, hit property %d, miss property %d\n",
           yes(w.base_ptr == x), w.num_bytes, w.hitRatio, int(w.hitProp), int(w.missProp));

    cudaStreamAttrValue bad = window;
    bad.accessPolicyWindow.hitRatio = 1.5f;
    printf("hit ratio 1.5: %s\n", cudaGetErrorName(cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &bad)));
    (void)cudaGetLastError();
    bad = window;
    bad.accessPolicyWindow.num_bytes = size_t(p.accessPolicyMaxWindowSize) + 1;
    printf("window of accessPolicyMaxWindowSize + 1 bytes: %s\n",
           cudaGetErrorName(cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &bad)));
    (void)cudaGetLastError();
    bad = window;
    bad.accessPolicyWindow.missProp = cudaAccessPropertyPersisting;
    printf("persisting miss property: %s\n",
           cudaGetErrorName(cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &bad)));
    (void)cudaGetLastError();
    CHECK(cudaStreamGetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &value));
    printf("refused windows left the window as it was: %s\n", yes(value.accessPolicyWindow.hitRatio == 0.5f));

    CHECK(cudaStreamCopyAttributes(other, stream));
    CHECK(cudaStreamGetAttribute(other, cudaStreamAttributeAccessPolicyWindow, &value));
    printf("copied to another stream: %zu bytes, base is x %s\n", value.accessPolicyWindow.num_bytes,
           yes(value.accessPolicyWindow.base_ptr == x));

    int* host;
    CHECK(cudaMallocHost(&host, N * sizeof(int)));
    for (int i = 0; i < N; ++i) host[i] = i;
    CHECK(cudaMemcpyAsync(x, host, N * sizeof(int), cudaMemcpyHostToDevice, stream));
    CHECK(cudaCtxResetPersistingL2Cache());
    odd_numbers<<<N / 256, 256, 0, stream>>>(x, y, N);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyAsync(host, y, N * sizeof(int), cudaMemcpyDeviceToHost, stream));
    CHECK(cudaStreamSynchronize(stream));
    long long sum = 0;
    for (int i = 0; i < N; ++i) sum += host[i];
    printf("sum of 2i+1 for i < %d: %lld (n * n = %lld)\n", N, sum, static_cast<long long>(N) * N);

    // Back to no window and no set-aside, as the Programming Guide's example leaves the device.
    window.accessPolicyWindow.num_bytes = 0;
    CHECK(cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &window));
    CHECK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0));
    CHECK(cudaDeviceGetLimit(&limit, cudaLimitPersistingL2CacheSize));
    printf("persisting L2 limit after reset: %zu\n", limit);

    CHECK(cudaFreeHost(host));
    CHECK(cudaStreamDestroy(other));
    CHECK(cudaStreamDestroy(stream));
    CHECK(cudaFree(y));
    CHECK(cudaFree(x));
    return 0;
}
