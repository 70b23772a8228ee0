// What helper_cuda.h and deviceQuery-style code ask cudaDeviceGetAttribute, and what every CUDA 13
// device must answer: each attribute of cudaDeviceAttr (the reserved values aside) is answered
// with cudaSuccess; the answers helper_cuda.h depends on (the compute mode, the clock rates) are
// usable; cudaGetDeviceProperties and cudaDeviceGetAttribute agree; and the values that every
// compute capability 9.0 GPU shares (H100 and H200 alike: execution, shared-memory and texture
// limits) are printed. Never the name, memory size or clocks' values.
#include <cstdio>

struct Attr {
    cudaDeviceAttr attr;
    const char* name;
};

#define A(x) {cudaDevAttr##x, #x}
static const Attr kAll[] = {
    A(MaxThreadsPerBlock), A(MaxBlockDimX), A(MaxBlockDimY), A(MaxBlockDimZ), A(MaxGridDimX), A(MaxGridDimY),
    A(MaxGridDimZ), A(MaxSharedMemoryPerBlock), A(TotalConstantMemory), A(WarpSize), A(MaxPitch),
    A(MaxRegistersPerBlock), A(ClockRate), A(TextureAlignment), A(GpuOverlap), A(MultiProcessorCount),
    A(KernelExecTimeout), A(Integrated), A(CanMapHostMemory), A(ComputeMode), A(MaxTexture1DWidth),
    A(MaxTexture2DWidth), A(MaxTexture2DHeight), A(MaxTexture3DWidth), A(MaxTexture3DHeight), A(MaxTexture3DDepth),
    A(MaxTexture2DLayeredWidth), A(MaxTexture2DLayeredHeight), A(MaxTexture2DLayeredLayers), A(SurfaceAlignment),
    A(ConcurrentKernels), A(EccEnabled), A(PciBusId), A(PciDeviceId), A(TccDriver), A(MemoryClockRate),
    A(GlobalMemoryBusWidth), A(L2CacheSize), A(MaxThreadsPerMultiProcessor), A(AsyncEngineCount),
    A(UnifiedAddressing), A(MaxTexture1DLayeredWidth), A(MaxTexture1DLayeredLayers), A(MaxTexture2DGatherWidth),
    A(MaxTexture2DGatherHeight), A(MaxTexture3DWidthAlt), A(MaxTexture3DHeightAlt), A(MaxTexture3DDepthAlt),
    A(PciDomainId), A(TexturePitchAlignment), A(MaxTextureCubemapWidth), A(MaxTextureCubemapLayeredWidth),
    A(MaxTextureCubemapLayeredLayers), A(MaxSurface1DWidth), A(MaxSurface2DWidth), A(MaxSurface2DHeight),
    A(MaxSurface3DWidth), A(MaxSurface3DHeight), A(MaxSurface3DDepth), A(MaxSurface1DLayeredWidth),
    A(MaxSurface1DLayeredLayers), A(MaxSurface2DLayeredWidth), A(MaxSurface2DLayeredHeight),
    A(MaxSurface2DLayeredLayers), A(MaxSurfaceCubemapWidth), A(MaxSurfaceCubemapLayeredWidth),
    A(MaxSurfaceCubemapLayeredLayers), A(MaxTexture1DLinearWidth), A(MaxTexture2DLinearWidth),
    A(MaxTexture2DLinearHeight), A(MaxTexture2DLinearPitch), A(MaxTexture2DMipmappedWidth),
    A(MaxTexture2DMipmappedHeight), A(ComputeCapabilityMajor), A(ComputeCapabilityMinor),
    A(MaxTexture1DMipmappedWidth), A(StreamPrioritiesSupported), A(GlobalL1CacheSupported),
    A(LocalL1CacheSupported), A(MaxSharedMemoryPerMultiprocessor), A(MaxRegistersPerMultiprocessor),
    A(ManagedMemory), A(IsMultiGpuBoard), A(MultiGpuBoardGroupID), A(HostNativeAtomicSupported),
    A(SingleToDoublePrecisionPerfRatio), A(PageableMemoryAccess), A(ConcurrentManagedAccess),
    A(ComputePreemptionSupported), A(CanUseHostPointerForRegisteredMem), A(CooperativeLaunch),
    A(MaxSharedMemoryPerBlockOptin), A(CanFlushRemoteWrites), A(HostRegisterSupported),
    A(PageableMemoryAccessUsesHostPageTables), A(DirectManagedMemAccessFromHost), A(MaxBlocksPerMultiprocessor),
    A(MaxPersistingL2CacheSize), A(MaxAccessPolicyWindowSize), A(ReservedSharedMemoryPerBlock),
    A(SparseCudaArraySupported), A(HostRegisterReadOnlySupported), A(TimelineSemaphoreInteropSupported),
    A(MemoryPoolsSupported), A(GPUDirectRDMASupported), A(GPUDirectRDMAFlushWritesOptions),
    A(GPUDirectRDMAWritesOrdering), A(MemoryPoolSupportedHandleTypes), A(ClusterLaunch),
    A(DeferredMappingCudaArraySupported), A(IpcEventSupport), A(MemSyncDomainCount), A(NumaConfig), A(NumaId),
    A(MpsEnabled), A(HostNumaId), A(GpuPciDeviceId), A(GpuPciSubsystemId), A(HostNumaMultinodeIpcSupported),
};
#undef A

