#!/usr/bin/env bash
# The whole suite, ROUNDS times in a row (default 3), with two CPU hogs running beside it all the
# while: the suite must stay green when the machine is busy (issue 28). Extra arguments go to
# scripts/test.sh (and on to pytest). Prints each round's time and result; exits non-zero if any
# round failed.
#
#   bash scripts/test-under-load.sh            # three rounds
#   ROUNDS=1 bash scripts/test-under-load.sh -k engine
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rounds=${ROUNDS:-3}
hogs=()
stop_hogs() { for p in "${hogs[@]}"; do kill "$p" 2>/dev/null; done; wait "${hogs[@]}" 2>/dev/null; }
trap stop_hogs EXIT
for _ in 1 2; do
    yes >/dev/null &
    hogs+=($!)
done
echo "test-under-load: two CPU hogs running (${hogs[*]}); $rounds rounds" >&2
failed=0
summary=()
for r in $(seq 1 "$rounds"); do
    start=$SECONDS
    bash "$here/scripts/test.sh" "$@" </dev/null
    rc=$?
    summary+=("round $r: exit $rc in $((SECONDS - start)) s")
    [ $rc -ne 0 ] && failed=1
done
printf 'test-under-load: %s\n' "${summary[@]}" >&2
exit $failed
