#!/usr/bin/env bash
# Runs the timing-sensitive test binaries N times each while the machine is loaded, and prints
# each test's failures out of N. A test that fails here fails some day in CI; fix its cause
# (wait on the event, not a sleep; bounds that scale with what is measured), never its timeout.
#
#   bash scripts/stress.sh [N] [BINARY...]     # N defaults to 20; binaries default to all below
#
# Load: one CPU burner per core (`STRESS_LOAD=build` runs a parallel `cargo build` of the
# side-by-side harness in a scratch target directory instead, as a CI machine busy with another
# build is; `STRESS_LOAD=none` runs unloaded). The test binaries are built once first, with the
# features `scripts/test.sh` uses, then run directly (a throwaway PostgreSQL for all of them,
# `scripts/postgres.sh run`). Logs of failing runs are kept in target/stress/.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${1:-20}
shift || true
binaries=("$@")
if [ ${#binaries[@]} -eq 0 ]; then
  binaries=(sync_replicas sync_faults sync_network sync_gateway gateway gateway_oauth gateway_page mcp_live hostile events_order exec_concurrency)
fi

bash scripts/test-deps.sh
echo "stress: building the test binaries" >&2
declare -A path
while IFS=$'\t' read -r name exe; do
  path[$name]=$exe
done < <(cargo test --release --features models --no-run --message-format=json 2>/dev/null |
  python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"]:
        print(m["target"]["name"], m["executable"], sep="\t")
')
for b in "${binaries[@]}"; do
  [ -n "${path[$b]:-}" ] || { echo "stress: no test binary named $b" >&2; exit 2; }
done

out=target/stress
rm -rf "$out" && mkdir -p "$out"
load_pids=()
stop_load() {
  for pid in "${load_pids[@]}"; do kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true; done
}
trap stop_load EXIT
case "${STRESS_LOAD:-cpu}" in
  cpu)
    for _ in $(seq "$(nproc)"); do
      setsid bash -c 'while :; do :; done' &
      load_pids+=($!)
    done
    load="$(nproc) CPU burners" ;;
  build)
    setsid bash -c 'while :; do rm -rf target/stress/build; cargo build -q -p capstore-peers --target-dir target/stress/build >/dev/null 2>&1; done' &
    load_pids+=($!)
    load="a parallel cargo build" ;;
  none) load="no load" ;;
  *) echo "stress: STRESS_LOAD is cpu, build or none" >&2; exit 2 ;;
esac
echo "stress: $runs runs of ${#binaries[@]} binaries under $load" >&2

export RUNS=$runs OUT=$out
# The test binaries' working directory is the crate root, as under `cargo test`.
bash scripts/postgres.sh run bash -c '
  set -u
  for b in "$@"; do
    exe=${b#*=}; b=${b%%=*}
    start=$(date +%s)
    for i in $(seq "$RUNS"); do
      log="$OUT/$b.$i.log"
      # A hung binary counts as a failure (ten minutes: the slowest binary takes about one).
      if timeout 600 "$exe" --test-threads=2 >"$log" 2>&1; then code=0; else code=$?; fi
      sed -n "s/^test \(.*\) \.\.\. ok$/\1/p" "$log" >>"$OUT/$b.ok"
      sed -n "s/^test \(.*\) \.\.\. FAILED$/\1/p" "$log" >"$OUT/$b.$i.failed"
      if [ "$code" -ne 0 ] && [ ! -s "$OUT/$b.$i.failed" ]; then
        echo "(the binary exited $code with no test failed: a hang or a crash)" >"$OUT/$b.$i.failed"
      fi
      cat "$OUT/$b.$i.failed" >>"$OUT/$b.failed"
      if [ -s "$OUT/$b.$i.failed" ]; then echo "stress: $b run $i failed: $log" >&2; else rm -f "$log"; fi
      rm -f "$OUT/$b.$i.failed"
    done
    echo "stress: $b: $RUNS runs in $(( $(date +%s) - start )) s" >&2
  done
' stress $(for b in "${binaries[@]}"; do printf '%s=%s ' "$b" "${path[$b]}"; done)

stop_load
printf '\n%-16s %-96s %s\n' binary test "failed/runs"
total=0
for b in "${binaries[@]}"; do
  if [ -s "$out/$b.failed" ]; then
    sort "$out/$b.failed" | uniq -c | while read -r n t; do
      printf '%-16s %-96s %s/%s\n' "$b" "$t" "$n" "$runs"
    done
    total=$((total + $(wc -l <"$out/$b.failed")))
  else
    printf '%-16s %-96s 0/%s\n' "$b" "(all $(sort -u "$out/$b.ok" 2>/dev/null | wc -l) tests)" "$runs"
  fi
done
echo
echo "stress: $total failures in all; logs of failing runs in $out/"
[ "$total" -eq 0 ]
