// Tests of cusim's atomic functions: CUDA's semantics for each operation on one thread, and
// atomicity under contention from several OS threads (blocks of a simulated launch run on
// parallel worker threads). Each contended test checks an exact outcome that a lost update,
// a torn value or a non-atomic read-modify-write would break, including the multiset of
// values the operations returned. Host code, compiled as C++.
#include <gtest/gtest.h>

// These tests exercise cusim's implementations from host code; CUDA declares the functions
// device-only, so with nvcc the file compiles to an empty test binary.
#if defined(CUSIM)  // cusim only (nvcc and cusim both define __CUDACC__)

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cusim/atomics.h"

#include <algorithm>
#include <barrier>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

namespace {

constexpr int kThreads = 4;

/// Runs body(thread_index) on kThreads threads released together.
void run_concurrently(const std::function<void(int)>& body) {
    std::barrier start(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            start.arrive_and_wait();
            body(t);
        });
    }
    for (std::thread& th : threads) th.join();
}

/// The plain first read of a CUDA compare-and-swap loop, as an atomic load so that the test
/// itself has no data race.
template <class T>
T load_relaxed(const T* p) {
    return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/// Checks that `returned` is exactly {first, first + 1, ..., first + n - 1}: every increment
/// observed a distinct previous value, so none was lost or duplicated.
template <class T>
void expect_consecutive(std::vector<T> returned, T first) {
    std::sort(returned.begin(), returned.end());
    for (std::size_t i = 0; i < returned.size(); ++i) {
        ASSERT_EQ(returned[i], static_cast<T>(first + static_cast<T>(i))) << "at position " << i;
    }
}

// ---------------------------------------------------------------------------------------------
// Semantics on one thread

TEST(AtomicSemantics, ReturnOldValueAndStoreTheResult) {
    int i = 5;
    EXPECT_EQ(atomicAdd(&i, 3), 5);
    EXPECT_EQ(atomicSub(&i, 10), 8);
    EXPECT_EQ(i, -2);
    EXPECT_EQ(atomicExch(&i, 42), -2);
    EXPECT_EQ(atomicMin(&i, 7), 42);
    EXPECT_EQ(atomicMax(&i, -1), 7);
    EXPECT_EQ(i, 7);
    EXPECT_EQ(atomicAnd(&i, 3), 7);
    EXPECT_EQ(atomicOr(&i, 8), 3);
    EXPECT_EQ(atomicXor(&i, 0xf), 11);
    EXPECT_EQ(i, 4);
    EXPECT_EQ(atomicCAS(&i, 5, 9), 4);  // no match: unchanged
    EXPECT_EQ(i, 4);
    EXPECT_EQ(atomicCAS(&i, 4, 9), 4);
    EXPECT_EQ(i, 9);

    int m = std::numeric_limits<int>::max();
    EXPECT_EQ(atomicAdd(&m, 1), std::numeric_limits<int>::max());
    EXPECT_EQ(m, std::numeric_limits<int>::min());  // wraps like the GPU's 32-bit add

    unsigned int u = 1;
    EXPECT_EQ(atomicSub(&u, 2u), 1u);
    EXPECT_EQ(u, 0xffffffffu);
    EXPECT_EQ(atomicMin(&u, 3u), 0xffffffffu);
    EXPECT_EQ(u, 3u);

    long long ll = -5;
    EXPECT_EQ(atomicMax(&ll, -9ll), -5);
    EXPECT_EQ(atomicMin(&ll, -9ll), -5);
    EXPECT_EQ(atomicOr(&ll, 1ll << 40), -9);
    EXPECT_EQ(atomicAnd(&ll, 1ll << 40), -9 | (1ll << 40));
    EXPECT_EQ(ll, 1ll << 40);
    EXPECT_EQ(atomicXor(&ll, -1ll), 1ll << 40);
    EXPECT_EQ(ll, ~(1ll << 40));

    unsigned long long ull = 0xffffffffffffffffull;
    EXPECT_EQ(atomicAdd(&ull, 2ull), 0xffffffffffffffffull);
    EXPECT_EQ(ull, 1ull);
    EXPECT_EQ(atomicExch(&ull, 7ull), 1ull);
    EXPECT_EQ(atomicCAS(&ull, 7ull, 8ull), 7ull);
    EXPECT_EQ(atomicMax(&ull, 100ull), 8ull);
    EXPECT_EQ(ull, 100ull);

    unsigned short s = 3;
    EXPECT_EQ(atomicCAS(&s, static_cast<unsigned short>(3), static_cast<unsigned short>(4)), 3);
    EXPECT_EQ(s, 4);

    float f = 1.5f;
    EXPECT_EQ(atomicAdd(&f, 2.0f), 1.5f);
    EXPECT_EQ(atomicExch(&f, -1.0f), 3.5f);
    EXPECT_EQ(f, -1.0f);
    double d = 0.25;
    EXPECT_EQ(atomicAdd(&d, 0.5), 0.25);
    EXPECT_EQ(d, 0.75);
}

TEST(AtomicSemantics, IncAndDecWrapAsCudaDefines) {
    unsigned int v = 0;
    EXPECT_EQ(atomicInc(&v, 2u), 0u);  // 0 -> 1
    EXPECT_EQ(atomicInc(&v, 2u), 1u);  // 1 -> 2
    EXPECT_EQ(atomicInc(&v, 2u), 2u);  // old >= val: 2 -> 0
    EXPECT_EQ(v, 0u);
    v = 10;
    EXPECT_EQ(atomicInc(&v, 2u), 10u);  // old > val also wraps to 0
    EXPECT_EQ(v, 0u);
    v = 0xffffffffu;
    EXPECT_EQ(atomicInc(&v, 0xffffffffu), 0xffffffffu);
    EXPECT_EQ(v, 0u);

    v = 0;
    EXPECT_EQ(atomicDec(&v, 3u), 0u);  // old == 0: becomes val
    EXPECT_EQ(v, 3u);
    EXPECT_EQ(atomicDec(&v, 3u), 3u);
    EXPECT_EQ(v, 2u);
    v = 9;
    EXPECT_EQ(atomicDec(&v, 3u), 9u);  // old > val: becomes val
    EXPECT_EQ(v, 3u);
}

TEST(AtomicSemantics, FloatAddOnNaNAndSignedZeroTerminates) {
    float f = std::numeric_limits<float>::quiet_NaN();
    EXPECT_TRUE(std::isnan(atomicAdd(&f, 1.0f)));
    EXPECT_TRUE(std::isnan(f));
    double d = -0.0;
    EXPECT_TRUE(std::signbit(atomicAdd(&d, -0.0)));
    EXPECT_TRUE(std::signbit(d));
    EXPECT_EQ(atomicAdd(&d, 0.0), 0.0);
    EXPECT_FALSE(std::signbit(d));
}

TEST(AtomicSemantics, ScopedVariantsAreTheSameOperations) {
    int i = 0;
    EXPECT_EQ(atomicAdd_block(&i, 2), 0);
    EXPECT_EQ(atomicAdd_system(&i, 3), 2);
    EXPECT_EQ(atomicSub_block(&i, 1), 5);
    EXPECT_EQ(atomicExch_system(&i, 10), 4);
    EXPECT_EQ(atomicMin_block(&i, 3), 10);
    EXPECT_EQ(atomicMax_system(&i, 8), 3);
    EXPECT_EQ(atomicCAS_block(&i, 8, 1), 8);
    EXPECT_EQ(atomicAnd_system(&i, 3), 1);
    EXPECT_EQ(atomicOr_block(&i, 6), 1);
    EXPECT_EQ(atomicXor_system(&i, 1), 7);
    EXPECT_EQ(i, 6);
    unsigned int u = 0;
    EXPECT_EQ(atomicInc_block(&u, 5u), 0u);
    EXPECT_EQ(atomicDec_system(&u, 5u), 1u);
    EXPECT_EQ(u, 0u);
    float f = 0;
    EXPECT_EQ(atomicAdd_system(&f, 1.5f), 0.0f);
    double d = 1;
    EXPECT_EQ(atomicAdd_block(&d, 1.0), 1.0);
    unsigned long long ull = 5;
    EXPECT_EQ(atomicCAS_system(&ull, 5ull, 6ull), 5ull);
    EXPECT_EQ(ull, 6ull);
}

TEST(AtomicSemantics, VectorFloatAddIsPerComponent) {
    float2 a{1.0f, 2.0f};
    const float2 old2 = atomicAdd(&a, float2{0.5f, -1.0f});
    EXPECT_EQ(old2.x, 1.0f);
    EXPECT_EQ(old2.y, 2.0f);
    EXPECT_EQ(a.x, 1.5f);
    EXPECT_EQ(a.y, 1.0f);
    float4 b{1, 2, 3, 4};
    const float4 old4 = atomicAdd_block(&b, float4{1, 1, 1, 1});
    EXPECT_EQ(old4.w, 4.0f);
    EXPECT_EQ(b.x + b.y + b.z + b.w, 14.0f);
}

TEST(AtomicSemantics, SixteenByteCasAndExch) {
    struct alignas(16) Pair {
        long long a, b;
    };
    Pair p{1, 2};
    const Pair miss = atomicCAS(&p, Pair{9, 9}, Pair{3, 4});
    EXPECT_EQ(miss.a, 1);
    EXPECT_EQ(p.b, 2);
    const Pair hit = atomicCAS(&p, Pair{1, 2}, Pair{3, 4});
    EXPECT_EQ(hit.b, 2);
    EXPECT_EQ(p.a, 3);
    const Pair old = atomicExch_system(&p, Pair{5, 6});
    EXPECT_EQ(old.b, 4);
    EXPECT_EQ(p.b, 6);
}

TEST(AtomicSemantics, HalfAndBfloat16Add) {
    __half h = __float2half(1.5f);
    EXPECT_EQ(__half2float(atomicAdd(&h, __float2half(0.25f))), 1.5f);
    EXPECT_EQ(__half2float(h), 1.75f);
    __half2 h2 = __floats2half2_rn(1.0f, 2.0f);
    const __half2 old = atomicAdd(&h2, __floats2half2_rn(0.5f, 0.5f));
    EXPECT_EQ(__low2float(old), 1.0f);
    EXPECT_EQ(__high2float(h2), 2.5f);
    __nv_bfloat16 b = __float2bfloat16(3.0f);
    EXPECT_EQ(__bfloat162float(atomicAdd(&b, __float2bfloat16(1.0f))), 3.0f);
    EXPECT_EQ(__bfloat162float(b), 4.0f);
    __nv_bfloat162 b2 = __floats2bfloat162_rn(1.0f, -1.0f);
    atomicAdd(&b2, __floats2bfloat162_rn(1.0f, 1.0f));
    EXPECT_EQ(__low2float(b2), 2.0f);
    EXPECT_EQ(__high2float(b2), 0.0f);
}

// ---------------------------------------------------------------------------------------------
// Atomicity under contention

constexpr int kIterations = 100000;

TEST(AtomicContention, IntegerAddReturnsEveryIntermediateValueOnce) {
    int counter = 0;
    unsigned int ucounter = 0;
    unsigned long long ullcounter = 0;
    std::vector<std::vector<int>> seen(kThreads);
    std::vector<std::vector<unsigned long long>> seen_ull(kThreads);
    run_concurrently([&](int t) {
        for (int i = 0; i < kIterations; ++i) {
            seen[t].push_back(atomicAdd(&counter, 1));
            atomicAdd(&ucounter, 3u);
            seen_ull[t].push_back(atomicAdd(&ullcounter, 1ull << 33) >> 33);
        }
    });
    EXPECT_EQ(counter, kThreads * kIterations);
    EXPECT_EQ(ucounter, 3u * kThreads * kIterations);
    EXPECT_EQ(ullcounter, static_cast<unsigned long long>(kThreads) * kIterations << 33);
    std::vector<int> all;
    std::vector<unsigned long long> all_ull;
    for (int t = 0; t < kThreads; ++t) {
        all.insert(all.end(), seen[t].begin(), seen[t].end());
        all_ull.insert(all_ull.end(), seen_ull[t].begin(), seen_ull[t].end());
    }
    expect_consecutive(all, 0);
    expect_consecutive(all_ull, 0ull);
}

TEST(AtomicContention, SubtractAndExchange) {
    int down = kThreads * kIterations;
    unsigned int udown = kThreads * kIterations;
    int slot = -1;
    std::vector<std::vector<int>> taken(kThreads);
    run_concurrently([&](int t) {
        for (int i = 0; i < kIterations; ++i) {
            atomicSub(&down, 1);
            atomicSub(&udown, 1u);
            taken[t].push_back(atomicExch(&slot, t * kIterations + i));
        }
    });
    EXPECT_EQ(down, 0);
    EXPECT_EQ(udown, 0u);
    // Every value put in the slot is taken out exactly once, by a later exchange or at the end.
    std::vector<int> all{slot};
    for (const auto& v : taken) all.insert(all.end(), v.begin(), v.end());
    expect_consecutive(all, -1);
}

TEST(AtomicContention, FloatingPointAddIsExact) {
    float f = 0;
    double d = 0;
    std::vector<std::vector<float>> seen(kThreads);
    run_concurrently([&](int t) {
        for (int i = 0; i < kIterations; ++i) {
            seen[t].push_back(atomicAdd(&f, 1.0f));  // integers below 2^24 are exact
            atomicAdd(&d, 0.5);
        }
    });
    EXPECT_EQ(f, static_cast<float>(kThreads * kIterations));
    EXPECT_EQ(d, 0.5 * kThreads * kIterations);
    std::vector<float> all;
    for (const auto& v : seen) all.insert(all.end(), v.begin(), v.end());
    expect_consecutive(all, 0.0f);
}

TEST(AtomicContention, MinAndMaxFindTheExtremes) {
    int imin = std::numeric_limits<int>::max(), imax = std::numeric_limits<int>::min();
    unsigned int umin = std::numeric_limits<unsigned int>::max(), umax = 0;
    long long llmin_v = std::numeric_limits<long long>::max(), llmax_v = std::numeric_limits<long long>::min();
    unsigned long long ullmin_v = std::numeric_limits<unsigned long long>::max(), ullmax_v = 0;
    std::vector<std::vector<long long>> values(kThreads);
    for (int t = 0; t < kThreads; ++t) {
        std::mt19937_64 rng(100 + t);
        for (int i = 0; i < kIterations; ++i) values[t].push_back(static_cast<long long>(rng()));
    }
    run_concurrently([&](int t) {
        for (long long v : values[t]) {
            atomicMin(&imin, static_cast<int>(v));
            atomicMax(&imax, static_cast<int>(v));
            atomicMin(&umin, static_cast<unsigned int>(v));
            atomicMax(&umax, static_cast<unsigned int>(v));
            atomicMin(&llmin_v, v);
            atomicMax(&llmax_v, v);
            atomicMin(&ullmin_v, static_cast<unsigned long long>(v));
            atomicMax(&ullmax_v, static_cast<unsigned long long>(v));
        }
    });
    int e_imin = std::numeric_limits<int>::max(), e_imax = std::numeric_limits<int>::min();
    unsigned int e_umin = std::numeric_limits<unsigned int>::max(), e_umax = 0;
    long long e_llmin = std::numeric_limits<long long>::max(), e_llmax = std::numeric_limits<long long>::min();
    unsigned long long e_ullmin = std::numeric_limits<unsigned long long>::max(), e_ullmax = 0;
    for (const auto& vs : values) {
        for (long long v : vs) {
            e_imin = std::min(e_imin, static_cast<int>(v));
            e_imax = std::max(e_imax, static_cast<int>(v));
            e_umin = std::min(e_umin, static_cast<unsigned int>(v));
            e_umax = std::max(e_umax, static_cast<unsigned int>(v));
            e_llmin = std::min(e_llmin, v);
            e_llmax = std::max(e_llmax, v);
            e_ullmin = std::min(e_ullmin, static_cast<unsigned long long>(v));
            e_ullmax = std::max(e_ullmax, static_cast<unsigned long long>(v));
        }
    }
    EXPECT_EQ(imin, e_imin);
    EXPECT_EQ(imax, e_imax);
    EXPECT_EQ(umin, e_umin);
    EXPECT_EQ(umax, e_umax);
    EXPECT_EQ(llmin_v, e_llmin);
    EXPECT_EQ(llmax_v, e_llmax);
    EXPECT_EQ(ullmin_v, e_ullmin);
    EXPECT_EQ(ullmax_v, e_ullmax);
}

TEST(AtomicContention, MaxRaisedOneStepAtATimeSeesEveryStep) {
    // Each thread raises the maximum one step at a time: every atomicMax must observe the
    // previous step, or a step would be applied twice or lost.
    int level = 0;
    std::vector<int> raised(kThreads, 0);
    run_concurrently([&](int t) {
        for (int i = 0; i < 5 * kIterations; ++i) {
            int current = load_relaxed(&level);
            while (true) {
                const int old = atomicMax(&level, current + 1);
                if (old == current) {
                    ++raised[t];
                    break;
                }
                current = old;
            }
        }
    });
    EXPECT_EQ(level, 5 * kThreads * kIterations);
    EXPECT_EQ(std::accumulate(raised.begin(), raised.end(), 0), 5 * kThreads * kIterations);
}

TEST(AtomicContention, IncAndDecCycleThroughTheirRange) {
    constexpr unsigned int kLimit = 999;  // values cycle through 0..999
    unsigned int inc = 0, dec = 0;
    std::vector<std::vector<unsigned int>> inc_seen(kThreads), dec_seen(kThreads);
    run_concurrently([&](int t) {
        for (int i = 0; i < kIterations; ++i) {
            inc_seen[t].push_back(atomicInc(&inc, kLimit));
            dec_seen[t].push_back(atomicDec(&dec, kLimit));
        }
    });
    const unsigned int total = kThreads * kIterations;
    EXPECT_EQ(inc, total % (kLimit + 1));
    EXPECT_EQ(dec, (kLimit + 1 - total % (kLimit + 1)) % (kLimit + 1));
    // In any serial order the i-th increment returns i mod 1000, the i-th decrement (-i) mod 1000.
    std::vector<unsigned int> inc_count(kLimit + 1, 0), dec_count(kLimit + 1, 0);
    for (int t = 0; t < kThreads; ++t) {
        for (unsigned int v : inc_seen[t]) ++inc_count.at(v);
        for (unsigned int v : dec_seen[t]) ++dec_count.at(v);
    }
    for (unsigned int k = 0; k <= kLimit; ++k) {
        const unsigned int expected = total / (kLimit + 1) + (k < total % (kLimit + 1) ? 1 : 0);
        const unsigned int dec_index = (kLimit + 1 - k) % (kLimit + 1);  // position i with (-i) mod 1000 == k
        const unsigned int dec_expected = total / (kLimit + 1) + (dec_index < total % (kLimit + 1) ? 1 : 0);
        ASSERT_EQ(inc_count[k], expected) << "atomicInc returned " << k;
        ASSERT_EQ(dec_count[k], dec_expected) << "atomicDec returned " << k;
    }
}

TEST(AtomicContention, CompareAndSwapLoopsComposeExactly) {
    // Multiplication by 3 modulo 2^32 commutes, so the result is independent of the order.
    unsigned int product = 1;
    unsigned long long sum = 0;
    unsigned short small = 0;
    run_concurrently([&](int) {
        for (int i = 0; i < kIterations; ++i) {
            unsigned int old = load_relaxed(&product), assumed;
            do {
                assumed = old;
                old = atomicCAS(&product, assumed, assumed * 3u);
            } while (old != assumed);
            unsigned long long o = load_relaxed(&sum), a;
            do {
                a = o;
                o = atomicCAS(&sum, a, a + 7ull);
            } while (o != a);
            if (i < 16000) {
                unsigned short so = load_relaxed(&small), sa;
                do {
                    sa = so;
                    so = atomicCAS(&small, sa, static_cast<unsigned short>(sa + 1));
                } while (so != sa);
            }
        }
    });
    unsigned int expected = 1;
    for (int i = 0; i < kThreads * kIterations; ++i) expected *= 3u;
    EXPECT_EQ(product, expected);
    EXPECT_EQ(sum, 7ull * kThreads * kIterations);
    EXPECT_EQ(small, kThreads * 16000);
}

TEST(AtomicContention, SpinLockBuiltOnCasAndExchProtectsPlainData) {
    int lock = 0;
    long long plain_counter = 0;  // not atomic: only correct under mutual exclusion
    std::vector<int> log;
    run_concurrently([&](int t) {
        for (int i = 0; i < kIterations / 10; ++i) {
            while (atomicCAS(&lock, 0, 1) != 0) {
            }
            __threadfence();
            ++plain_counter;
            log.push_back(t);
            __threadfence();
            atomicExch(&lock, 0);
        }
    });
    EXPECT_EQ(plain_counter, kThreads * (kIterations / 10));
    EXPECT_EQ(log.size(), static_cast<std::size_t>(kThreads * (kIterations / 10)));
    for (int t = 0; t < kThreads; ++t) EXPECT_EQ(std::count(log.begin(), log.end(), t), kIterations / 10);
}

TEST(AtomicContention, BitwiseOperations) {
    unsigned int bits_or = 0, bits_and = 0xffffffffu, bits_xor = 0x12345678u;
    unsigned long long wide_or = 0;
    long long wide_xor = 0;
    run_concurrently([&](int t) {
        for (int i = 0; i < kIterations; ++i) {
            const unsigned int bit = 1u << ((t * 8 + i) % 32);
            atomicOr(&bits_or, bit);
            if (i % 32 < 8) atomicAnd(&bits_and, ~(1u << (t * 8 + i % 8)));  // each thread clears its own byte
            atomicXor(&bits_xor, 0xffu << (8 * t));  // an even number of toggles per thread
            atomicOr(&wide_or, 1ull << ((t * 16 + i) % 64));
            atomicXor(&wide_xor, static_cast<long long>(i));
        }
    });
    EXPECT_EQ(bits_or, 0xffffffffu);
    EXPECT_EQ(bits_and, 0u);
    EXPECT_EQ(bits_xor, 0x12345678u);
    EXPECT_EQ(wide_or, 0xffffffffffffffffull);
    long long expected_xor = 0;
    for (int i = 0; i < kIterations; ++i) expected_xor ^= i;
    if (kThreads % 2 == 0) expected_xor = 0;  // every thread applies the same sequence
    EXPECT_EQ(wide_xor, expected_xor);
}

TEST(AtomicContention, SixteenBitFloatAddAndVectorAdd) {
    __half h = __float2half(0.0f);
    __half2 h2 = __floats2half2_rn(0.0f, 0.0f);
    __nv_bfloat16 b = __float2bfloat16(0.0f);
    float4 v{0, 0, 0, 0};
    std::vector<std::vector<float>> seen(kThreads);
    run_concurrently([&](int t) {
        for (int i = 0; i < 500; ++i) {  // 2000 ones: integers up to 2048 are exact in half
            seen[t].push_back(__half2float(atomicAdd(&h, __float2half(1.0f))));
            atomicAdd(&h2, __floats2half2_rn(1.0f, 2.0f));
            if (i < 64) atomicAdd(&b, __float2bfloat16(1.0f));  // 256 ones: exact in bfloat16
            atomicAdd(&v, float4{1.0f, 2.0f, 3.0f, 4.0f});
        }
    });
    EXPECT_EQ(__half2float(h), 2000.0f);
    EXPECT_EQ(__low2float(h2), 2000.0f);
    EXPECT_EQ(__high2float(h2), 4000.0f);
    EXPECT_EQ(__bfloat162float(b), 256.0f);
    EXPECT_EQ(v.x, 2000.0f);
    EXPECT_EQ(v.w, 8000.0f);
    std::vector<float> all;
    for (const auto& s : seen) all.insert(all.end(), s.begin(), s.end());
    expect_consecutive(all, 0.0f);
}

TEST(AtomicContention, SixteenByteCasKeepsBothHalvesConsistent) {
    struct alignas(16) Pair {
        long long a, b;
    };
    Pair p{0, 0};
    run_concurrently([&](int) {
        for (int i = 0; i < kIterations / 4; ++i) {
            Pair expected = atomicExch(&p, Pair{-1, -1});  // take the value out...
            while (expected.a == -1) expected = atomicExch(&p, Pair{-1, -1});
            ASSERT_EQ(expected.a, expected.b);
            Pair desired{expected.a + 1, expected.b + 1};
            const Pair seen = atomicCAS(&p, Pair{-1, -1}, desired);  // ...and put it back incremented
            ASSERT_EQ(seen.a, -1);
        }
    });
    EXPECT_EQ(p.a, kThreads * (kIterations / 4));
    EXPECT_EQ(p.b, p.a);
}

}  // namespace

#endif  // defined(CUSIM)
