# Built through ./build.sh. VARIANT selects flags: release (-O2), asan (ASan+UBSan), tsan, fuzz
# (clang, libFuzzer with ASan+UBSan: ./build.sh fuzz), portable (any glibc from 2.17 on:
# ./build.sh portable).
#
# The release binary links everything statically but glibc: CLBlast (C++, with libstdc++),
# zlib, libsodium. OpenCL is loaded at run time (opencl/loader.c), so the binary needs no OpenCL to run, and
# glibc stays dynamic because a static glibc cannot reliably dlopen an ICD such as PoCL.
VARIANT ?= release
BUILD := build/$(VARIANT)

CC ?= gcc
# Baseline x86-64 only: SIMD code lives in *_avx2.c / *_avx512.c files chosen at run time.
CFLAGS := -std=c17 -Wall -Wextra -Werror -D_GNU_SOURCE -pthread -I. -I$(BUILD)/gen -fno-strict-aliasing -fopenmp-simd -ffp-contract=fast
LDLIBS := -Wl,-Bstatic -lclblast -lstdc++ -lz -lsodium -Wl,-Bdynamic -ldl -lm
ifeq ($(VARIANT),release)
  CFLAGS += -O2 -g
  LDFLAGS += -static-libgcc
else ifeq ($(VARIANT),asan)
  CFLAGS += -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
  LDFLAGS += -fsanitize=address,undefined
else ifeq ($(VARIANT),tsan)
  CFLAGS += -O1 -g -fsanitize=thread
  LDFLAGS += -fsanitize=thread
else ifeq ($(VARIANT),portable)
  # zig's clang against glibc 2.17's symbols (zig from PyPI, ./build.sh deps). The system's static
  # libraries were built against its newer glibc: portable/glibc_compat.c stands in for what they
  # call that 2.17 lacks, and the system gcc's C++ runtime and unwinder serve CLBlast.
  ZIG ?= build/zig/ziglang/zig
  CC := $(ZIG) cc -target x86_64-linux-gnu.2.17
  CFLAGS += -O2 -g -isystem $(BUILD)/include
  GCC_LIB := $(dir $(shell gcc -print-libgcc-file-name))
  SYS_LIB := /usr/lib/$(shell gcc -print-multiarch)
  LDLIBS := $(SYS_LIB)/libclblast.a $(GCC_LIB)libstdc++.a $(SYS_LIB)/libsodium.a $(SYS_LIB)/libz.a \
            $(GCC_LIB)libgcc_eh.a -lm -ldl -lpthread
else ifeq ($(VARIANT),fuzz)
  CC := clang
  CFLAGS += -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined \
            -fno-sanitize-recover=all -Wno-pass-failed
  LDFLAGS += -fsanitize=fuzzer,address,undefined
else
  $(error unknown VARIANT $(VARIANT))
endif

SIMD_AVX2 := -mavx2 -mfma
SIMD_AVX512 := -mavx512f -mavx512dq -mavx512bw -mavx512vl -mfma -mavx2

