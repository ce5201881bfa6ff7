# TierDB top-level build. Targets: all, install, check, demo, bench, clean.
#
# The lake library is built twice: optimised for the tierdb command and the
# benchmarks (build/release), and with AddressSanitizer + UBSan for the C
# tests (build/asan). Sources are found by wildcard, so a new module needs no
# edit here.

CC      ?= cc
PREFIX  ?= /usr/local
BUILD   := build

CSTD    := -std=c11 -D_GNU_SOURCE
WARN    := -Wall -Wextra -Werror -Wno-unused-parameter
INCLUDE := -Ilake/include -Ilake/src
LIBS    := -ljansson -lzstd -lsnappy -lz -llz4 -lbrotlidec -lcurl -lm
# The tierdb command and the test tools talk to Postgres through libpq.
PG_CONFIG ?= pg_config
PQ_CFLAGS := -I$(shell $(PG_CONFIG) --includedir 2>/dev/null || echo /usr/include/postgresql)
PQ_LIBS   := -lpq
# The daemon's /metrics endpoint (cli/metrics_http.c) runs in libmicrohttpd's own thread.
HTTP_LIBS := -lmicrohttpd

RELEASE_CFLAGS := $(CSTD) $(WARN) $(INCLUDE) -O2 -g -fPIC
ASAN_CFLAGS    := $(CSTD) $(WARN) $(INCLUDE) -O1 -g -fno-omit-frame-pointer \
                  -fsanitize=address,undefined -fno-sanitize-recover=undefined
ASAN_LDFLAGS   := -fsanitize=address,undefined

