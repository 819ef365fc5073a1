# stoker's front end. `make` installs missing Debian packages, configures and
# builds; `make test` runs every test (C++ and Python, under ctest);
# `make demo` benchmarks stoker against torch's DataLoader on generated data.

BUILD ?= build
# ccache keys paths relative to the checkout, so another clone (CI's) reuses the objects.
export CCACHE_BASEDIR ?= $(CURDIR)
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=

.PHONY: all deps configure build test demo docs clean test-asan test-tsan fuzz \
	check-thread-safety
FUZZ_SECONDS ?= 60

all: build

deps:
	@scripts/install-deps.sh

# deps first even under make -j (configure needs the packages it installs).
$(BUILD)/CMakeCache.txt: | deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS) \
	  -G "$$(command -v ninja >/dev/null 2>&1 && echo Ninja || echo 'Unix Makefiles')" >/dev/null

configure: deps $(BUILD)/CMakeCache.txt

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# Both Python lanes: Debian's Python with its torch 1.13 (python_tests, on the checkout's
# python/) and a venv with torch 2.x from pip (python_tests_torch2; torch2_lane.sh install
# makes the venv and pip-installs stoker into it).
test: build
	@scripts/torch2_lane.sh install
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

demo: build
	@scripts/demo.sh $(DATA)

# Regenerates docs/api.md and python/stoker/_C.pyi from the built module (ctest's
# python_docs_current checks that they are current).
docs: build
	@PYTHONPATH=python /usr/bin/python3 tools/gen_python_docs.py

# Sanitizer builds at -O1 with line tables only (-g1): the sanitizers' advice, and a third of
# -O2 -g's compile time (loader_test.cc under ASan: 23 s against 69 s); reports keep
# function names and line numbers.
SAN_FLAGS = -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG"

# The C++ tests under AddressSanitizer + UndefinedBehaviorSanitizer, and the
# engine's, the span recorder's, array sources', convert's, shards' (stream feeds, cache)
# and the source conformance suite's tests under ThreadSanitizer (C++ only: the
# Python module is not built with sanitizers). CUDA is off in these builds and in `make fuzz`
# (cmake/stoker_cuda.cmake: nvcc takes no -fsanitize); the GPU stage's host
# maths (device_test) still runs under ASan.
test-asan: deps
	@cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo $(SAN_FLAGS) -DSTOKER_SANITIZE=address \
	  -DSTOKER_BUILD_PYTHON=OFF -G "$$(command -v ninja >/dev/null 2>&1 && echo Ninja || echo 'Unix Makefiles')" >/dev/null
	@cmake --build build-asan -j $(JOBS)
	@cd build-asan && ctest --output-on-failure -j $(JOBS)

test-tsan: deps
	@cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo $(SAN_FLAGS) -DSTOKER_SANITIZE=thread \
	  -DSTOKER_BUILD_PYTHON=OFF -G "$$(command -v ninja >/dev/null 2>&1 && echo Ninja || echo 'Unix Makefiles')" >/dev/null
	@cmake --build build-tsan -j $(JOBS) --target pipeline_test arrays_test convert_test shards_test \
	  conformance_test trace_test
	@build-tsan/src/pipeline_test
	@build-tsan/src/trace_test
	@build-tsan/src/arrays_test
	@build-tsan/src/convert_test
	@build-tsan/src/shards_test
	@build-tsan/src/conformance_test

# clang's thread-safety analysis of the lock annotations (STOKER_GUARDED_BY, ...:
# include/stoker/thread_annotations.h) as errors: first proves on small snippets
# that the analysis refuses wrong locking (scripts/check_thread_safety.sh), then
# builds the engine libraries and the CLI with clang -Wthread-safety
# -Werror=thread-safety in build-tsa/. The analysis is per translation unit, so
# the tests, the Python module and the CUDA code (nvcc) are left out.
check-thread-safety: deps
	@scripts/check_thread_safety.sh clang++
	@CC=clang CXX=clang++ cmake -S . -B build-tsa -DCMAKE_BUILD_TYPE=Release \
	  -DSTOKER_THREAD_SAFETY=ON -DSTOKER_WITH_CUDA=OFF -DSTOKER_BUILD_TESTS=OFF \
	  -DSTOKER_BUILD_PYTHON=OFF -DSTOKER_BUILD_EXAMPLES=OFF \
	  -G "$$(command -v ninja >/dev/null 2>&1 && echo Ninja || echo 'Unix Makefiles')" >/dev/null
	@cmake --build build-tsa -j $(JOBS)

