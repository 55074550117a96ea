# dpd — build, test and demo. `make` builds build/dpd, build/libdpd.a and build/libdpd.so.
# `make test` installs dependencies (scripts/deps.sh), builds and runs every test.
# `make demo` trains a small GRU PA model on built-in synthetic data.
# `make install` copies the command, the libraries, the public headers and dpd.pc under PREFIX
# (default /usr/local; DESTDIR stages it), `make uninstall` removes them.
# Options: CI=true (warnings are errors), SANITIZE=address,undefined, V=1 (the full commands instead
# of one short line per step).

CC      ?= cc
BUILD   ?= build
# zlib walks a compressed v5 .mat variable's data (src/mat.c), to count it. LAZY are not linked:
# libdpd loads each at its first use (src/lazy.h) by the soname this build finds (their own
# libraries, HDF5, curl, ICU, gfortran and more, cost every start milliseconds): matio reads and
# writes MATLAB .mat files (v5, and v7.3 through its HDF5), libarchive unpacks packs, LAPACKE
# solves least-squares fits.
PKGS    := jansson kissfft-float libcrypto zlib
LAZY    := matio libarchive lapacke
# $(call soname,MODULE,FILE,DEFAULT): the SONAME of FILE in pkg-config MODULE's libdir
soname   = $(or $(shell objdump -p "$$(pkg-config --variable=libdir $(1) 2>/dev/null)/$(2)" 2>/dev/null | awk '$$1 == "SONAME" { print $$2 }'),$(3))
SONAMES := -DDPD_MATIO_SONAME='"$(call soname,matio,libmatio.so,libmatio.so.11)"' \
           -DDPD_LIBARCHIVE_SONAME='"$(call soname,libarchive,libarchive.so,libarchive.so.13)"' \
           -DDPD_LAPACKE_SONAME='"$(call soname,lapacke,liblapacke.so,liblapacke.so.3)"'
CFLAGS  ?= -O3 -g
CFLAGS  += -std=c11 -D_GNU_SOURCE -fPIC -fvisibility=hidden -Wall -Wextra -Wshadow -Wno-unused-parameter -Wno-format-truncation -Wno-missing-field-initializers \
           -Iinclude $(shell pkg-config --cflags $(PKGS) $(LAZY) 2>/dev/null) $(SONAMES)
# The library and the tests see the internals; front ends (cli/, examples/) only include/.
INTERNAL := -Isrc
LDLIBS  := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lm
ifeq ($(CI),true)
CFLAGS  += -Werror
endif
ifneq ($(SANITIZE),)
CFLAGS  += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer
LDFLAGS += -fsanitize=$(SANITIZE)
endif
# One short line per step (`CC src/train.c`, `LD build/dpd`): $(call say,WHAT,FILE) starts a recipe line
# and silences it; with V=1 it is empty, and make echoes the whole command. Errors show either way.
ifeq ($(V),1)
say :=
else
say = @printf '%-5s %s\n' '$(1)' '$(2)';
endif