LAKE_SRC   := $(sort $(wildcard lake/src/*/*.c))
LAKE_HDR   := $(wildcard lake/include/tierlake/*.h lake/src/*/*.h)
CLI_SRC    := $(sort $(wildcard cli/*.c))
CLI_HDR    := $(wildcard cli/*.h)
TEST_SRC   := $(sort $(wildcard lake/tests/*.c))
# Tests that need an S3-compatible server (make test-s3 starts one).
S3_TEST_SRC := lake/tests/main.c lake/tests/fault_storage.c lake/tests/table_fixture.c lake/tests/fault_alloc.c \
               $(sort $(wildcard lake/tests/s3/*.c))
# Tests that need an Iceberg REST catalog (make test-rest starts one).
REST_TEST_SRC := lake/tests/main.c lake/tests/fault_storage.c lake/tests/table_fixture.c lake/tests/fault_alloc.c \
                 $(sort $(wildcard lake/tests/rest/*.c))
TOOL_SRC   := $(sort $(wildcard tests/tools/*.c))
BENCH_SRC  := $(sort $(wildcard bench/*.c))

RELEASE_OBJ := $(LAKE_SRC:%.c=$(BUILD)/release/%.o)
ASAN_OBJ    := $(LAKE_SRC:%.c=$(BUILD)/asan/%.o)

TIERDB    := $(BUILD)/tierdb
LAKE_TEST := $(BUILD)/asan/lake_tests
S3_TEST   := $(BUILD)/asan/s3_tests
REST_TEST := $(BUILD)/asan/rest_tests
TOOLS     := $(TOOL_SRC:tests/tools/%.c=$(BUILD)/tools/%)
BENCHES   := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
FUZZERS   := $(patsubst lake/tests/fuzz/%.c,$(BUILD)/fuzz/%,$(wildcard lake/tests/fuzz/*.c))

VENV       := .venv
PYTHON     := $(VENV)/bin/python
FUZZ_SECONDS ?= 100

.PHONY: all install install-extension extension check deps test-c test-s3 test-rest test-fuzz test-interop test-e2e test-e2e-s3 \
	test-spark test-regress check-differential-long check-maintenance-long bench demo demo-s3 demo-rest clean format

all: $(TIERDB) $(TOOLS) extension

# The Postgres extension builds with PGXS in its own directory and links
# the lake library's PIC release objects (RELEASE_CFLAGS has -fPIC).
extension: $(BUILD)/release/liblake.a
	@$(MAKE) --no-print-directory -C extension

install-extension: extension
	@$(MAKE) --no-print-directory -C extension install

$(BUILD)/release/%.o: %.c $(LAKE_HDR)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(RELEASE_CFLAGS) -c $< -o $@

$(BUILD)/asan/%.o: %.c $(LAKE_HDR)
	@mkdir -p $(dir $@)
	@echo "  CC      $< (asan)"
	@$(CC) $(ASAN_CFLAGS) -c $< -o $@

$(BUILD)/release/liblake.a: $(RELEASE_OBJ)
	@rm -f $@
	@ar rcs $@ $^

$(BUILD)/asan/liblake.a: $(ASAN_OBJ)
	@rm -f $@
	@ar rcs $@ $^

$(TIERDB): $(CLI_SRC) $(CLI_HDR) $(BUILD)/release/liblake.a
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	@$(CC) $(RELEASE_CFLAGS) -pthread $(PQ_CFLAGS) -Icli $(CLI_SRC) $(BUILD)/release/liblake.a $(LIBS) $(PQ_LIBS) $(HTTP_LIBS) -o $@

$(LAKE_TEST): $(TEST_SRC) lake/tests/test.h $(BUILD)/asan/liblake.a
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	@$(CC) $(ASAN_CFLAGS) -Ilake/tests $(TEST_SRC) $(BUILD)/asan/liblake.a $(LIBS) $(ASAN_LDFLAGS) -o $@

$(S3_TEST): $(S3_TEST_SRC) lake/tests/test.h $(BUILD)/asan/liblake.a
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	@$(CC) $(ASAN_CFLAGS) -Ilake/tests $(S3_TEST_SRC) $(BUILD)/asan/liblake.a $(LIBS) $(ASAN_LDFLAGS) -o $@

$(REST_TEST): $(REST_TEST_SRC) lake/tests/test.h $(BUILD)/asan/liblake.a
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	@$(CC) $(ASAN_CFLAGS) -Ilake/tests $(REST_TEST_SRC) $(BUILD)/asan/liblake.a $(LIBS) $(ASAN_LDFLAGS) -o $@

$(BUILD)/tools/%: tests/tools/%.c $(BUILD)/release/liblake.a
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	@$(CC) $(RELEASE_CFLAGS) $(PQ_CFLAGS) $< $(BUILD)/release/liblake.a $(LIBS) $(PQ_LIBS) -o $@

$(BUILD)/bench/%: bench/%.c $(BUILD)/release/liblake.a
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	@$(CC) $(RELEASE_CFLAGS) -O3 -march=native $< $(BUILD)/release/liblake.a $(LIBS) -o $@

# libFuzzer targets need clang; the lake sources are compiled straight in.
$(BUILD)/fuzz/%: lake/tests/fuzz/%.c $(LAKE_SRC) $(LAKE_HDR)
	@mkdir -p $(dir $@)
	@echo "  FUZZER  $@"
	@clang $(CSTD) $(INCLUDE) -O1 -g -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=undefined $< $(LAKE_SRC) $(LIBS) -o $@

install: $(TIERDB) install-extension
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(TIERDB) $(DESTDIR)$(PREFIX)/bin/tierdb

deps:
	@scripts/install-deps.sh

# The README's test command: every test, from a fresh machine.
check: deps
	@$(MAKE) --no-print-directory -j2 all $(LAKE_TEST) $(FUZZERS)
	@$(MAKE) --no-print-directory install-extension
	@$(MAKE) --no-print-directory test-c test-s3 test-rest test-fuzz test-regress test-interop test-e2e test-e2e-s3 \
		test-spark

test-c: $(LAKE_TEST)
	$(LAKE_TEST)

# The S3 client against S3Proxy on 127.0.0.1 (scripts/s3-server.sh starts and
# stops it): the C tests, then DuckDB and pyarrow reading what it wrote.
test-s3: $(S3_TEST) $(TOOLS)
	@scripts/s3-server.sh stop $(BUILD)/s3-server; rm -rf $(BUILD)/s3-server
	scripts/s3-server.sh run $(BUILD)/s3-server $(S3_TEST)
	$(PYTHON) -m pytest -q tests/s3

# The REST catalog client against Apache Iceberg's own REST catalog server on
# 127.0.0.1 (scripts/rest-catalog.sh starts and stops it), run beside S3Proxy
# so that tables can live on S3 too.
test-rest: $(REST_TEST)
	@scripts/rest-catalog.sh stop $(BUILD)/rest-catalog; rm -rf $(BUILD)/rest-catalog
	@scripts/s3-server.sh stop $(BUILD)/rest-s3; rm -rf $(BUILD)/rest-s3
	scripts/s3-server.sh run $(BUILD)/rest-s3 scripts/rest-catalog.sh run $(BUILD)/rest-catalog $(REST_TEST)

test-fuzz: $(FUZZERS)
	@scripts/run-fuzzers.sh $(FUZZ_SECONDS) $(FUZZERS)

test-interop: $(TIERDB) $(TOOLS)
	$(PYTHON) -m pytest -q tests/interop

# The extension's pg_regress suite and isolation specs (extension/test), on a
# temporary instance with the installed extension preloaded.
test-regress: install-extension
	@$(MAKE) --no-print-directory -C extension regress

# End-to-end: a private Postgres cluster with the installed extension, the
# tierdb command and a lake directory (tests/e2e/conftest.py starts them).
test-e2e: $(TIERDB) $(TOOLS)
	$(PYTHON) -m pytest -q tests/e2e

# The end-to-end modules that move, read, correct, recover and check lake
# files, again with every lake on S3 (S3Proxy, started by
# tests/e2e/conftest.py): docs/s3.md. Others whose subject is not the lake's
# storage (routing, the differential queries, privileges, EXPLAIN, types,
# coordination) pass there too, and stay out to keep `make check` short:
# `TIERDB_E2E_LAKE=s3 .venv/bin/python -m pytest tests/e2e/test_X.py`.
# test_readers_s3 goes first: the JVM's one Spark session must start with S3A.
E2E_ON_S3 := test_readers_s3 test_tiering test_fold test_recovery test_retention test_transparent_reads test_verify \
	test_transparent_updates test_keep_heap test_direct test_mirrored test_hybrid_reads test_heap_retention \
	test_rest_catalog test_maintenance test_ingest test_stream_load
test-e2e-s3: $(TIERDB) $(TOOLS)
	TIERDB_E2E_LAKE=s3 $(PYTHON) -m pytest -q $(E2E_ON_S3:%=tests/e2e/%.py)

# The long differential run (tests/e2e/test_differential.py): TIERDB_DIFF_QUERIES
# generated queries (default 30000) from TIERDB_DIFF_SEED (default 16);
# TIERDB_DIFF_FAMILIES / TIERDB_DIFF_MODES pick what runs. `make check` runs
# the same test with 2400 queries.
check-differential-long: $(TIERDB) $(TOOLS)
	TIERDB_DIFF_QUERIES=$${TIERDB_DIFF_QUERIES:-30000} $(PYTHON) -m pytest -q tests/e2e/test_differential.py

# The long maintenance run (tests/e2e/test_maintenance.py): a table put
# through TIERDB_MAINTENANCE_ROUNDS folds (default 300; make check runs 40)
# and advances before it is maintained.
check-maintenance-long: $(TIERDB) $(TOOLS)
	TIERDB_MAINTENANCE_ROUNDS=$${TIERDB_MAINTENANCE_ROUNDS:-300} $(PYTHON) -m pytest -q tests/e2e/test_maintenance.py -k pays_off

# The Spark library (connectors/spark): JUnit tests with local Spark against
# their own private cluster with the installed extension, tiered by build/tierdb.
test-spark: $(TIERDB) install-extension
	cd connectors/spark && mvn -B -q test -Dtierdb.bin=$(abspath $(TIERDB))

bench: deps $(BENCHES) $(TIERDB) install-extension
	@scripts/run-benchmarks.sh $(BENCHES)

demo:
	@scripts/demo.sh

# The same demo with the lake in a bucket of a private S3-compatible server.
demo-s3:
	@DEMO_LAKE=s3 scripts/demo.sh

# The S3 demo with the table kept in an Iceberg REST catalog (docs/rest-catalog.md).
demo-rest:
	@DEMO_LAKE=s3 DEMO_CATALOG=rest scripts/demo.sh

format:
	clang-format -i $(LAKE_SRC) $(LAKE_HDR) $(CLI_SRC) $(CLI_HDR) $(TEST_SRC) $(TOOL_SRC) $(BENCH_SRC)

clean:
	rm -rf $(BUILD)
	@$(MAKE) --no-print-directory -C extension clean