# libFuzzer on the decoders and the per-sample path: once on JPEG (incl.
# region/scaled decode) and PNG seeds with fuzz/decode.dict, once on TIFF,
# WebP (animated too), BMP and PNM seeds with fuzz/formats.dict; then on the
# .npy header parser, the tar shard reader and the video demuxer and decoder
# (seeds made by fuzz/make_video_seeds.sh with the ffmpeg CLI); FUZZ_SECONDS each. The decoder
# runs treat any single allocation above 256 MiB as a crash (-malloc_limit_mb:
# the fuzz target's max_pixels of 2^22 bounds every legitimate one near
# 64 MiB, so a larger one is an allocation no check bounded). New crashers go
# to fuzz/regressions/<target>/. video_fuzz has no -malloc_limit_mb below its RSS
# limit: libavformat's MP4 demuxer allocates an index table by the entry count an atom
# claims before reading it (fuzz/regressions/video/mov_stss_claims_1900mb.bin: 1.9 GB
# claimed in a 4 KB file), untouched memory that ends in an error at the file's end;
# the RSS limit still catches memory that is used.
fuzz:
	@scripts/install-deps.sh fuzz
	@CC=clang-14 CXX=clang++-14 cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DSTOKER_BUILD_FUZZERS=ON -DSTOKER_BUILD_TESTS=OFF -DSTOKER_BUILD_PYTHON=OFF \
	  -G "$$(command -v ninja >/dev/null 2>&1 && echo Ninja || echo 'Unix Makefiles')" >/dev/null
	@cmake --build build-fuzz -j $(JOBS) --target decode_fuzz npy_fuzz tar_fuzz make_seeds video_fuzz
	@build-fuzz/fuzz/make_seeds build-fuzz/seeds/decode build-fuzz/seeds/formats >/dev/null
	@mkdir -p build-fuzz/corpus/decode build-fuzz/corpus/formats
	@build-fuzz/fuzz/decode_fuzz -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 \
	  -malloc_limit_mb=256 -timeout=10 -dict=fuzz/decode.dict \
	  -artifact_prefix=fuzz/regressions/decode/ -print_final_stats=1 \
	  build-fuzz/corpus/decode build-fuzz/seeds/decode fuzz/regressions/decode
	@build-fuzz/fuzz/decode_fuzz -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 \
	  -malloc_limit_mb=256 -timeout=10 -dict=fuzz/formats.dict \
	  -artifact_prefix=fuzz/regressions/decode/ -print_final_stats=1 \
	  build-fuzz/corpus/formats build-fuzz/seeds/formats fuzz/regressions/decode
	@mkdir -p build-fuzz/corpus/npy
	@build-fuzz/fuzz/npy_fuzz -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -timeout=10 \
	  -artifact_prefix=fuzz/regressions/npy/ -print_final_stats=1 \
	  build-fuzz/corpus/npy fuzz/regressions/npy
	@mkdir -p build-fuzz/corpus/tar
	@build-fuzz/fuzz/tar_fuzz -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -timeout=10 \
	  -max_len=65536 -dict=fuzz/tar.dict -artifact_prefix=fuzz/regressions/tar/ \
	  -print_final_stats=1 \
	  build-fuzz/corpus/tar fuzz/regressions/tar
	@fuzz/make_video_seeds.sh build-fuzz/seeds/video >/dev/null
	@mkdir -p build-fuzz/corpus/video
	@build-fuzz/fuzz/video_fuzz -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 \
	  -timeout=10 -max_len=16384 -artifact_prefix=fuzz/regressions/video/ \
	  -print_final_stats=1 \
	  build-fuzz/corpus/video build-fuzz/seeds/video fuzz/regressions/video

clean:
	rm -rf $(BUILD) build-asan build-tsan build-tsa build-fuzz build-wheel build-torch2 python/stoker/_C*.so \
	  python/stoker/bin
