# Thin wrapper around CMake (the way neovim does it). Every target first makes sure the Debian packages
# it needs are installed (scripts/install-deps.sh is idempotent and quick when nothing is missing): build
# and demo the build set only, test (and so .ci/run) the test set as well.
BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

# What scripts/demo.sh runs: the CLI, the agent (with its runtime shims), the samples and the viewer.
DEMO_TARGETS = txray txray-agent txray-relay txray-relay-backend txray-relay-client txray-orders \
               txray-orders-bench txray-viewer

.PHONY: all deps test-deps configure build test stability package soak fuzz demo bench clean

all: build

deps:
	@bash scripts/install-deps.sh

test-deps:
	@bash scripts/install-deps.sh --test

$(BUILD_DIR)/build.ninja: CMakeLists.txt | deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS)

configure: deps $(BUILD_DIR)/build.ninja

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: test-deps build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS) --timeout 600

# The whole suite repeated, quiet and beside busy loops, to show no test depends on the load
# (scripts/stability.sh: RUNS quiet runs, default 5, and BUSY_RUNS with two `yes` loops, default 3).
stability: build
	bash scripts/stability.sh $(BUILD_DIR)

# The Debian packages txray-agent, txray, txray-viewer into $(BUILD_DIR)/ (docs/install.md).
package: build
	cd $(BUILD_DIR) && cpack -G DEB

# Long variants of the hostile-conditions tests (docs/reliability.md): e.g. 200 collector kill -9s.
soak: build
	bash scripts/soak.sh $(BUILD_DIR)

# Long runs of every libFuzzer target (the agent's parsers, the collector's decoder): FUZZ_SECONDS each
# (default 600), FUZZ_JOBS at a time, corpora kept in $(BUILD_DIR)/fuzz-corpus between runs.
fuzz: build
	bash scripts/fuzz.sh $(BUILD_DIR)

# Only the targets the demo runs (not the tests, fuzzers and benchmarks).
demo: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target $(DEMO_TARGETS)
	bash scripts/demo.sh $(BUILD_DIR)

bench: build
	bash scripts/bench.sh $(BUILD_DIR)

clean:
	rm -rf $(BUILD_DIR)
