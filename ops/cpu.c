#include "ops/cpu.h"
#include "common/env_switches.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

static int active = -1;

#if defined(__x86_64__)
static unsigned long long xgetbv0(void)
{
    unsigned eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return ((unsigned long long)edx << 32) | eax;
}
#endif

ops_isa ops_isa_supported(void)
{
#if defined(__x86_64__)
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return OPS_ISA_PORTABLE;
    int osxsave = (c >> 27) & 1, fma = (c >> 12) & 1, avx = (c >> 28) & 1;
    if (!osxsave || !avx || !fma)
        return OPS_ISA_PORTABLE;
    unsigned long long xcr0 = xgetbv0();
    if ((xcr0 & 0x6) != 0x6)   /* the OS saves SSE and AVX state */
        return OPS_ISA_PORTABLE;
    if (__get_cpuid_max(0, NULL) < 7)
        return OPS_ISA_PORTABLE;
    __cpuid_count(7, 0, a, b, c, d);
    int avx2 = (b >> 5) & 1, avx512f = (b >> 16) & 1, avx512dq = (b >> 17) & 1,
        avx512bw = (b >> 30) & 1, avx512vl = (b >> 31) & 1;
    if (!avx2)
        return OPS_ISA_PORTABLE;
    if (avx512f && avx512dq && avx512bw && avx512vl && (xcr0 & 0xe0) == 0xe0)
        return OPS_ISA_AVX512;
    return OPS_ISA_AVX2;
#else
    return OPS_ISA_PORTABLE;
#endif
}

const char *ops_isa_name(ops_isa isa)
{
    static const char *names[] = {"portable", "avx2", "avx512"};
    return isa >= 0 && isa <= OPS_ISA_AVX512 ? names[isa] : "?";
}

ops_isa ops_isa_active(void)
{
    int isa = __atomic_load_n(&active, __ATOMIC_ACQUIRE);
    if (isa >= 0)
        return (ops_isa)isa;
    isa = ops_isa_supported();
    const char *want = env_switch_value(ENV_ISA);
    if (want && *want) {
        int w = -1;
        for (int i = 0; i <= OPS_ISA_AVX512; i++)
            if (!strcmp(want, ops_isa_name((ops_isa)i)))
                w = i;
        if (w < 0)
            fprintf(stderr, "frugal: FRUGAL_ISA=%s is not one of portable, avx2, avx512; "
                            "using %s\n", want, ops_isa_name((ops_isa)isa));
        else if (w > isa)
            fprintf(stderr, "frugal: FRUGAL_ISA=%s is not supported by this CPU; using %s\n",
                    want, ops_isa_name((ops_isa)isa));
        else
            isa = w;
    }
    __atomic_store_n(&active, isa, __ATOMIC_RELEASE);
    return (ops_isa)isa;
}

int ops_isa_set(ops_isa isa)
{
    if (isa > ops_isa_supported())
        return -1;
    __atomic_store_n(&active, (int)isa, __ATOMIC_RELEASE);
    return 0;
}
