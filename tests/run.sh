#!/usr/bin/env bash
# Runs every test: unit and fuzz-corpus tests under ASan+UBSan (build-asan/), then the whole
# suite, unit, integration and end-to-end, on the normal build (build/). Exits non-zero if
# anything fails to build or any test fails; the output ends with ctest's summary.
#
#   ./tests/run.sh
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR/..
. "$here/../deploy/lib/common.sh"
cd "$URSA_ROOT"

ensure_packages
keep_debian_etcd_quiet

build_tree "$URSA_ROOT/build-asan" -DURSA_SANITIZE=ON
build_tree "$URSA_ROOT/build"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

status=0
say "unit tests under ASan+UBSan"
ctest --test-dir build-asan -L unit --output-on-failure -j2 || status=1

say "all tests (unit, integration, e2e)"
ctest --test-dir build --output-on-failure -j2 || status=1

exit $status
