/* Defaults for sanitizer builds of frugal and its tests (compiled into every variant, empty
 * outside ASan). An OpenCL driver such as PoCL compiles kernels with LLVM, which keeps objects it
 * never frees; those leaks are the driver's, not frugal's, so LeakSanitizer skips them. frugal's
 * own leaks are still reported: the suppressions name the driver's libraries only. */
#if defined(__SANITIZE_ADDRESS__)
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libLLVM\n"
           "leak:libpocl\n"
           "leak:libclang-cpp\n"
           "leak:libOpenCL\n";
}
#endif
