/* libFuzzer's entry point for one target, chosen at compile time (-DFUZZ_TARGET=fuzz_idx). */
#include "targets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return FUZZ_TARGET(data, size);
}
