// An #include under #if: the rewriter cannot know the condition, the compiler reaches cusim's
// stub for <cufft.h>, whose #error is the first error (never NVIDIA's header).
#include <cstdio>
#define USE_CUFFT 1
#if USE_CUFFT
#include <cufft.h>
#endif

int main() {
    cufftHandle plan;
    cufftPlan1d(&plan, 64, CUFFT_C2C, 1);
    printf("unreachable\n");
    return 0;
}