LIB_SRC := $(wildcard common/*.c runtime/*.c ops/*.c energy/*.c opencl/*.c netio/*.c engine/*/*.c)
LIB_SRC := $(filter-out engine/cli/main.c,$(LIB_SRC))
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
TEST_SRC := $(wildcard tests/*.c) tests/fuzz/targets.c tests/fuzz/target_net.c
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/%.o)
FUZZ_TARGETS := job_file idx cifar pnm checkpoint checkpoint_crc run_log cluster_message gossip_message summary_json grid_trace limit_state launch_files machine_profile \
                carbon_file node_job power_profile allow_file hello hub_stream

all: $(BUILD)/frugal
tests: $(BUILD)/frugal_tests $(BUILD)/frugal $(BUILD)/netproxy $(BUILD)/libfake_nvml.so \
       $(BUILD)/fake_icd/libnvidia-opencl.so.1   # tests run the binaries

# NVIDIA's NVML as the energy tests fake it (energy/nvml.c loads it by FRUGAL_NVML_LIBRARY):
# plain, whatever the variant, as the real one would be.
$(BUILD)/libfake_nvml.so: tests/fake/fake_nvml.c
	@mkdir -p $(dir $@)
	$(CC) -std=c17 -Wall -Wextra -Werror -O1 -fPIC -shared -o $@ $<

# A vendor's OpenCL driver that no ICD file lists (opencl/device.c looks for it by dlopen).
$(BUILD)/fake_icd/libnvidia-opencl.so.1: tests/fake/fake_icd.c
	@mkdir -p $(dir $@)
	$(CC) -std=c17 -Wall -Wextra -Werror -O1 -fPIC -shared -o $@ $<

# The fault-injecting proxy the cluster's tests and benchmark put between machines.
$(BUILD)/netproxy: tools/netproxy.c common/clock.c
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^

$(BUILD)/frugal: $(BUILD)/engine/cli/main.o $(LIB_OBJ)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The portable build: the glibc stand-ins linked in, and the libraries' headers copied (the
# system's include folder would bring its newer glibc's headers along).
ifeq ($(VARIANT),portable)
$(BUILD)/frugal: $(BUILD)/portable/glibc_compat.o
$(LIB_OBJ) $(BUILD)/engine/cli/main.o $(BUILD)/portable/glibc_compat.o: | $(BUILD)/include/.copied
$(BUILD)/include/.copied:
	@mkdir -p $(dir $@)
	cp -r /usr/include/CL /usr/include/clblast_c.h /usr/include/sodium /usr/include/sodium.h \
	      /usr/include/zlib.h $(wildcard /usr/include/zconf.h /usr/include/$(shell gcc -print-multiarch)/zconf.h) \
	      $(dir $@)
	touch $@
endif

$(BUILD)/frugal_tests: $(TEST_OBJ) $(LIB_OBJ)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# One libFuzzer binary per target (VARIANT=fuzz); ./build.sh fuzz asks for their names.
print-fuzz-targets:
	@echo $(FUZZ_TARGETS)

fuzzers: $(FUZZ_TARGETS:%=$(BUILD)/fuzz_%)
$(BUILD)/fuzz_%: tests/fuzz/driver.c $(BUILD)/tests/fuzz/targets.o $(BUILD)/tests/fuzz/target_net.o $(LIB_OBJ)
	$(CC) $(CFLAGS) -Itests/fuzz -DFUZZ_TARGET=fuzz_$* $(LDFLAGS) -o $@ $^ $(LDLIBS)

# Benchmarks compare against OpenMP, so only they link libgomp.
$(BUILD)/bench_%: tools/bench_%.c $(LIB_OBJ)
	$(CC) $(CFLAGS) -fopenmp $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/%_avx2.o: %_avx2.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SIMD_AVX2) -MMD -MP -c -o $@ $<

$(BUILD)/%_avx512.o: %_avx512.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SIMD_AVX512) -MMD -MP -c -o $@ $<

$(BUILD)/tests/%.o: CFLAGS += -Itests

# The AVX-512 Winograd build keeps the AVX2 build's 256-bit loops (512-bit ones were slower).
$(BUILD)/ops/winograd_f4_avx512.o: CFLAGS += -mprefer-vector-width=256

# The fuzzers decode; no input of theirs reaches a SIMD kernel, whose builds go uninstrumented
# there: instrumented, ops/winograd_f4_avx512.c alone took 400 s of a 490 s fuzz build (12 s
# without). The ASan build checks the kernels.
ifeq ($(VARIANT),fuzz)
$(BUILD)/ops/%_avx2.o $(BUILD)/ops/%_avx512.o: CFLAGS := $(filter-out -fsanitize=%,$(CFLAGS))
endif

# The OpenCL kernels' source as a C string (opencl/device.c builds it on each device).
$(BUILD)/gen/opencl/kernels_cl.h: opencl/kernels.cl
	@mkdir -p $(dir $@)
	{ echo 'static const char frugal_kernels_cl[] ='; \
	  sed 's/\\/\\\\/g; s/"/\\"/g; s/^/    "/; s/$$/\\n"/' $<; echo ';'; } > $@
$(BUILD)/opencl/device.o: $(BUILD)/gen/opencl/kernels_cl.h

# The commit `frugal --version` names ("unknown" outside git), rewritten only when it changes.
$(BUILD)/gen/version.h: FORCE
	@mkdir -p $(dir $@)
	@v=$$(git describe --always --dirty 2>/dev/null || echo unknown); \
	 printf '#define FRUGAL_COMMIT "%s"\n' "$$v" > $@.tmp; \
	 if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi
$(BUILD)/engine/cli/main.o: $(BUILD)/gen/version.h
FORCE:

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<

clean:
	rm -rf build frugal

.PHONY: all tests fuzzers clean FORCE print-fuzz-targets
-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
