# stoker's front end. `make` installs missing Debian packages, configures and
# builds; `make test` runs every test (C++ and Python, under ctest);
# `make demo` benchmarks stoker against torch's DataLoader on generated data.

BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=

.PHONY: all deps configure build test demo clean test-asan test-tsan

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/CMakeCache.txt:
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS) \
	  -G "$$(command -v ninja >/dev/null 2>&1 && echo Ninja || echo 'Unix Makefiles')" >/dev/null

configure: deps $(BUILD)/CMakeCache.txt

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

demo: build
	@scripts/demo.sh $(DATA)

# The C++ tests under AddressSanitizer + UndefinedBehaviorSanitizer, and the
# engine's tests under ThreadSanitizer (C++ only: the Python module is not
# built with sanitizers).
test-asan: deps
	@cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTOKER_SANITIZE=address \
	  -DSTOKER_BUILD_PYTHON=OFF -G "$$(command -v ninja >/dev/null 2>&1 && echo Ninja || echo 'Unix Makefiles')" >/dev/null
	@cmake --build build-asan -j $(JOBS)
	@cd build-asan && ctest --output-on-failure -j $(JOBS)

test-tsan: deps
	@cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTOKER_SANITIZE=thread \
	  -DSTOKER_BUILD_PYTHON=OFF -G "$$(command -v ninja >/dev/null 2>&1 && echo Ninja || echo 'Unix Makefiles')" >/dev/null
	@cmake --build build-tsan -j $(JOBS) --target pipeline_test
	@build-tsan/src/pipeline_test

clean:
	rm -rf $(BUILD) build-asan build-tsan python/stoker/_C*.so