LIB_SRC := $(wildcard src/*.c) $(wildcard src/models/*.c) src/kern/dispatch.c $(wildcard src/cpu/*.c)
# The fast kernels: every src/kern/*.c but dispatch.c, compiled once per ISA (rules below).
KERN_SRC := $(filter-out src/kern/dispatch.c,$(wildcard src/kern/*.c))
KERNELS := $(foreach isa,avx512 avx2 sse,$(patsubst src/kern/%.c,$(BUILD)/src/kern/%_$(isa).o,$(KERN_SRC)))
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o) $(KERNELS)
CLI_SRC := $(wildcard cli/*.c)
# The studio (dpd serve, dpd worker) is part of the command: a front end like cli/.
CLI_SRC += $(wildcard studio/*.c)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o) $(BUILD)/studio/assets.o
# libmicrohttpd and SQLite serve the studio only; the library never links them.
STUDIO_LIBS := $(shell pkg-config --libs libmicrohttpd sqlite3 libseccomp 2>/dev/null) -lpthread
# cairo draws `dpd plot`'s pictures with FreeType's fonts, and libdeflate gives the PNGs' CRC-32 and
# Adler-32 (cli/plot.c, cli/deflate.c): the command links them, the library never does.
CAIRO_CFLAGS := $(shell pkg-config --cflags cairo freetype2 libdeflate 2>/dev/null)
CAIRO_LIBS   := $(shell pkg-config --libs cairo freetype2 libdeflate 2>/dev/null)
TESTS   := $(patsubst tests/%.c,$(BUILD)/tests/%,$(filter-out tests/check.c,$(wildcard tests/test_*.c)))
FAKE    := $(BUILD)/tests/libfake.so
BLAS    := $(BUILD)/tests/libblasprobe.so
F64_OBJ := $(patsubst src/models/%.c,$(BUILD)/f64/%.o,$(wildcard src/models/*.c))

.PHONY: all test test-build demo bench deps clean cuda pack-cuda opencl pack-opencl gpu-inputs install uninstall
.SECONDARY:
all: $(BUILD)/dpd $(BUILD)/libdpd.a $(BUILD)/libdpd.so

HDRS    := $(wildcard include/dpd/*.h src/*.h src/models/*.h src/kern/*.h src/cpu/*.h tests/*.h)
$(BUILD)/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(call say,CC,$<)$(CC) $(CFLAGS) $(INTERNAL) -c $< -o $@

# Front ends compile against the public headers only: a file under cli/, studio/ or examples/ that
# includes a library internal fails to build here.
PUBLIC_ONLY = @if grep -nE '^[[:space:]]*\#[[:space:]]*include[[:space:]]*"[^"]*(\.\./|src/)' $<; then \
	echo "$<: a front end includes only include/dpd/ and its own headers" >&2; exit 1; fi
$(BUILD)/cli/%.o: cli/%.c $(wildcard include/dpd/*.h cli/*.h)
	@mkdir -p $(dir $@)
	$(PUBLIC_ONLY)
	$(call say,CC,$<)$(CC) $(CFLAGS) -c $< -o $@
$(BUILD)/cli/plot.o: CFLAGS += $(CAIRO_CFLAGS)
$(BUILD)/studio/%.o: studio/%.c $(wildcard include/dpd/*.h cli/*.h studio/*.h)
	@mkdir -p $(dir $@)
	$(PUBLIC_ONLY)
	$(call say,CC,$<)$(CC) $(CFLAGS) -Icli -c $< -o $@
# The browser UI's files, embedded in the binary (scripts/embed.sh).
WEB_FILES := $(shell find studio/web -type f ! -name '.*' 2>/dev/null)
$(BUILD)/studio/assets.c: $(WEB_FILES) scripts/embed.sh
	@mkdir -p $(dir $@)
	$(call say,GEN,$@)sh scripts/embed.sh studio/web > $@.tmp && mv $@.tmp $@
$(BUILD)/studio/assets.o: $(BUILD)/studio/assets.c studio/studio.h studio/store.h
	$(call say,CC,$<)$(CC) $(CFLAGS) -Istudio -c $< -o $@
$(BUILD)/examples/%.o: examples/%.c $(wildcard include/dpd/*.h)
	@mkdir -p $(dir $@)
	$(PUBLIC_ONLY)
	$(call say,CC,$<)$(CC) $(CFLAGS) -c $< -o $@

# The model families again in double, for gradient checks only (not in the library).
$(BUILD)/f64/%.o: src/models/%.c $(HDRS)
	@mkdir -p $(dir $@)
	$(call say,CC,$< (double))$(CC) $(CFLAGS) $(INTERNAL) -DDPD_F64 -c $< -o $@

# The fast kernels once per ISA; dispatch.c picks one at run time (cpuid). kern.c lets the compiler
# fuse multiply-adds (its results are within a tolerance of the reference's); the families' exact
# kernels (every other file) must not: they do the reference's float operations in its order.
ISA_avx512 := -mavx512f -mavx512dq -mavx2 -mfma -mprefer-vector-width=512 -DKERN_NAME=avx512 -DVW=16
ISA_avx2   := -mavx2 -mfma -DKERN_NAME=avx2 -DVW=8
ISA_sse    := -DKERN_NAME=sse -DVW=4
KFLAGS := -ffp-contract=off -Wno-psabi
$(BUILD)/src/kern/kern_%.o $(BUILD)/fuzz/src/kern/kern_%.o: KFLAGS := -ffp-contract=fast -Wno-psabi
# (the same objects for the fuzz harnesses below, compiled with clang but without the sanitizers:
# the harnesses fuzz parsers, not the numeric kernels, which the sanitized gcc pass of .ci/run
# checks through tests/test_kernels.c; clang with ASan and UBSan took minutes for the fully
# unrolled blocks of kern.c, 5 s without)
define KERN_RULE
$(BUILD)/src/kern/%_$(1).o: src/kern/%.c $(wildcard src/kern/*.h)
	@mkdir -p $$(dir $$@)
	$$(call say,CC,$$< ($(1)))$$(CC) $$(CFLAGS) $$(INTERNAL) $$(KFLAGS) $$(ISA_$(1)) -c $$< -o $$@
$(BUILD)/fuzz/src/kern/%_$(1).o: src/kern/%.c $(wildcard src/kern/*.h)
	@mkdir -p $$(dir $$@)
	$$(call say,FUZZ,$$< ($(1)))$$(FUZZ_CC) $$(filter-out $$(FUZZ_SAN),$$(FUZZ_CFLAGS)) $$(INTERNAL) $$(KFLAGS) $$(ISA_$(1)) -c $$< -o $$@
endef
$(foreach isa,avx512 avx2 sse,$(eval $(call KERN_RULE,$(isa))))
# tests/test_vlibm.c checks each ISA's vlibm.h functions, compiled as the kernels are.
$(BUILD)/tests/vlibm_%.o: tests/vlibm.c $(wildcard src/kern/*.h)
	@mkdir -p $(dir $@)
	$(call say,CC,$< ($*))$(CC) $(CFLAGS) $(INTERNAL) $(KFLAGS) $(ISA_$*) -c $< -o $@
$(BUILD)/tests/test_vlibm: $(foreach isa,avx512 avx2 sse,$(BUILD)/tests/vlibm_$(isa).o)

$(BUILD)/libdpd.a: $(LIB_OBJ)
	$(call say,AR,$@)rm -f $@ && ar rcs $@ $^

$(BUILD)/libdpd.so: $(LIB_OBJ)
	$(call say,LD,$@)$(CC) -shared $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/dpd: $(CLI_OBJ) $(BUILD)/libdpd.a
	$(call say,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(STUDIO_LIBS) $(CAIRO_LIBS)

# The same command linked against libdpd.so: a hidden symbol the CLI needs breaks this build.
$(BUILD)/dpd-shared: $(CLI_OBJ) $(BUILD)/libdpd.so
	$(call say,LD,$@)$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) -L$(BUILD) -ldpd -Wl,-rpath,'$$ORIGIN' $(LDLIBS) $(STUDIO_LIBS) $(CAIRO_LIBS)

# Example programs: the public API and libdpd.so only.
EXAMPLES := $(patsubst examples/%.c,$(BUILD)/examples/%,$(wildcard examples/*.c))
$(BUILD)/examples/%: $(BUILD)/examples/%.o $(BUILD)/libdpd.so
	$(call say,LD,$@)$(CC) $(LDFLAGS) -o $@ $< -L$(BUILD) -ldpd -Wl,-rpath,'$$ORIGIN/..' -lm

$(BUILD)/tests/%: $(BUILD)/tests/%.o $(BUILD)/tests/check.o $(F64_OBJ) $(BUILD)/libdpd.a
	$(call say,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# test_record makes its hostile MAT files with matio itself (libdpd loads it: src/lazy.h).
$(BUILD)/tests/test_record: LDLIBS += $(shell pkg-config --libs matio 2>/dev/null)

# The studio's store test links the store and SQLite.
$(BUILD)/tests/test_store.o: CFLAGS += -Istudio
$(BUILD)/tests/test_store: $(BUILD)/tests/test_store.o $(BUILD)/tests/check.o $(BUILD)/studio/store.o $(BUILD)/libdpd.a
	$(call say,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(STUDIO_LIBS)

# The studio's raw-byte JSON guard (studio/guard.c): no library beyond libc.
$(BUILD)/tests/test_guard.o: CFLAGS += -Istudio
$(BUILD)/tests/test_guard: $(BUILD)/tests/test_guard.o $(BUILD)/tests/check.o $(BUILD)/studio/guard.o $(BUILD)/libdpd.a
	$(call say,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# dpd plot's PNG compressor (cli/deflate.c), checked by libdeflate's decompressor.
$(BUILD)/tests/test_deflate.o: CFLAGS += -Icli
$(BUILD)/tests/test_deflate: $(BUILD)/tests/test_deflate.o $(BUILD)/tests/check.o $(BUILD)/cli/deflate.o $(BUILD)/libdpd.a
	$(call say,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(CAIRO_LIBS)

# dpd plot's line rasterizer (cli/ink.c), against an exact reference.
$(BUILD)/tests/test_ink.o: CFLAGS += -Icli
$(BUILD)/tests/test_ink: $(BUILD)/tests/test_ink.o $(BUILD)/tests/check.o $(BUILD)/cli/ink.o $(BUILD)/libdpd.a
	$(call say,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The progress display's step rate (cli/eta.c).
$(BUILD)/tests/test_eta.o: CFLAGS += -Icli
$(BUILD)/tests/test_eta: $(BUILD)/tests/test_eta.o $(BUILD)/tests/check.o $(BUILD)/cli/eta.o $(BUILD)/libdpd.a
	$(call say,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The fault-injecting test provider (tests only; never installed by default).
$(FAKE): tests/fake_provider.c $(BUILD)/libdpd.a
	@mkdir -p $(dir $@)
	$(call say,LD,$@)$(CC) $(CFLAGS) $(INTERNAL) -shared -o $@ $< $(BUILD)/libdpd.a $(LDFLAGS) $(LDLIBS)

# A stand-in for OpenBLAS (LD_PRELOAD in tests/cli.sh): logs the thread counts dpd sets.
$(BLAS): tests/blas_probe.c
	@mkdir -p $(dir $@)
	$(call say,LD,$@)$(CC) $(CFLAGS) -shared -o $@ $<

# The CUDA GRU and its parity/speed check (providers/cuda/), where nvcc exists: sm_90 code plus
# PTX, CUDA runtime linked statically. Without a GPU the check prints SKIP.
NVCC    ?= nvcc
NVFLAGS := -O3 -std=c++17 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
# libdpd.a built with SANITIZE needs the sanitizer runtimes on nvcc's link line
NVSAN   := $(if $(findstring address,$(SANITIZE)),-lasan) $(if $(findstring undefined,$(SANITIZE)),-lubsan)
$(BUILD)/cuda/check: providers/cuda/gru.cu providers/cuda/gru.cuh providers/cuda/check.cu $(BUILD)/libdpd.a
	@mkdir -p $(dir $@)
	$(call say,NVCC,$@)$(NVCC) $(NVFLAGS) -Iinclude -Isrc -Iproviders/cuda providers/cuda/gru.cu providers/cuda/check.cu $(BUILD)/libdpd.a $(NVSAN) $(LDLIBS) -lpthread -o $@

$(BUILD)/cuda/libdpd-cuda.so: providers/cuda/gru.cu providers/cuda/gru.cuh providers/cuda/provider.cu providers/cuda/devices.cuh include/dpd/provider.h
	@mkdir -p $(dir $@)
	$(call say,NVCC,$@)$(NVCC) $(NVFLAGS) -Xcompiler -fPIC -shared -Iinclude -Iproviders/cuda providers/cuda/gru.cu providers/cuda/provider.cu -o $@

# The device-resident CUDA provider (providers/cuda/device.cu: host.c's CUDA backend, the kernels of
# providers/opencl/kernels.cl compiled as CUDA), the CUDA pack's library: built and resource-gated
# here, run by gpu-check.sh.
$(BUILD)/cuda/host.o: providers/common/host.c providers/common/host.h include/dpd/provider.h
	@mkdir -p $(dir $@)
	$(call say,CC,$<)$(CC) $(CFLAGS) -c -o $@ $<
# No contraction into fused multiply-adds (-fmad=false; kernels.cl says FP_CONTRACT OFF to OpenCL): nvcc
# fuses across statements, differently in the fused kernels (H a constant) and the layered ones, and
# fused against layered would not be bitwise. ptxas's report of its kernels (-Xptxas -v) is kept
# beside it for tests/cuda_gate.sh. Not built under
# SANITIZE (nothing runs it without a GPU, and its 192 kernel instances take a minute to compile).
$(BUILD)/cuda/libdpd-cuda-resident.so: providers/cuda/device.cu providers/cuda/devices.cuh providers/opencl/kernels.cl $(BUILD)/cuda/host.o
	$(call say,NVCC,$@)$(NVCC) $(NVFLAGS) -fmad=false -Xptxas -v -Xcompiler -fPIC,-fvisibility=hidden -shared -Iinclude providers/cuda/device.cu \
	    $(BUILD)/cuda/host.o $(NVSAN) -o $@ 2>$(BUILD)/cuda/resident.ptxas || { cat $(BUILD)/cuda/resident.ptxas; exit 1; }

# After the library (cuda/check links it): under -j the sub-make then finds it built, instead of
# building the same objects beside the make that called it.
cuda: $(BUILD)/libdpd.a
	@if command -v $(NVCC) >/dev/null 2>&1; then $(MAKE) --no-print-directory $(BUILD)/cuda/check $(BUILD)/cuda/libdpd-cuda.so \
	    $(if $(SANITIZE),,$(BUILD)/cuda/libdpd-cuda-resident.so); \
	else echo "make cuda: nvcc not found, skipping the CUDA build"; fi

# The runtime packs go to PACK_DIR (dist/ for a release; make test puts the CUDA pack under $(BUILD)).
PACK_DIR ?= dist
# The CUDA runtime pack ($(PACK_DIR)/dpd-pack-cuda-<version>-linux-x86_64.tar.gz) of the
# device-resident provider; skipped without nvcc. A sanitized build has no resident library and
# packs the first provider (the tests check the pack's refusal without a GPU, the same for both).
# After `cuda`, so that under -j one nvcc builds the library, not two.
CUDA_PACK_LIB := $(BUILD)/cuda/libdpd-cuda$(if $(SANITIZE),,-resident).so
pack-cuda: cuda
	@if command -v $(NVCC) >/dev/null 2>&1; then BUILD=$(BUILD) scripts/pack.sh cuda $(CUDA_PACK_LIB) $(PACK_DIR); \
	else echo "make pack-cuda: nvcc not found, skipping the CUDA pack"; fi

# The OpenCL provider (providers/opencl/), where the OpenCL headers and ICD loader are installed
# (scripts/deps.sh): the kernels' source embedded as a string, the library linked against the ICD
# loader alone. A second build with the test hooks (DPD_OPENCL_FAIL) serves the tests only.
OPENCL_OK := $(shell test -f /usr/include/CL/cl.h && $(CC) -print-file-name=libOpenCL.so | grep -q / && echo yes)
OPENCL    := $(BUILD)/opencl/libdpd-opencl.so $(BUILD)/opencl/test/libdpd-opencl.so
$(BUILD)/opencl/kernels.c: providers/opencl/kernels.cl
	@mkdir -p $(dir $@)
	$(call say,GEN,$@){ echo 'const char dpd_opencl_kernels[] ='; sed 's/\\/\\\\/g; s/"/\\"/g; s/^/"/; s/$$/\\n"/' $<; echo ';'; } >$@
OPENCL_SRC := providers/opencl/provider.c providers/common/host.c
OPENCL_DEP := $(OPENCL_SRC) providers/common/host.h $(BUILD)/opencl/kernels.c include/dpd/provider.h
$(BUILD)/opencl/libdpd-opencl.so: $(OPENCL_DEP)
	$(call say,LD,$@)$(CC) $(CFLAGS) -shared -o $@ $(OPENCL_SRC) $(BUILD)/opencl/kernels.c $(LDFLAGS) -lOpenCL -lm -lpthread
$(BUILD)/opencl/test/libdpd-opencl.so: $(OPENCL_DEP)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)$(CC) $(CFLAGS) -DDPD_TEST_HOOKS -shared -o $@ $(OPENCL_SRC) $(BUILD)/opencl/kernels.c $(LDFLAGS) -lOpenCL -lm -lpthread

opencl:
	@if [ "$(OPENCL_OK)" = yes ]; then $(MAKE) --no-print-directory $(OPENCL); \
	else echo "make opencl: no OpenCL headers or ICD loader (scripts/deps.sh installs them), skipping"; fi

# The OpenCL runtime pack ($(PACK_DIR)/dpd-pack-opencl-<version>-linux-x86_64.tar.gz).
pack-opencl: opencl
	@if [ "$(OPENCL_OK)" = yes ]; then BUILD=$(BUILD) scripts/pack.sh opencl '' $(PACK_DIR); \
	else echo "make pack-opencl: no OpenCL build, skipping the pack"; fi

# The device check's inputs (scripts/gpu-prepare.sh: binaries, packs, data and a PA checkpoint in
# $(BUILD)/gpu, carried to the GPU machine, where scripts/gpu-check.sh runs).
gpu-inputs: all cuda opencl $(BUILD)/tests/test_conformance
	@BUILD=$(BUILD) scripts/gpu-prepare.sh

deps:
	@scripts/deps.sh

# Everything the tests read, and nothing outside $(BUILD): the OpenCL provider (tests/opencl.sh packs
# it itself), the CUDA libraries and ptxas's report (tests/cuda_gate.sh), and the CUDA pack under
# $(BUILD)/packs (tests/cli.sh's refusal on a machine without a GPU).
# test-build builds them without running anything (.ci/run builds the sanitized trees with it
# while the plain suite runs).
test: deps
	@$(MAKE) --no-print-directory test-build
	@BUILD=$(BUILD) tests/run.sh $(TESTS) $$(ls $(BUILD)/cuda/check 2>/dev/null)

test-build:
	@$(MAKE) --no-print-directory all $(BUILD)/dpd-shared $(EXAMPLES) $(TESTS) $(FAKE) $(BLAS) opencl pack-cuda \
	    PACK_DIR=$(BUILD)/packs

demo: deps
	@$(MAKE) --no-print-directory all
	@scripts/demo.sh $(BUILD)/dpd

bench: all
	@bench/train_step.sh $(BUILD)/dpd
	@bench/peak.sh $(BUILD)/dpd

# ---- install ------------------------------------------------------------------------------------
# The command (linked with libdpd.a: it needs no libdpd.so at run time, and no data files: the
# studio's pages are embedded, plot's fonts are the system's DejaVu or fontconfig's), both libraries,
# the public headers, and dpd.pc for `pkg-config --cflags --libs dpd` (--static adds what libdpd.a
# needs). libdpd.so has no soname: one file, no version links. DESTDIR stages the tree for a package.
PREFIX       ?= /usr/local
BINDIR       ?= $(PREFIX)/bin
LIBDIR       ?= $(PREFIX)/lib
INCLUDEDIR   ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
VERSION      := $(shell sed -n 's/^\#define DPD_VERSION "\(.*\)"/\1/p' include/dpd/dpd.h)
HEADERS      := $(wildcard include/dpd/*.h)
INSTALLED    := $(BINDIR)/dpd $(LIBDIR)/libdpd.so $(LIBDIR)/libdpd.a $(PKGCONFIGDIR)/dpd.pc \
                $(HEADERS:include/%=$(INCLUDEDIR)/%)

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR)/dpd $(DESTDIR)$(PKGCONFIGDIR)
	install -m 755 $(BUILD)/dpd $(DESTDIR)$(BINDIR)/dpd
	install -m 755 $(BUILD)/libdpd.so $(DESTDIR)$(LIBDIR)/libdpd.so
	install -m 644 $(BUILD)/libdpd.a $(DESTDIR)$(LIBDIR)/libdpd.a
	install -m 644 $(HEADERS) $(DESTDIR)$(INCLUDEDIR)/dpd
	sed -e 's|@LIBDIR@|$(LIBDIR)|; s|@INCLUDEDIR@|$(INCLUDEDIR)|; s|@VERSION@|$(VERSION)|; s|@LIBS@|$(LDLIBS) -lpthread|' \
	    dpd.pc.in >$(DESTDIR)$(PKGCONFIGDIR)/dpd.pc && chmod 644 $(DESTDIR)$(PKGCONFIGDIR)/dpd.pc

# Removes what install put there and include/dpd/. The shared directories (bin, lib, include) stay in
# a real prefix, where other software uses them; a staged tree (DESTDIR) is dpd's alone, so its
# directories go too, up to DESTDIR, wherever they are left empty.
uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	[ ! -d $(DESTDIR)$(INCLUDEDIR)/dpd ] || rmdir --ignore-fail-on-non-empty $(DESTDIR)$(INCLUDEDIR)/dpd
ifneq ($(DESTDIR),)
	@for d in $(PKGCONFIGDIR) $(LIBDIR) $(BINDIR) $(INCLUDEDIR); do \
	    while [ "$$d" != / ] && [ "$$d" != . ] && rmdir "$(DESTDIR)$$d" 2>/dev/null; do d=$$(dirname "$$d"); done; \
	done
endif

clean:
	rm -rf $(BUILD)

# ---- fuzzing (tests/fuzz/, docs/fuzzing.md) ----------------------------------------------------
# libFuzzer harnesses, built with clang under ASan + UBSan against the library sources compiled
# again into $(BUILD)/fuzz/ (sanitizers of SANITIZE= are replaced by these). `make fuzz
# FUZZ_SECONDS=N` builds them and runs each for N seconds on a copy of its corpus; make test runs
# them briefly through tests/run.sh (tests/fuzz/run.sh skips when clang or libFuzzer is missing).
# Warnings that only clang gives are shown, never fatal here: the cc build owns CI=true -Werror.
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS   = $(filter-out -fsanitize=%,$(CFLAGS)) -Wno-unknown-warning-option -Wno-error $(FUZZ_SAN)
FUZZ_NAMES   := $(patsubst tests/fuzz/%.c,%,$(wildcard tests/fuzz/*.c))
FUZZ_BINS    := $(FUZZ_NAMES:%=$(BUILD)/fuzz/%)
FUZZ_LIB     := $(LIB_OBJ:$(BUILD)/%=$(BUILD)/fuzz/%)
.PHONY: fuzz fuzz-build

$(BUILD)/fuzz/src/%.o: src/%.c $(HDRS)
	@mkdir -p $(dir $@)
	$(call say,FUZZ,$<)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(INTERNAL) -c $< -o $@
$(BUILD)/fuzz/%: tests/fuzz/%.c tests/fuzz/fuzz.h $(FUZZ_LIB)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $(INTERNAL) -o $@ $< $(FUZZ_LIB) $(LDLIBS)

# The studio's boundary (tests/fuzz/http.c, and public.c: the same in public mode): the server's
# modules, libmicrohttpd and SQLite.
FUZZ_STUDIO := $(patsubst studio/%.c,$(BUILD)/fuzz/studio/%.o,$(filter-out studio/worker.c studio/serve.c,$(wildcard studio/*.c))) \
               $(BUILD)/fuzz/studio/assets.o $(BUILD)/fuzz/cli/history.o $(BUILD)/fuzz/cli/flags.o
$(BUILD)/fuzz/cli/%.o: cli/%.c cli/cli.h
	@mkdir -p $(dir $@)
	$(call say,FUZZ,$<)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@
$(BUILD)/fuzz/studio/assets.o: $(BUILD)/studio/assets.c studio/studio.h
	@mkdir -p $(dir $@)
	$(call say,FUZZ,$<)$(FUZZ_CC) $(FUZZ_CFLAGS) -Istudio -c $< -o $@
$(BUILD)/fuzz/studio/%.o: studio/%.c $(wildcard include/dpd/*.h cli/*.h studio/*.h)
	@mkdir -p $(dir $@)
	$(call say,FUZZ,$<)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -Icli -c $< -o $@
$(BUILD)/fuzz/http $(BUILD)/fuzz/public: $(BUILD)/fuzz/%: tests/fuzz/%.c tests/fuzz/http.c tests/fuzz/fuzz.h $(FUZZ_STUDIO) $(FUZZ_LIB)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -Istudio -o $@ $< $(FUZZ_STUDIO) $(FUZZ_LIB) $(LDLIBS) $(STUDIO_LIBS)

fuzz-build: $(FUZZ_BINS)

fuzz: deps
	@$(MAKE) --no-print-directory fuzz-build
	@BUILD=$(BUILD) FUZZ_CC=$(FUZZ_CC) FUZZ_NOBUILD=1 tests/fuzz/run.sh $(FUZZ_SECONDS)
