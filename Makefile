# SPDX-License-Identifier: MIT
# Thin wrapper over CMake for the README's two commands and friends.
#   make run    set up, build (Release) and run the main job
#   make test   set up, build with ASan+UBSan and run the whole test suite
JOBS ?= $(shell nproc)
BUILD ?= build
BUILD_ASAN ?= build-asan

.PHONY: all setup setup-test build build-asan run test bench install clean

all: build

setup:
	bash scripts/setup.sh

setup-test:
	bash scripts/setup.sh test

build: setup
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD) -j $(JOBS)

build-asan: setup
	cmake -S . -B $(BUILD_ASAN) -DCMAKE_BUILD_TYPE=Debug -DPZ_SANITIZE=ON
	cmake --build $(BUILD_ASAN) -j $(JOBS)

run: build
	./$(BUILD)/pipezip train

test: setup-test build-asan
	cd $(BUILD_ASAN) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j 2

bench: build
	bash bench/compare_torch.sh ./$(BUILD)/pipezip

install: build
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD) $(BUILD_ASAN)
