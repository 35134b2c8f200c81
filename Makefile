# HybridStore: the developer entry points. `make demo` and `make test` install
# what they need (as root, on Debian bookworm), build, and run.
BUILD      ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=
FUZZ_BUILD ?= $(BUILD)-fuzz
FUZZ_SECONDS ?= 60
# libFuzzer's seed for `make fuzz`; 0 draws one (printed in the summary).
FUZZ_SEED  ?= 0
# The seed of every randomised qa check in `make test`: fixed, so a failure
# repeats (each check prints its own).
QA_SEED    ?= 1

# Debian packages the build, tests, fuzzers and tools need.
DEB_PACKAGES := build-essential cmake ninja-build pkg-config git python3 python3-matplotlib \
  librocksdb-dev liburing-dev libfmt-dev nlohmann-json3-dev libcli11-dev \
  libgtest-dev libgmock-dev clang libclang-rt-14-dev uuid-dev gdb fio libgoogle-perftools-dev \
  libfuse3-dev fuse3 python3-pytest python3-yaml python3-packaging

.PHONY: all deps build test demo bench crash-long fuzz tsan clean help

all: build

help:
	@echo "make deps   install build dependencies (apt-get, needs root)"
	@echo "make build  configure and build into $(BUILD)/ (binaries in $(BUILD)/bin)"
	@echo "make test   build and run the unit tests and the short qa checks"
	@echo "make demo   build, then rados-bench-style runs on a fresh file-backed store, with a plotted report"
	@echo "make bench  build and run the benchmarks (prints tables, then every PASS/FAIL goal line)"
	@echo "make crash-long  300 kill/recover rounds of the crash-consistency harness (HS_CRASH_ROUNDS=N)"
	@echo "make fuzz   build the libFuzzer targets with clang into $(FUZZ_BUILD) and run each $(FUZZ_SECONDS) s"
	@echo "make tsan   build the I/O stress tests with ThreadSanitizer into $(BUILD)-tsan and run them"
	@echo "make qa-suites  validate the teuthology suites, run the standalone scripts, the local runner and the ansible checks"
	@echo "make ansible-test-multihost  the playbooks on 3 Tentacle hosts (sid root overlays in namespaces, packages, ceph-volume): deploy, add/shrink/replace OSDs, rolling update, host loss (root)"
	@echo "make ansible-test-tentacle  site.yml on Tentacle in the sid root: packages from the HybridStore repository, OSDs by ceph-volume (root)"
	@echo "make ceph-proof CEPH_BUILD=DIR  ceph_test_objectstore and the 3-OSD cluster proof on a Ceph build with HybridStore"
	@echo "make ceph-hybrid-proof CEPH_BUILD=DIR  HybridStore against BlueStore on emulated SSD and HDD classes (root, FUSE)"
	@echo "make ceph-objectstore-fio CEPH_BUILD=DIR  HybridStore against BlueStore through Ceph's fio ObjectStore engine: IOPS, latency, CPU per op"
	@echo "make ceph-thrash CEPH_BUILD=DIR  ceph_test_rados under OSD thrashing, replicated and EC pools, HybridStore then BlueStore (HS_THRASH_MINUTES per pool)"
	@echo "make ceph-standalone CEPH_BUILD=DIR  Ceph's standalone scrub/repair/EIO/space scripts, unmodified, on HybridStore then BlueStore"
	@echo "make ceph-corruption CEPH_BUILD=DIR  bytes flipped beneath a stopped OSD's store (SSD data, HDD data, a RocksDB SST): read-repair, deep scrub, repair"
	@echo "make ceph-full CEPH_BUILD=DIR  a cluster filled past its full ratio: writes held, no ENOSPC crash, deletes and writes resume"
	@echo "make ceph-tmpfs-dir CEPH_BUILD=DIR  an OSD on a tmpfs data directory rebooted and its disks moved to another host, primed from the labels; HybridStore then BlueStore (root)"
	@echo "make scale         SCALE_OBJECTS (10M) small objects with xattrs and omap: fill, mount, migration pass, fsck, reads, remount; wall time and peak RSS of each"
	@echo "make ceph-memory CEPH_BUILD=DIR  one OSD under osd_memory_target (HS_MEM_TARGET 2G) through a fill of HS_MEM_OBJECTS (1M), reads, a migration pass, a deep scrub: peak RSS per phase, dump_mempools"
	@echo "make ceph-powercut CEPH_BUILD=DIR  power cuts of an OSD's SSD and HDD models under load, HS_POWERCUT_ROUNDS (50) seeded rounds; HybridStore then BlueStore (root, FUSE)"
	@echo "make ceph-volume-test  the ceph-volume hybridstore module's unit tests in the sid root (root; SKIPPED without the root or its ceph-volume)"
	@echo "make ceph-volume-test-debs [CEPH_VOLUME_VERSION=V]  the same tests with this host's python3 against sid's ceph-volume downloaded into build/ (in make test; SKIPPED when sid is unreachable)"
	@echo "make ceph-volume CEPH_VOLUME_REPORT=FILE  ceph-volume raw prepare/activate/list/zap of a hybridstore OSD on loop devices in the sid root (root)"
	@echo "make ceph-migrate CEPH_MIGRATE_REPORT=FILE  a BlueStore OSD migrated to hybridstore (out, destroy, zap, ceph-volume prepare --osd-id, backfill, verify) on loop devices in the sid root (root)"
	@echo "make osd-image [OSD_IMAGE_REPORT=FILE]  an OCI image of a hybridstore OSD (Debian sid + our packages), podman run of it joining the sid root's cluster (root, podman)"
	@echo "make ceph-deps  install the Debian packages a Ceph tree's build needs"
	@echo "make ceph-packages [DEBIAN_SUITE=sid|trixie]  Debian's Ceph source built with HybridStore in a root of that release, packaged, installed there"
	@echo "make ceph-debian-proof [DEBIAN_SUITE=sid|trixie]  the same, then store_test, the cluster, tmpfs, standalone, hardware, thrash and power-cut proofs on the installed packages"

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
	python3 qa/layering-check.py --self-test
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 900
	HS_QA_SEED=$(QA_SEED) qa/run-short.sh $(BUILD)
	@$(MAKE) --no-print-directory qa-suites
	@$(MAKE) --no-print-directory ceph-proof CEPH_PROOF_PARTS=store-test
	@$(MAKE) --no-print-directory ceph-volume-test-debs

