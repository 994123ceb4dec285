#!/usr/bin/env bash
# Runs every test: unit and fuzz-corpus tests under ASan+UBSan (build-asan/), then the whole
# suite, unit, integration and end-to-end, on the normal build (build/). Exits non-zero if
# anything fails to build or any test fails; the output ends with ctest's summary.
#
#   ./tests/run.sh
#
# URSA_BUILD_DIR and URSA_ASAN_BUILD_DIR (relative to the repository root) change the two build
# directories, default build/ and build-asan/.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR/..
. "$here/../deploy/lib/common.sh"
cd "$URSA_ROOT"

ensure_packages
keep_debian_etcd_quiet

asan_dir=${URSA_ASAN_BUILD_DIR:-build-asan}
build_tree "$asan_dir" -DURSA_SANITIZE=ON
build_tree "$URSA_BUILD_DIR"

export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

status=0
say "unit tests under ASan+UBSan"
ctest --test-dir "$asan_dir" -L unit --output-on-failure -j2 || status=1

say "all tests (unit, integration, e2e)"
ctest --test-dir "$URSA_BUILD_DIR" --output-on-failure -j2 || status=1

exit $status