static int attr(cudaDeviceAttr a) {
    int v = -1;
    const cudaError_t e = cudaDeviceGetAttribute(&v, a, 0);
    if (e != cudaSuccess) printf("  cudaDeviceGetAttribute(%d) failed: %s\n", static_cast<int>(a), cudaGetErrorName(e));
    return v;
}

int main() {
    int failed = 0;
    for (const Attr& a : kAll) {
        int v = 0;
        const cudaError_t e = cudaDeviceGetAttribute(&v, a.attr, 0);
        if (e != cudaSuccess) {
            printf("cudaDevAttr%s: %s\n", a.name, cudaGetErrorName(e));
            (void)cudaGetLastError();
            ++failed;
        }
    }
    printf("attributes queried: %d, not answered: %d\n", static_cast<int>(sizeof kAll / sizeof kAll[0]), failed);

    // As helper_cuda.h's _ConvertSMVer2Cores and gpuGetMaxGflopsDeviceId use them.
    const int mode = attr(cudaDevAttrComputeMode);
    printf("compute mode is one of cudaComputeMode's: %s; prohibited: %s\n",
           mode == cudaComputeModeDefault || mode == cudaComputeModeExclusive || mode == cudaComputeModeProhibited ||
                   mode == cudaComputeModeExclusiveProcess
               ? "yes"
               : "no",
           mode == cudaComputeModeProhibited ? "yes" : "no");
    printf("cudaComputeMode values: %d %d %d %d\n", cudaComputeModeDefault, cudaComputeModeExclusive,
           cudaComputeModeProhibited, cudaComputeModeExclusiveProcess);
    printf("clock rate and memory clock rate positive: %s\n",
           attr(cudaDevAttrClockRate) > 0 && attr(cudaDevAttrMemoryClockRate) > 0 ? "yes" : "no");

    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) return 1;
    const bool agree = p.maxTexture1D == attr(cudaDevAttrMaxTexture1DWidth) &&
                       p.maxTexture2D[1] == attr(cudaDevAttrMaxTexture2DHeight) &&
                       p.maxTexture3D[2] == attr(cudaDevAttrMaxTexture3DDepth) &&
                       p.maxSurface2D[0] == attr(cudaDevAttrMaxSurface2DWidth) &&
                       static_cast<int>(p.surfaceAlignment) == attr(cudaDevAttrSurfaceAlignment) &&
                       p.regsPerMultiprocessor == attr(cudaDevAttrMaxRegistersPerMultiprocessor) &&
                       p.maxBlocksPerMultiProcessor == attr(cudaDevAttrMaxBlocksPerMultiprocessor) &&
                       p.multiProcessorCount == attr(cudaDevAttrMultiProcessorCount) &&
                       p.l2CacheSize == attr(cudaDevAttrL2CacheSize) &&
                       p.memoryBusWidth == attr(cudaDevAttrGlobalMemoryBusWidth) &&
                       p.streamPrioritiesSupported == attr(cudaDevAttrStreamPrioritiesSupported) &&
                       p.cooperativeLaunch == attr(cudaDevAttrCooperativeLaunch);
    printf("cudaGetDeviceProperties and cudaDeviceGetAttribute agree: %s\n", agree ? "yes" : "no");

    // Compute capability 9.0 (H100, H200).
    printf("compute capability: %d.%d\n", p.major, p.minor);
    printf("registers per block %d, per multiprocessor %d; blocks per multiprocessor %d\n", p.regsPerBlock,
           p.regsPerMultiprocessor, p.maxBlocksPerMultiProcessor);
    printf("shared memory per block %zu, opt-in %zu, per multiprocessor %zu, reserved per block %zu\n",
           p.sharedMemPerBlock, p.sharedMemPerBlockOptin, p.sharedMemPerMultiprocessor, p.reservedSharedMemPerBlock);
    printf("texture 1D %d; 2D %d x %d; 3D %d x %d x %d\n", p.maxTexture1D, p.maxTexture2D[0], p.maxTexture2D[1],
           p.maxTexture3D[0], p.maxTexture3D[1], p.maxTexture3D[2]);
    printf("layered 1D %d, %d layers; layered 2D %d x %d, %d layers\n", p.maxTexture1DLayered[0],
           p.maxTexture1DLayered[1], p.maxTexture2DLayered[0], p.maxTexture2DLayered[1], p.maxTexture2DLayered[2]);
    printf("texture alignment %zu; unified addressing %d; managed memory %d; concurrent kernels %d\n",
           p.textureAlignment, p.unifiedAddressing, p.managedMemory, p.concurrentKernels);
    printf("single to double precision performance ratio %d\n", attr(cudaDevAttrSingleToDoublePrecisionPerfRatio));
    return 0;
}
