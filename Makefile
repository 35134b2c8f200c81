# HybridStore: the developer entry points. `make demo` and `make test` install
# what they need (as root, on Debian bookworm), build, and run.
BUILD      ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=

# Debian packages the build, tests, fuzzers and tools need.
DEB_PACKAGES := build-essential cmake ninja-build pkg-config git python3 \
  librocksdb-dev liburing-dev libfmt-dev nlohmann-json3-dev libcli11-dev \
  libgtest-dev libgmock-dev clang libclang-rt-14-dev uuid-dev

.PHONY: all deps build test demo bench clean help

all: build

help:
	@echo "make deps   install build dependencies (apt-get, needs root)"
	@echo "make build  configure and build into $(BUILD)/ (binaries in $(BUILD)/bin)"
	@echo "make test   build and run the unit tests and the short qa checks"
	@echo "make demo   build, create a file-backed store and run the demo workload"
	@echo "make bench  build and run the benchmarks (prints tables)"

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

clean:
	rm -rf $(BUILD)
