#!/usr/bin/env bash
# Map overhead: N trivial items ("true") at max_parallel P, runner (with
# its job state, event log and DLQ, as always) against xargs -P, in
# alternating runs; prints each median wall time and the ratio.
# Usage: scripts/bench-map.sh [N] [P] [ROUNDS]
set -euo pipefail
N=${1:-2000}
P=${2:-2}
ROUNDS=${3:-5}
cd "$(dirname "$0")/.."
go build -o bin/runner .
runner=$PWD/bin/runner
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
seq 1 "$N" > "$work/items.txt"
cat > "$work/bench.yml" <<YAML
name: bench
mode: mapreduce
map:
  input: items.txt
  max_parallel: $P
  agent_template:
    - shell: "true"
YAML

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

: > "$work/xargs.times"
: > "$work/runner.times"
for r in $(seq 1 "$ROUNDS"); do
	t0=$(now)
	xargs -P "$P" -I{} sh -c true < "$work/items.txt"
	t1=$(now)
	(cd "$work" && "$runner" run -q --state-dir "state-$r" bench.yml 2>/dev/null)
	t2=$(now)
	awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}' >> "$work/xargs.times"
	awk -v a="$t1" -v b="$t2" 'BEGIN {print b - a}' >> "$work/runner.times"
done
x=$(median < "$work/xargs.times")
m=$(median < "$work/runner.times")
printf 'map overhead: %d items of "true", max_parallel %d, median of %d alternating runs\n' "$N" "$P" "$ROUNDS"
printf '  xargs -P%d -I{} sh -c true   %8.3f s\n' "$P" "$x"
printf '  runner run                   %8.3f s\n' "$m"
awk -v m="$m" -v x="$x" 'BEGIN {printf "  ratio runner/xargs           %8.3f\n", m / x}'
