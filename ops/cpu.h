/* Which SIMD code path this CPU can run, decided once at run time. */
#ifndef FRUGAL_CPU_H
#define FRUGAL_CPU_H

typedef enum ops_isa { OPS_ISA_PORTABLE = 0, OPS_ISA_AVX2 = 1, OPS_ISA_AVX512 = 2 } ops_isa;

/* The best path this CPU and OS support (AVX state enabled in XCR0 counts, not just CPUID). */
ops_isa ops_isa_supported(void);
/* The path kernels use: the best supported, or FRUGAL_ISA=portable|avx2|avx512 if lower. */
ops_isa ops_isa_active(void);
/* Force a path (tests compare paths); returns -1 if this CPU cannot run it. */
int ops_isa_set(ops_isa isa);
const char *ops_isa_name(ops_isa isa);

#endif
