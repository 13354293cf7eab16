#!/usr/bin/env bash
# Set everything up for the tests (see scripts/setup.sh --test) and run the whole suite.
# Extra arguments go to pytest (e.g. -k engine, -x).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$here/scripts/setup.sh" --test
cd "$here"
set +e
"$here/.venv/bin/python" -m pytest -q -p no:cacheprovider -o console_output_style=count tests "$@"
rc=$?
set -e
if [ $rc -eq 5 ]; then
    echo "test.sh: pytest collected no tests" >&2
    exit 1
fi
exit $rc
