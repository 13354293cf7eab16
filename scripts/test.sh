#!/usr/bin/env bash
# Set everything up for the tests (see scripts/setup.sh --test) and run the whole suite.
# Extra arguments go to pytest (e.g. -k engine, -x; -n 1 runs the tests one at a time).
#
# The tests run in parallel workers (pytest-xdist): most of a test's time is spent waiting on gdb
# and the programs it debugs, so there are more workers than cores (TUIDBG_TEST_WORKERS, default
# twice the cores, at most 6). Each worker, and each test, has its own temporary folder
# (tests/conftest.py). At the end pytest prints where the time went (tests/timing_report.py).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
setup_start=$SECONDS
bash "$here/scripts/setup.sh" --test
echo "test.sh: set-up took $((SECONDS - setup_start)) s" >&2
cd "$here"
cores=$(nproc 2>/dev/null || echo 2)
workers=${TUIDBG_TEST_WORKERS:-$((cores * 2 > 6 ? 6 : cores * 2))}
set +e
suite_start=$SECONDS
"$here/.venv/bin/python" -m pytest -q -p no:cacheprovider -o console_output_style=count \
    -n "$workers" --dist worksteal tests "$@"
rc=$?
set -e
echo "test.sh: the suite took $((SECONDS - suite_start)) s with $workers workers on $cores cores" >&2
if [ $rc -eq 5 ]; then
    echo "test.sh: pytest collected no tests" >&2
    exit 1
fi
exit $rc
