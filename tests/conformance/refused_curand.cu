// cuRAND is not simulated: the build must stop with one line naming <curand.h>.
#include <cstdio>
#include <curand.h>

int main() {
    curandGenerator_t gen;
    curandCreateGenerator(&gen, CURAND_RNG_PSEUDO_DEFAULT);
    printf("unreachable\n");
    return 0;
}
