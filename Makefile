# HybridStore: the developer entry points. `make demo` and `make test` install
# what they need (as root, on Debian bookworm), build, and run.
BUILD      ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=
FUZZ_BUILD ?= $(BUILD)-fuzz
FUZZ_SECONDS ?= 60

# Debian packages the build, tests, fuzzers and tools need.
DEB_PACKAGES := build-essential cmake ninja-build pkg-config git python3 python3-matplotlib \
  librocksdb-dev liburing-dev libfmt-dev nlohmann-json3-dev libcli11-dev \
  libgtest-dev libgmock-dev clang libclang-rt-14-dev uuid-dev

.PHONY: all deps build test demo bench crash-long fuzz clean help

all: build

help:
	@echo "make deps   install build dependencies (apt-get, needs root)"
	@echo "make build  configure and build into $(BUILD)/ (binaries in $(BUILD)/bin)"
	@echo "make test   build and run the unit tests and the short qa checks"
	@echo "make demo   build, then rados-bench-style runs on a fresh file-backed store, with a plotted report"
	@echo "make bench  build and run the benchmarks (prints tables)"
	@echo "make crash-long  300 kill/recover rounds of the crash-consistency harness (HS_CRASH_ROUNDS=N)"
	@echo "make fuzz   build the libFuzzer targets with clang into $(FUZZ_BUILD) and run each $(FUZZ_SECONDS) s"

# Idempotent: installs only what is missing, so it is quick when nothing is.
deps:
	@missing=""; for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "make deps needs root to install:$$missing" >&2; exit 1; fi; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -q && apt-get install -y -q --no-install-recommends $$missing; \
	else echo "deps: all installed"; fi

$(BUILD)/build.ninja: CMakeLists.txt | deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS)

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 900
	qa/run-short.sh $(BUILD)

demo: build
	qa/demo.sh $(BUILD)

bench: build
	qa/bench.sh $(BUILD)

crash-long: build
	qa/crash-long.sh $(BUILD)

$(FUZZ_BUILD)/build.ninja: CMakeLists.txt | deps
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DHS_FUZZ=ON -DHS_BUILD_TESTS=OFF

fuzz: deps $(FUZZ_BUILD)/build.ninja
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_all
	qa/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD) $(FUZZ_BUILD)