demo: build
	qa/demo.sh $(BUILD)

bench: build
	qa/bench.sh $(BUILD)

crash-long: build
	qa/crash-long.sh $(BUILD)

# Ten million small objects with xattrs and omap (issue 57): the fill, a
# mount, a migration pass, fsck, random reads and a remount, each with its
# wall time and peak RSS, and the create rate plotted (qa/scale.sh). Long, not
# in CI: the fill took 9.3 min here, the whole run 12 min and 27 GB of disk;
# SCALE_OBJECTS=N for a shorter one.
.PHONY: scale
SCALE_OUT ?= scale-report
scale: build
	qa/scale.sh $(BUILD) $(SCALE_OUT)

$(FUZZ_BUILD)/build.ninja: CMakeLists.txt | deps
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DHS_FUZZ=ON -DHS_BUILD_TESTS=OFF

fuzz: deps $(FUZZ_BUILD)/build.ninja
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_all
	qa/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_SEED)

# Not part of `make test`: the instrumented build alone takes long.
tsan: deps
	JOBS=$(JOBS) qa/tsan.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(FUZZ_BUILD)

# ---------------------------------------------------------------------------
# Ceph integration checks (qa/README.md, ansible/README.md): teuthology suites
# validated, standalone scripts, the local suite runner, the ansible roles.
# Steps that need a hybridstore-capable ceph-osd run when CEPH_OSD=/path or
# CEPH_BUILD=dir is given and report SKIPPED otherwise.
QA_DEB_PACKAGES := ceph-mon ceph-mgr ceph-osd ceph-common python3-rados python3-venv \
  python3-apt uuid-runtime jq shellcheck util-linux procps xmlstarlet
QA_PYTHON    ?= /usr/bin/python3
QA_VENV      ?= $(BUILD)/venv-qa
ANSIBLE_VENV ?= $(BUILD)/venv-ansible
# The local runner's share of `make test`: the basic suite's put/get jobs:
# the BlueStore baseline one runs (Debian's ceph-osd, about a minute), the
# hybridstore ones are listed with their skip reason unless CEPH_OSD is given.
QA_LOCAL_ARGS ?= hybridstore/basic --filter-out rados-bench,omap

.PHONY: ceph-packages ceph-debian-proof
.PHONY: qa-deps qa-venv ansible-venv qa-validate qa-standalone qa-local ansible-test qa-suites ceph-proof ceph-hybrid-proof ceph-deps ceph-thrash ceph-standalone
.PHONY: ansible-multihost-deps ansible-test-multihost

