#!/usr/bin/env bash
# What a newcomer waits for: clone this repository afresh and time the set-up and
# the make targets named, one after the other, on an idle machine.
#
#   bash benchmarks/scripts/fresh_clone.sh [setup] [test] [run] [check]
#
# (default: setup test). The clone goes to $FRESH (default /tmp/dynshape-fresh,
# replaced), from the commit checked out here. The fork servers' kept scratch
# (~/.cache/dynshape/zygote: inductor's probe builds) is removed first, so every
# warm-up starts cold as on a new machine; uv's download cache is kept (a second
# clone on one machine reuses it, as `make setup` intends). One line per target
# goes to stdout and to $FRESH.times: its exit status, seconds, and the load
# average after it (anything else running on the 2 cores shows there). Each
# target's output is in $FRESH.<target>.log; `make test`'s pytest runs write
# junit XML to $FRESH.junit-*.xml (item seconds per test). Before the first target
# and after each, a speed probe: a pure-Python loop's rate in one process and in two at
# once (M/s each), since this machine's speed drifts by tens of percent within an hour
# (docs/findings/2026-11-30-costs.md): figures from runs at different probe rates differ.
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
dest=${FRESH:-/tmp/dynshape-fresh}
rm -rf "$dest" "$dest".times "$dest".*.log "$dest".junit-*.xml ~/.cache/dynshape/zygote
git clone -q "$src" "$dest" && git -C "$dest" checkout -q "$(git -C "$src" rev-parse HEAD)" || exit 2
cd "$dest" || exit 2
probe() {
  local loop='import time
t = time.perf_counter(); n = 0
while time.perf_counter() - t < 3:
    for _ in range(10000): n += 1
print(f"{n / 3e6:.1f}")'
  local one two
  one=$(python3 -c "$loop")
  two=$( (python3 -c "$loop" & python3 -c "$loop"; wait) | tr '\n' ' ')
  echo "probe: $one M/s alone, ${two% } M/s two at once" | tee -a "$dest".times
}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(setup test)
echo "$(date -u +%FT%TZ) $(git rev-parse --short HEAD) $(nproc) cores" | tee -a "$dest".times
probe
for target in "${targets[@]}"; do
  case $target in
    setup) cmd=(make setup xla-env chromium) ;;
    test) cmd=(make test "PYTEST_FLAGS=-n 2 --durations=30 --junitxml=$dest.junit-\$\$(date +%s%N).xml") ;;
    run | check) cmd=(make "$target") ;;
    *) echo "fresh_clone.sh: unknown target '$target' (setup, test, run, check)" >&2; exit 2 ;;
  esac
  t0=$(date +%s)
  "${cmd[@]}" > "$dest.$target.log" 2>&1
  rc=$?
  echo "$target rc=$rc $(( $(date +%s) - t0 )) s (load $(cut -d' ' -f1-3 /proc/loadavg))" | tee -a "$dest".times
  probe
done
