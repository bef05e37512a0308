#!/usr/bin/env bash
# The official suite's server scenarios for header validation, against a server that checks no header itself
# (tests/gate/upstream.py), behind mcpfsm.gate in both shapes: the proxy (`mcpfsm gate --upstream URL`, Hypercorn's
# trio worker) and the middleware (HeaderGate around the same app, served by uvicorn under asyncio). Run by
# `tests/conformance/run gate` (which installs the suite first), as .ci/run does.
#
#   gate.sh PYTHON NODE SUITE_JS
#
# Every scenario of GATED must pass in both shapes. The same server without the gate is run too, and its score
# printed: it must fail (else it checks headers after all, and the gate's passes prove nothing).
set -euo pipefail
python="$1"
shift
conformance=("$@")
GATED=(http-header-validation http-custom-header-server-validation tasks-request-headers)
out=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$out"
}
trap cleanup EXIT

# Start "$@" with its stdout in $out/NAME.out; prints the URL of its READY line once it has printed one.
start() {
    local name="$1"
    shift
    "$@" >"$out/$name.out" 2>"$out/$name.err" &
    pids+=("$!")
    local pid=$! line=""
    for _ in $(seq 600); do
        line=$(head -n1 "$out/$name.out" 2>/dev/null || true)
        [[ "$line" == READY\ * ]] && { echo "${line#READY }"; return 0; }
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1 # the READY line is the readiness signal; this only paces the look for it
    done
    echo "conformance gate: $name printed no READY line; its stderr:" >&2
    cat "$out/$name.err" >&2
    return 1
}

upstream=$(start upstream "$python" -m tests.gate.upstream)
proxy=$(start proxy "$python" -m mcpfsm gate --upstream "$upstream")
middleware=$(start middleware "$python" -m tests.gate.gated --app unchecked --server uvicorn)

status=0
SECONDS=0
for scenario in "${GATED[@]}"; do
    line="conformance gate: $scenario:"
    for shape in proxy middleware upstream; do
        url=${!shape}
        result=0
        "${conformance[@]}" server --url "$url" --scenario "$scenario" >"$out/$scenario-$shape.log" 2>&1 || result=$?
        passed=$(grep -o 'Passed: [0-9]*/[0-9]*' "$out/$scenario-$shape.log" | tail -n1 || true)
        case "$shape" in
            upstream)
                line+=" without the gate ${passed#Passed: }"
                if [ "$result" -eq 0 ]; then
                    echo "conformance gate: the server without the gate passes $scenario: it checks headers itself" >&2
                    status=1
                fi
                ;;
            *)
                line+=" $shape ${passed#Passed: }"
                if [ "$result" -ne 0 ]; then
                    echo "=== conformance gate: $scenario through the $shape failed:" >&2
                    cat "$out/$scenario-$shape.log" >&2
                    status=1
                fi
                ;;
        esac
    done
    echo "$line"
done
echo "conformance gate: $([ "$status" -eq 0 ] && echo passed || echo FAILED) (${SECONDS} s)"
exit "$status"