qa-deps:
	@$(MAKE) --no-print-directory deps DEB_PACKAGES="$(QA_DEB_PACKAGES)"

$(QA_VENV)/.installed: qa/requirements-teuthology.txt | qa-deps
	rm -rf $(QA_VENV) && $(QA_PYTHON) -m venv $(QA_VENV)
	$(QA_VENV)/bin/pip install -q --disable-pip-version-check -r qa/requirements-teuthology.txt
	touch $@

$(ANSIBLE_VENV)/.installed: ansible/tests/requirements.txt | qa-deps
	rm -rf $(ANSIBLE_VENV) && $(QA_PYTHON) -m venv $(ANSIBLE_VENV)
	$(ANSIBLE_VENV)/bin/pip install -q --disable-pip-version-check -r ansible/tests/requirements.txt
	touch $@

qa-venv: $(QA_VENV)/.installed
ansible-venv: $(ANSIBLE_VENV)/.installed

# Every suite's matrix built and every job merged by teuthology, fragments,
# links and conf keys checked; unit tests of the runner and the qa task;
# shellcheck and pyflakes.
qa-validate: qa-venv
	HS_QA_PYTHON=$(QA_VENV)/bin/python qa/validate-suites
	cd qa && ../$(QA_VENV)/bin/python -m unittest discover -s runlocal/tests -t .
	cd qa/tasks && ../../$(QA_VENV)/bin/python -m unittest discover -s tests -t .
	$(QA_VENV)/bin/pyflakes qa/runlocal qa/tasks qa/workunits/hybridstore/rados-model.py src/ceph-volume
	shellcheck -S warning -x -P SCRIPTDIR:. qa/standalone/*.sh qa/standalone/hybridstore/*.sh \
	  qa/workunits/hybridstore/*.sh qa/run-local qa/validate-suites ansible/tests/*.sh \
	  qa/ceph/*.sh qa/devclass/*.sh qa/short/*.sh qa/demo.sh qa/scale.sh src/ceph-volume/*.sh

qa-standalone: build qa-deps
	HYBRIDSTORE_TOOL=$(CURDIR)/$(BUILD)/bin/hybridstore-tool qa/standalone/run-standalone.sh

qa-local: build qa-venv
	HS_QA_PYTHON=$(QA_VENV)/bin/python HYBRIDSTORE_TOOL=$(CURDIR)/$(BUILD)/bin/hybridstore-tool \
	  qa/run-local $(QA_LOCAL_ARGS)

ansible-test: build ansible-venv
	ANSIBLE_VENV=$(CURDIR)/$(ANSIBLE_VENV) HYBRIDSTORE_TOOL=$(CURDIR)/$(BUILD)/bin/hybridstore-tool \
	  ansible/tests/run-tests.sh

# site.yml on Tentacle from packages (ansible/tests/tentacle.sh,
# ansible/README.md): the sid root (HS_CHROOT, /srv/hs-chroot/sid) under a
# throwaway overlay as the managed host, the HybridStore packages of
# HS_APT_REPO_DIR (/srv/hs-repo/sid) plus this tree's ceph-volume module
# served over http, OSDs made by ceph-volume on loop devices; converge,
# second converge (changed=0), --check, verify, replace/add/shrink an OSD,
# purge. Root needed; SKIPPED without root, the root or the packages. About
# 5 min on an idle 2-core machine, 25 under a load average of 10-15.
.PHONY: ansible-test-tentacle
ansible-test-tentacle: ansible-venv
	@ANSIBLE_VENV=$(CURDIR)/$(ANSIBLE_VENV) timeout --signal=TERM --kill-after=60 2700 \
	  ansible/tests/tentacle.sh; r=$$?; [ $$r = 77 ] && exit 0; exit $$r

# The playbooks across several hosts on Tentacle (ansible/tests/multihost.sh,
# ansible/README.md): three hosts on this machine, each an overlay of the sid
# root (HS_CHROOT, /srv/hs-chroot/sid) in its own network, mount, UTS and pid
# namespaces, reached by ansible over ssh (this machine's sshd, chrooting
# into the overlay); the HybridStore packages of HS_APT_REPO_DIR
# (/srv/hs-repo/sid) plus this tree's ceph-volume module served on the
# hosts' bridge, OSDs made by ceph-volume on loop devices; site.yml, add-osd,
# shrink-osd + replace-osd, rolling_update under client load, a host cut
# off. Root, the sid root and the packages needed; SKIPPED without them.
MULTIHOST_DEB_PACKAGES := openssh-server openssh-client iproute2 util-linux procps jq dpkg
ansible-multihost-deps:
	@$(MAKE) --no-print-directory deps DEB_PACKAGES="$(MULTIHOST_DEB_PACKAGES)"

# The skip decision comes first: without root the installs below would fail
# instead of saying SKIPPED.
ansible-test-multihost:
	@ansible/tests/multihost.sh --can-run || exit 0; \
	$(MAKE) --no-print-directory ansible-venv ansible-multihost-deps || exit 1; \
	ANSIBLE_VENV=$(CURDIR)/$(ANSIBLE_VENV) timeout --signal=TERM --kill-after=120 3600 \
	  ansible/tests/multihost.sh; r=$$?; [ $$r = 77 ] && exit 0; exit $$r

# The qa suites, standalone scripts, local runner and ansible checks (part
# of `make test`); steps that need a hybridstore ceph-osd (CEPH_BUILD) report
# themselves skipped without one.
qa-suites: qa-validate qa-standalone qa-local ansible-test

# The Ceph adapter's proof (docs/ceph.md): ceph_test_objectstore on
# hybridstore, and the 3-OSD cluster with rados bench against BlueStore, kill
# -9 recovery and the offline tools. Needs CEPH_BUILD=<Ceph build with
# HybridStore>; reports SKIPPED without it. `make test` runs only the part
# that is quick (and skipped in CI, which has no Ceph build).
CEPH_PROOF_PARTS ?= store-test cluster
ceph-proof: build qa-deps
	@rc=0; for p in $(CEPH_PROOF_PARTS); do \
	  echo "== qa/ceph/$$p.sh"; \
	  HYBRIDSTORE_TOOL=$(CURDIR)/$(BUILD)/bin/hybridstore-tool qa/ceph/$$p.sh; r=$$?; \
	  if [ $$r = 77 ]; then :; elif [ $$r != 0 ]; then rc=1; fi; \
	done; exit $$rc

# HybridStore against BlueStore (the same binary and Debian's) on emulated
# device classes: the HDD through the 7,200-rpm disk model, the SSD raw
# (qa/ceph/hybrid-hardware.sh, docs/ceph.md). Root, FUSE and CEPH_BUILD
# needed; SKIPPED without them. About an hour on 2 cores.
HH_OUT ?= hybrid-hardware-report
ceph-hybrid-proof: build qa-deps
	@HS_BUILD_DIR=$(CURDIR)/$(BUILD) HYBRIDSTORE_TOOL=$(CURDIR)/$(BUILD)/bin/hybridstore-tool \
	  qa/ceph/hybrid-hardware.sh $(HH_OUT); r=$$?; [ $$r = 77 ] && exit 0; exit $$r

# HybridStore against BlueStore through Ceph's own ObjectStore benchmark,
# fio's objectstore engine (no OSD): the same job files and devices for both
# stores, every row alternated and repeated, a table of IOPS, MB/s, p50/p99
# and CPU per op with the ratios (qa/ceph/objectstore-fio.sh; its --help
# lists HS_FIO_MATRIX=full and the other knobs). Needs CEPH_BUILD with bin/fio
# and lib/libfio_ceph_objectstore.so (ceph-integrate --fio); SKIPPED without.
# About 30 minutes on 2 cores.
.PHONY: ceph-objectstore-fio
OSFIO_OUT ?= objectstore-fio-report
ceph-objectstore-fio:
	@HS_BUILD_DIR=$(CURDIR)/$(BUILD) qa/ceph/objectstore-fio.sh $(OSFIO_OUT); r=$$?; [ $$r = 77 ] && exit 0; exit $$r

# Ceph's ceph_test_rados (built from the same tree) under OSD thrashing,
# as Ceph's rados/thrash suites run it: 3 OSDs, a replicated (size 3) and an
# EC (k=2 m=1, overwrites) pool, seeded SIGKILLs and out/in, then every PG
# active+clean and deep-scrubbed clean; HybridStore, then BlueStore of the
# same binary (qa/ceph/thrash.sh, its --help). Needs CEPH_BUILD with
# bin/ceph_test_rados; SKIPPED without. HS_THRASH_MINUTES (20) per pool:
# about 1 h 40 min for both stores on 2 cores.
.PHONY: ceph-thrash
THRASH_OUT ?= thrash-report
ceph-thrash: qa-deps
	@qa/ceph/thrash.sh both $(THRASH_OUT); r=$$?; [ $$r = 77 ] && exit 0; exit $$r

# Ceph's own standalone scripts (scrub/repair, EIO, recovery and backfill
# space, split/merge) from the tree CEPH_BUILD was built from, unmodified,
# on hybridstore OSDs and then on the same binary's BlueStore.
ceph-standalone: qa-deps
	@qa/ceph/ceph-standalone.sh both $(STANDALONE_OUT); r=$$?; [ $$r = 77 ] && exit 0; exit $$r

# Bytes flipped beneath the store on a stopped OSD's devices (an SSD-section
# object, an HDD object, a RocksDB SST): the read returns the replica's bytes,
# deep scrub finds it, repair fixes it, a corrupt SST stops the OSD from
# starting; HybridStore, then BlueStore of the same binary
# (qa/ceph/corruption.sh). Needs CEPH_BUILD; SKIPPED without. ~3 min a store.
.PHONY: ceph-corruption
CORRUPTION_OUT ?= corruption-report
ceph-corruption: build qa-deps
	@HYBRIDSTORE_TOOL=$(CURDIR)/$(BUILD)/bin/hybridstore-tool \
	  qa/ceph/corruption.sh both $(CORRUPTION_OUT); r=$$?; [ $$r = 77 ] && exit 0; exit $$r

# A cluster filled past its full ratio on small devices: OSD_FULL blocks
# writes, no OSD exits on ENOSPC, deletes with --force-full bring it back,
# writes resume, nothing acknowledged is lost; on HybridStore the SSD tier
# fills first and objects spill to the HDD. HybridStore, then BlueStore of
# the same binary (qa/ceph/full.sh). Needs CEPH_BUILD; SKIPPED without.
.PHONY: ceph-full
FULL_OUT ?= full-report
ceph-full: qa-deps
	@qa/ceph/full.sh both $(FULL_OUT); r=$$?; [ $$r = 77 ] && exit 0; exit $$r

# One OSD under osd_memory_target (issue 57): peak RSS of each phase (fill,
# reads, a migration pass, a deep scrub) within 1.1 x the target, the
# store's holders in dump_mempools, the target changed at run time
# (qa/ceph/osd-memory.sh). MEMORY_STORES=both adds BlueStore's row. ~30 min
# at 1M objects.
.PHONY: ceph-memory
MEMORY_OUT ?= osd-memory-report
MEMORY_STORES ?= hybridstore
ceph-memory: qa-deps
	@qa/ceph/osd-memory.sh $(MEMORY_STORES) $(MEMORY_OUT); r=$$?; [ $$r = 77 ] && exit 0; exit $$r

# An OSD whose data directory is a tmpfs: rebooted onto an empty one and
# moved with its disks to another (namespaced) host, each time primed from
# the device labels; HybridStore with its RocksDB on the SSD, then BlueStore
# of the same binary (qa/ceph/tmpfs-dir.sh). Root; SKIPPED otherwise. ~4 min.
.PHONY: ceph-tmpfs-dir ceph-powercut
TMPFS_REPORT ?= tmpfs-dir-report.md
ceph-tmpfs-dir: build qa-deps
	@HYBRIDSTORE_TOOL=$${HYBRIDSTORE_TOOL:-$(CURDIR)/$(BUILD)/bin/hybridstore-tool} \
	  qa/ceph/tmpfs-dir.sh both $(TMPFS_REPORT); r=$$?; [ $$r = 77 ] && exit 0; exit $$r

# Power cuts under a live OSD on disk models with volatile write caches:
# HS_POWERCUT_ROUNDS (50) rounds seeded from HS_POWERCUT_SEED (1), every
# acknowledged write read back, deep scrub and fsck --deep clean after each;
# HybridStore, then BlueStore of the same binary (qa/ceph/powercut.sh).
# Root and FUSE; SKIPPED otherwise. About a minute a round.
POWERCUT_OUT ?= powercut-report
ceph-powercut: build qa-deps
	@HYBRIDSTORE_TOOL=$${HYBRIDSTORE_TOOL:-$(CURDIR)/$(BUILD)/bin/hybridstore-tool} \
	  DEVCLASS_TOOL=$${DEVCLASS_TOOL:-$(CURDIR)/$(BUILD)/bin/hybridstore-diskmodel} \
	  qa/ceph/powercut.sh both $(POWERCUT_OUT); r=$$?; [ $$r = 77 ] && exit 0; exit $$r

# ceph-volume's hybridstore module (src/ceph-volume): its unit tests (every
# process call mocked) by the Python of the sid root, whose ceph-volume is
# Debian's 20.2.4. CEPH_VOLUME_TEST_ARGS="--ceph-suite DIR" also runs
# ceph-volume's own tests from DIR (Ceph's src/ceph-volume), as they are and
# with the module registered. Root and the root needed; SKIPPED otherwise.
# Not in `make test` (CI has no sid root); ceph-volume-test-debs is.
.PHONY: ceph-volume-test ceph-volume-test-debs ceph-volume
ceph-volume-test:
	@src/ceph-volume/run-tests.sh $(CEPH_VOLUME_TEST_ARGS); r=$$?; [ $$r = 77 ] && exit 0; exit $$r
# The same tests without the root (part of `make test`, CI): bookworm's
# python3 against sid's ceph-volume and python3-ceph-common at
# CEPH_VOLUME_VERSION, downloaded once into $(BUILD)/ceph-volume-debs;
# SKIPPED when sid or that version is unreachable.
CEPH_VOLUME_VERSION ?= 20.2.4+ds-2
ceph-volume-test-debs:
	@HS_CEPH_VOLUME_VERSION=$(CEPH_VOLUME_VERSION) HS_CEPH_VOLUME_DEBS_DIR=$(abspath $(BUILD))/ceph-volume-debs \
	  src/ceph-volume/run-tests.sh --debs; r=$$?; [ $$r = 77 ] && exit 0; exit $$r

# ceph-volume on loop devices in the sid root with the installed packages
# (qa/ceph/ceph-volume.sh): raw prepare, activate, the OSD joins, list,
# deactivate and reactivate, zap, and the refusals. Root; SKIPPED otherwise.
CEPH_VOLUME_REPORT ?= ceph-volume-report.md
ceph-volume:
	@qa/ceph/ceph-volume.sh --in-root $(CEPH_VOLUME_REPORT); r=$$?; [ $$r = 77 ] && exit 0; exit $$r

# The one-time migration of a BlueStore OSD to hybridstore on loop devices in
# the sid root (qa/ceph/migrate-bluestore.sh): three BlueStore OSDs, a pool
# of known objects; one OSD drained, destroyed, zapped, prepared again with
# ceph-volume as hybridstore under its id, backfilled and checked (metadata,
# every object, deep-scrub). The report has every command and its output
# (docs/ceph.md shows one). Root; SKIPPED otherwise. Not in `make test`.
CEPH_MIGRATE_REPORT ?= ceph-migrate-report.md
.PHONY: ceph-migrate
ceph-migrate:
	@qa/ceph/migrate-bluestore.sh --in-root $(CEPH_MIGRATE_REPORT); r=$$?; [ $$r = 77 ] && exit 0; exit $$r

# An OCI image of a hybridstore OSD (qa/ceph/osd-image.sh): a Debian sid root
# with our packages from the package step's repository, imported by podman;
# a container of it prepares, activates and runs an OSD that joins the sid
# root's mon and mgr, checked with ceph osd metadata and rados bench. Root,
# podman (and runc), the sid root and the packages; SKIPPED otherwise. Not in
# `make test`.
.PHONY: osd-image
OSD_IMAGE_REPORT ?= osd-image-report.md
osd-image:
	@qa/ceph/osd-image.sh $(OSD_IMAGE_REPORT); r=$$?; [ $$r = 77 ] && exit 0; exit $$r

# The Debian packages a Ceph tree's build needs (src/tools/ceph-integrate).
# HybridStore on a Debian release's Ceph (sid: Tentacle 20.2, the default;
# trixie: Reef 18.2.7), built from Debian's source in a root of that release
# (src/tools/ceph-chroot), packaged and installed there; then the proofs.
# Root and the package registry needed; SKIPPED otherwise.
DEBIAN_SUITE ?= sid
ceph-packages:
	qa/ceph/debian-proof.sh --suite $(DEBIAN_SUITE) --parts chroot,source,build,tools,package,install -j $(JOBS)

ceph-debian-proof:
	qa/ceph/debian-proof.sh --suite $(DEBIAN_SUITE) -j $(JOBS)

ceph-deps:
	src/tools/ceph-integrate --install-deps
