#!/usr/bin/env bash
# runner's speed, scale and memory against real peers, on this machine:
#   start-up       `runner version` and a 1-step `runner run` vs a Go hello world
#   map overhead   N trivial items at max_parallel P: runner vs xargs -P and GNU parallel;
#                  then 2,000 items of an external command (cat /dev/null), which
#                  runner runs without a shell, vs xargs -P N sh -c
#   chain overhead a K-step workflow vs a shell script running the same K commands
#   retries        10,000 items, 10% failing twice before they succeed, zero delay
#   dlqretry       `dlq retry` of 1,000 DLQ items against the run that failed them
#   dlqcost        20,000 items failing into the DLQ against 20,000 succeeding
#   scale          100,000 items: wall time, peak RSS, state-dir bytes, query latency
#                  (runner events lists the job's ~600,000 events), and the time and
#                  peak RSS of runner report; then issue 37's targets at 1,000,000
#                  items: peak RSS of a map whose items are all skipped by `when`,
#                  time per item of `true` items at max_parallel 8 against 10,000
#                  of them, and the time a resume of a job killed half way takes
#                  to start its first new item
#   listing        `runner jobs` and `runner dlq list` of 100 jobs, one with 100,000 DLQ items,
#                  and `runner dlq list` of that job (text and --json)
#   streaming      a 1,000,000-item input: peak RSS while it loads
#   logs           `runner logs` of one item's 100 MB log, against cat of the file
#   isolation      per-item cost of map.isolation: worktree on a repository of
#                  1,000 files, against a shell loop of git worktree add + remove
#   nats           items on NATS workers (SPEC §11.10): server, coordinator and
#                  workers as processes on this machine, against local mode
#                  (NATS_BATCH=N: the NATS runs with --nats-batch N);
#                  worktree items committing a file each, in two workers'
#                  clones, against local worktree isolation
# Alternating runs, medians. QUICK=1 runs a small version (about a
# minute or two); SECTIONS="chain scale" runs only those sections.
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o bin/runner .
if [[ " ${SECTIONS:-nats} " == *" nats "* ]]; then go build -o bin/nats-server github.com/nats-io/nats-server/v2; fi
repo=$PWD
runner=$PWD/bin/runner
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait; rm -rf "$work"' EXIT
cd "$work"

rounds=${ROUNDS:-5}
sections=${SECTIONS:-"startup map chain retries dlqretry dlqcost scale listing streaming logs isolation nats"}
section() { [[ " $sections " == *" $1 "* ]]; }
map_sizes=${MAP_SIZES:-"2000 10000"}
map_parallel=${MAP_PARALLEL:-"2 16"}
ext_items=${EXT_ITEMS:-2000}
ext_parallel=${EXT_PARALLEL:-"2 8"}
chain_steps=${CHAIN_STEPS:-"10 100 500"}
chain_direct=${CHAIN_DIRECT:-"10 200"}
startup_runs=${STARTUP_RUNS:-200}
retry_items=${RETRY_ITEMS:-10000}
dlq_items=${DLQ_ITEMS:-1000}
dlqcost_items=${DLQCOST_ITEMS:-20000}
scale_items=${SCALE_ITEMS:-100000}
listing_items=${LISTING_ITEMS:-100000}
listing_jobs=${LISTING_JOBS:-100}
scale_big=${SCALE_BIG:-1000000}
true_big=${TRUE_BIG:-1000000}
true_small=${TRUE_SMALL:-10000}
stream_items=${STREAM_ITEMS:-1000000}
log_lines=${LOG_LINES:-12000000}
iso_items=${ISO_ITEMS:-40}
nats_noop=${NATS_NOOP:-10000}
nats_true=${NATS_TRUE:-2000}
nats_sleep=${NATS_SLEEP:-1500}
nats_git=${NATS_GIT:-40}
nats_batch=${NATS_BATCH:-1} # --nats-batch of the NATS runs
if [ "${QUICK:-}" = 1 ]; then
	rounds=2 map_sizes=300 map_parallel=2 ext_items=300 chain_steps="10 50" startup_runs=20 retry_items=500 dlq_items=300 dlqcost_items=2000 scale_items=2000 scale_big=20000 true_big=20000 true_small=2000 listing_items=2000 listing_jobs=10 stream_items=20000 log_lines=1000000 iso_items=10
	nats_noop=1000 nats_true=300 nats_sleep=240 nats_git=12
fi

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN {printf "%.3f\n", b - a}'; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
# peak_rss CMD... runs CMD and prints its peak resident set in MB.
peak_rss() { /usr/bin/time -f %M -o rss.txt "$@" >/dev/null 2>&1 || true; tail -1 rss.txt | awk '{printf "%.0f", $1 / 1024}'; }
# thousand_files DIR [git init options]: a git repository of 1,000 files
# in 10 directories, committed once.
thousand_files() {
	git init -q "${@:2}" "$1"
	(
		cd "$1"
		for d in $(seq 1 10); do
			mkdir "dir$d"
			for f in $(seq 1 100); do echo "file $f of dir $d" > "dir$d/file$f.txt"; done
		done
		git add -A
		git -c user.name=bench -c user.email=bench@example.com commit -qm "1,000 files"
	)
}

if ! command -v parallel >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq parallel >/dev/null 2>&1 || true
fi
have_parallel=$(command -v parallel >/dev/null 2>&1 && echo 1 || echo 0)

echo "runner benchmarks, $(date -u +%Y-%m-%d), $(nproc) cores, $(go version | awk '{print $3}')"
if section startup; then
echo
echo "## start-up (median of $startup_runs alternating runs; minor page faults of one run)"
mkdir -p hello
printf 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("hello") }\n' > hello/main.go
printf 'module hello\n' > hello/go.mod
(cd hello && go build -o ../hello-world .)
printf 'name: one\ncommands:\n  - shell: cat /dev/null\n' > one.yml
: > t.hello; : > t.version; : > t.run
# ms CMD...: runs CMD and prints its wall time in milliseconds.
ms() { local t0; t0=$(date +%s%N); "$@" >/dev/null 2>&1 || true; awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN {printf "%.3f\n", (b - a) / 1e6}'; }
for r in $(seq 1 "$startup_runs"); do
	ms ./hello-world >> t.hello
	ms "$runner" version >> t.version
	ms "$runner" run -q --progress never --state-dir "u-$r" one.yml >> t.run
	rm -rf "u-$r"
done
# faults CMD...: the minor page faults of one run of CMD.
faults() { /usr/bin/time -f %R -o faults.txt "$@" >/dev/null 2>&1 || true; tail -1 faults.txt; }

h=$(median < t.hello) v=$(median < t.version) o=$(median < t.run)
printf '%-24s %9s %8s %8s %7s\n' what ms ratio target faults
printf '%-24s %9.2f %8s %8s %7s\n' "Go hello world" "$h" - - "$(faults ./hello-world)"
printf '%-24s %9.2f %8s %8s %7s\n' "runner version" "$v" "$(ratio "$v" "$h")" "<= 2" "$(faults "$runner" version)"
printf '%-24s %9.2f %8s %8s %7s\n' "runner run, 1 step" "$o" "$(ratio "$o" "$h")" "<= 3" "$(faults "$runner" run -q --progress never --state-dir u-f one.yml)"
rm -rf u-f
fi

if section map; then
echo
echo "## map overhead (items run 'true'; median of $rounds alternating runs)"
[ "$have_parallel" = 1 ] || echo "(GNU parallel is not installed: its column is skipped)"
[ "$have_parallel" = 1 ] && echo "(GNU parallel costs ~40 ms per job here: it runs in 2 of the rounds up to 2,000 items, 1 above)"
printf '%-8s %-4s %10s %10s %10s %14s %14s\n' items P runner xargs parallel runner/xargs runner/parallel
for n in $map_sizes; do
	seq 1 "$n" > items.txt
	for p in $map_parallel; do
		printf 'name: bench\nmode: mapreduce\nmap:\n  input: items.txt\n  max_parallel: %d\n  agent_template:\n    - shell: "true"\n' "$p" > map.yml
		: > t.runner; : > t.xargs; : > t.parallel
		for r in $(seq 1 "$rounds"); do
			t0=$(now); xargs -P "$p" -I{} sh -c true < items.txt; since "$t0" >> t.xargs
			t0=$(now); "$runner" run -q --progress never --state-dir "s-$n-$p-$r" map.yml >/dev/null 2>&1; since "$t0" >> t.runner
			if [ "$have_parallel" = 1 ] && { [ "$r" -le 1 ] || { [ "$r" -le 2 ] && [ "$n" -le 2000 ]; }; }; then
				t0=$(now); parallel -j "$p" sh -c true :::: items.txt; since "$t0" >> t.parallel
			fi
			rm -rf "s-$n-$p-$r"
		done
		m=$(median < t.runner); x=$(median < t.xargs)
		if [ "$have_parallel" = 1 ]; then g=$(median < t.parallel); gr=$(ratio "$m" "$g"); else g=-; gr=-; fi
		printf '%-8s %-4s %9ss %9ss %9ss %14s %14s\n' "$n" "$p" "$m" "$x" "$g" "$(ratio "$m" "$x")" "$gr"
	done
done

echo
echo "## map of an external command (items run 'cat /dev/null': runner without a shell;"
echo "## 'runner sh' runs 'cat /dev/null;', which needs one, as every command did before)"
printf '%-8s %-4s %10s %10s %10s %12s %14s\n' items P runner "runner sh" xargs runner/xargs "runner sh/xargs"
seq 1 "$ext_items" > items.txt
for p in $ext_parallel; do
	for form in direct sh; do
		command='cat /dev/null'
		[ "$form" = sh ] && command='cat /dev/null;'
		printf 'name: bench\nmode: mapreduce\nmap:\n  input: items.txt\n  max_parallel: %d\n  agent_template:\n    - shell: "%s"\n' "$p" "$command" > "ext-$form.yml"
	done
	: > t.runner; : > t.sh; : > t.xargs
	for r in $(seq 1 "$rounds"); do
		t0=$(now); xargs -P "$p" -I{} sh -c 'cat /dev/null' < items.txt; since "$t0" >> t.xargs
		t0=$(now); "$runner" run -q --progress never --state-dir "e-$p-$r" ext-direct.yml >/dev/null 2>&1; since "$t0" >> t.runner
		t0=$(now); "$runner" run -q --progress never --state-dir "e-sh-$p-$r" ext-sh.yml >/dev/null 2>&1; since "$t0" >> t.sh
		rm -rf "e-$p-$r" "e-sh-$p-$r"
	done
	m=$(median < t.runner); ms=$(median < t.sh); x=$(median < t.xargs)
	printf '%-8s %-4s %9ss %9ss %9ss %12s %14s\n' "$ext_items" "$p" "$m" "$ms" "$x" "$(ratio "$m" "$x")" "$(ratio "$ms" "$x")"
done

fi

if section chain; then
echo
echo "## chain overhead (each step 'true' under sh -c, as runner runs steps)"
printf '%-6s %10s %10s %8s %16s %16s\n' steps runner script ratio runner/step script/step
: > chain.sum
# chain CMD K [LINE]: a K-step workflow running CMD and a K-line script of
# LINE (default: CMD under sh -c), timed alternately; sets m (runner) and
# s (script), medians.
chain() {
	{ echo "name: chain"; echo "commands:"; for i in $(seq 1 "$2"); do echo "  - shell: '$1'"; done; } > chain.yml
	for i in $(seq 1 "$2"); do echo "${3:-sh -c '$1'}"; done > chain.sh
	: > t.runner; : > t.script
	for r in $(seq 1 "$rounds"); do
		t0=$(now); sh chain.sh; since "$t0" >> t.script
		t0=$(now); "$runner" run -q --progress never --state-dir "c-$r" chain.yml >/dev/null 2>&1; since "$t0" >> t.runner
		rm -rf "c-$r"
	done
	m=$(median < t.runner); s=$(median < t.script)
}
for k in $chain_steps; do
	chain true "$k"
	echo "$k $m $s" >> chain.sum
	printf '%-6s %9ss %9ss %8s %14sms %14sms\n' "$k" "$m" "$s" "$(ratio "$m" "$s")" \
		"$(awk -v t="$m" -v k="$k" 'BEGIN {printf "%.2f", 1000 * t / k}')" "$(awk -v t="$s" -v k="$k" 'BEGIN {printf "%.2f", 1000 * t / k}')"
done
# Each further step, between consecutive chain lengths: the start-up
# (process, job files, the fsyncs at the end) cancels out, so equal numbers
# mean no growth with job size.
awk 'NR > 1 {rm = 1000 * ($2 - m) / ($1 - k); sm = 1000 * ($3 - s)  / ($1 - k)
	printf "each step from %d to %d: runner %.2f ms, script %.2f ms, ratio %.2f\n", k, $1, rm, sm, rm / sm}
	{k = $1; m = $2; s = $3}' chain.sum
# Where a step's time goes: the least a Go program can do to run sh -c true
# (ForkExec + wait4), runner's process layer, and a whole step, each against
# the script of the longest chain above (medians of $rounds go test -bench runs).
per_sh=$(awk -v t="$s" -v k="$k" 'BEGIN {printf "%.3f", 1000 * t / k}')
(cd "$repo" && go test -run '^$' -bench 'ForkExecFloor|RunTrue$|RunStep$' -count "$rounds" ./internal/proc ./internal/executor) > gobench.txt
per_process=""
for b in ForkExecFloor RunTrue RunStep; do
	ms=$(awk -v n="Benchmark$b-" 'index($1, n) == 1 {print $3 / 1e6}' gobench.txt | median)
	per_process+=$(printf ' | %s %.3f ms (%sx)' "$b" "$ms" "$(ratio "$ms" "$per_sh")")
done
echo "per process: sh -c true from a script $per_sh ms$per_process"

# Steps of an external command, against a script that runs it directly
# (sh forks and execs cat, no second shell): the issue's targets.
echo
echo "chains of an external command (cat /dev/null) against a script running it directly:"
printf '%-6s %10s %10s %8s %8s\n' steps runner script ratio target
for k in $chain_direct; do
	chain 'cat /dev/null' "$k" 'cat /dev/null'
	printf '%-6s %9ss %9ss %8s %8s\n' "$k" "$m" "$s" "$(ratio "$m" "$s")" "$([ "$k" -le 10 ] && echo '<= 1.5' || echo '<= 1.05')"
done

# The same with steps that do some work: gzip of 1 MB, as a real step would.
head -c 1000000 "$runner" > work.bin
chain 'gzip -c work.bin > /dev/null' 100
printf '%-6s %9ss %9ss %8s   (steps gzip 1 MB each)\n' 100 "$m" "$s" "$(ratio "$m" "$s")"
fi

if section retries; then
echo
attempts=$((retry_items + retry_items / 10 * 2))
echo "## retries ($retry_items items, 10% failing twice before they succeed, zero delay, max_parallel 2)"
echo "(every attempt is one sh process using builtins only; compared with $attempts plain items, the same number of processes)"
seq 1 "$retry_items" > items.txt
seq 1 "$attempts" > plain-items.txt
cat > retry.yml <<'YAML'
name: retries
mode: mapreduce
map:
  input: items.txt
  max_parallel: 2
  agent_template:
    - shell: |
        [ $(( ${item} % 10 )) -ne 0 ] && exit 0
        [ -e "tries/${item}.2" ] && exit 0
        [ -e "tries/${item}.1" ] && { : > "tries/${item}.2"; exit 1; }
        : > "tries/${item}.1"; exit 1
      retry_config: {attempts: 3, initial_delay: 0s}
YAML
printf 'name: plain\nmode: mapreduce\nmap:\n  input: plain-items.txt\n  max_parallel: 2\n  agent_template:\n    - shell: "true"\n' > plain.yml
: > t.retry; : > t.plain
for r in $(seq 1 "$rounds"); do
	rm -rf tries; mkdir tries
	t0=$(now); "$runner" run -q --progress never --state-dir "r-$r" retry.yml >/dev/null 2>&1; since "$t0" >> t.retry
	t0=$(now); "$runner" run -q --progress never --state-dir "p-$r" plain.yml >/dev/null 2>&1; since "$t0" >> t.plain
	rm -rf "r-$r" "p-$r"
done
m=$(median < t.retry); p=$(median < t.plain)
echo "  $retry_items items with retries ($attempts attempts)  ${m}s"
echo "  $attempts plain items                        ${p}s"
echo "  ratio                                    $(ratio "$m" "$p")"

fi

if section dlqretry; then
echo
echo "## dlq retry ($dlq_items items of '[ -e ok ]' at max_parallel 2; median of $rounds runs)"
echo "(run: the items fail into the DLQ; retry: they succeed and leave it; again: they fail once more)"
seq 1 "$dlq_items" > dlq-items.txt
printf 'name: dlqretry\nmode: mapreduce\nmap:\n  input: dlq-items.txt\n  max_parallel: 2\n  agent_template:\n    - shell: "[ -e ok ]"\n' > dlqretry.yml
: > t.run; : > t.retry; : > t.again
for r in $(seq 1 "$rounds"); do
	rm -f ok
	t0=$(now); "$runner" run -q --progress never --state-dir "d-$r" --job-id j dlqretry.yml >/dev/null 2>&1 || true; since "$t0" >> t.run
	t0=$(now); "$runner" --state-dir "d-$r" dlq retry -q --progress never j >/dev/null 2>&1 || true; since "$t0" >> t.again
	touch ok
	t0=$(now); "$runner" --state-dir "d-$r" dlq retry -q --progress never j >/dev/null 2>&1; since "$t0" >> t.retry
	rm -rf "d-$r"
done
m=$(median < t.run); y=$(median < t.retry); a=$(median < t.again)
echo "  run, $dlq_items items failing into the DLQ   ${m}s"
echo "  dlq retry, all fail again             ${a}s ($(ratio "$a" "$m"))"
echo "  dlq retry, all succeed                ${y}s ($(ratio "$y" "$m"); target: at most 1.5)"
fi

if section dlqcost; then
echo
echo "## dlqcost ($dlqcost_items items of 'false' against 'true', max_parallel 8; interleaved, median of $rounds runs)"
seq 1 "$dlqcost_items" > dlqcost-items.txt
for c in true false; do
	printf 'name: dlqcost\nmode: mapreduce\nmap:\n  input: dlqcost-items.txt\n  max_parallel: 8\n  agent_template:\n    - shell: "%s"\n' "$c" > "dlqcost-$c.yml"
	: > "w.$c"; : > "c.$c"
done
for r in $(seq 1 "$rounds"); do
	for c in true false; do
		/usr/bin/time -f '%e %U %S' -o time.txt "$runner" run -q --progress never --state-dir "dc-$r-$c" --job-id j "dlqcost-$c.yml" >/dev/null 2>&1 || true
		tail -1 time.txt | awk '{print $1}' >> "w.$c"
		tail -1 time.txt | awk '{print $2 + $3}' >> "c.$c"
		rm -rf "dc-$r-$c"
	done
done
wt=$(median < w.true); wf=$(median < w.false); ct=$(median < c.true); cf=$(median < c.false)
echo "  succeeding: wall ${wt}s, CPU ${ct}s"
echo "  failing into the DLQ: wall ${wf}s ($(ratio "$wf" "$wt")), CPU ${cf}s ($(ratio "$cf" "$ct")); target: at most 1.2 each"
fi

if section scale; then
echo
echo "## scale ($scale_items items of 'true', max_parallel 16)"
seq 1 "$scale_items" > items.txt
printf 'name: scale\nmode: mapreduce\nmap:\n  input: items.txt\n  max_parallel: 16\n  agent_template:\n    - shell: "true"\n' > scale.yml
t0=$(now)
rss=$(peak_rss "$runner" run -q --progress never --state-dir scale --job-id big scale.yml)
echo "  wall $(since "$t0")s, peak RSS ${rss} MB, state dir $(du -sb scale | awk '{printf "%.1f", $1 / 1048576}') MB"
echo "  event log: $(wc -l < scale/jobs/big/events.jsonl) events, $(du -b scale/jobs/big/events.jsonl | awk '{printf "%.0f", $1 / 1048576}') MB"
for q in "jobs" "events big" "events --json big" "events --type job_completed big" "events --item 50000 big" "dlq list big" "dlq list"; do
	: > t.q
	for r in 1 2 3; do t0=$(now); $runner --state-dir scale $q >/dev/null 2>&1 || true; since "$t0" >> t.q; done
	printf '  %-36s %6ss\n' "runner $q" "$(median < t.q)"
done
# The job's page: its event log read line by line, in memory that does
# not grow with the items (issue 27.4's target: <= 60 MB at 100,000).
t0=$(now)
rss=$(peak_rss "$runner" --state-dir scale report big -o report.html)
echo "  runner report: $(since "$t0")s, peak RSS ${rss} MB, page $(du -k report.html | awk '{print $1}') KB"
rm -rf scale

echo
echo "## scale: $scale_big items (issue 37)"
# skipped N: a map of N items whose one step is skipped by when.
skipped() { printf 'name: skipped\nmode: mapreduce\nmap:\n  input: seq 1 %d\n  max_parallel: 8\n  agent_template:\n    - shell: "true"\n      when: "false"\n' "$1"; }
skipped "$scale_big" > skipped.yml
t0=$(now)
rss=$(peak_rss "$runner" run -q --progress never --state-dir big-skip --job-id s skipped.yml)
echo "  $scale_big skipped items: wall $(since "$t0")s, peak RSS ${rss} MB (target <= 40 MB)"
rm -rf big-skip
# Time per item of 'true' items at max_parallel 8: the small job's median
# of 3 runs, the large one once.
for n in "$true_small" "$true_big"; do
	printf 'name: trues\nmode: mapreduce\nmap:\n  input: seq 1 %d\n  max_parallel: 8\n  agent_template:\n    - shell: "true"\n' "$n" > "true-$n.yml"
done
: > t.small
for r in 1 2 3; do t0=$(now); "$runner" run -q --progress never --state-dir "ts-$r" "true-$true_small.yml" >/dev/null 2>&1; since "$t0" >> t.small; rm -rf "ts-$r"; done
small=$(median < t.small)
t0=$(now)
rss=$(peak_rss "$runner" run -q --progress never --state-dir tb "true-$true_big.yml")
big=$(since "$t0")
rm -rf tb
per_small=$(awk -v t="$small" -v n="$true_small" 'BEGIN {printf "%.1f", t / n * 1e6}')
per_big=$(awk -v t="$big" -v n="$true_big" 'BEGIN {printf "%.1f", t / n * 1e6}')
echo "  'true' items at max_parallel 8: $true_small in ${small}s (${per_small} us/item), $true_big in ${big}s (${per_big} us/item, peak RSS ${rss} MB): $(ratio "$per_big" "$per_small")x per item (target within 15%)"
# A job of skipped items killed -9 once half its items are done, then
# resumed: the time from the resume's start to its first item_started.
"$runner" run -q --progress never --state-dir rs --job-id r skipped.yml >/dev/null 2>&1 &
job=$!
pids+=("$job")
half=$((scale_big / 2))
succeeded() { sed -n 's/.*"succeeded": *\([0-9]*\).*/\1/p' rs/jobs/r/job.json 2>/dev/null | head -1 || true; }
while kill -0 "$job" 2>/dev/null; do
	n=$(succeeded)
	[ -n "$n" ] && [ "$n" -ge "$half" ] && break
	sleep 0.1
done
kill -KILL "$job" 2>/dev/null || true
wait "$job" 2>/dev/null || true
done_at_kill=$(grep -c '"s":"succeeded"' rs/jobs/r/items-state.jsonl || true)
if [ "$done_at_kill" -ge "$scale_big" ]; then
	echo "  resume: the job ended before it could be killed half way (too few items: SCALE_BIG)"
else
	t0=$(now)
	rss=$(peak_rss "$runner" resume -q --progress never --state-dir rs r)
	first=$(awk '/"type":"job_resumed"/ {seen = 1; next} seen && /"type":"item_started"/ {print; exit}' rs/jobs/r/events.jsonl | sed 's/.*"time":"\([^"]*\)".*/\1/')
	first_s=$(awk -v a="$t0" -v b="$(date -d "$first" +%s.%N)" 'BEGIN {printf "%.2f", b - a}')
	echo "  resume of a $scale_big-item job killed with $done_at_kill items done: first new item after ${first_s}s (target <= 2 s), resume's peak RSS ${rss} MB"
fi
rm -rf rs

fi

if section listing; then
echo
echo "## listing ($listing_jobs jobs, one of them with $listing_items items in its DLQ; median of 3)"
seq 1 "$listing_items" > listing-items.txt
printf 'name: listing\nmode: mapreduce\nmap:\n  input: listing-items.txt\n  max_parallel: 8\n  agent_template:\n    - shell: "false"\n' > listing.yml
printf 'name: small\nmode: mapreduce\nmap:\n  input: small-items.txt\n  agent_template:\n    - shell: "[ $(( ${item} %% 2 )) = 0 ]"\n' > small.yml
seq 1 10 > small-items.txt
t0=$(now); "$runner" run -q --progress never --state-dir listing --job-id big listing.yml >/dev/null 2>&1 || true
echo "  run of the big job: $(since "$t0")s"
for i in $(seq 2 "$listing_jobs"); do "$runner" run -q --progress never --state-dir listing --job-id "small-$i" small.yml >/dev/null 2>&1 || true; done
for q in "jobs" "dlq list" "dlq list big" "dlq list big --json"; do
	: > t.q
	for r in 1 2 3; do t0=$(now); $runner --state-dir listing $q >/dev/null 2>&1 || true; since "$t0" >> t.q; done
	printf '  %-20s %6ss, peak RSS %s MB\n' "runner $q" "$(median < t.q)" "$(peak_rss "$runner" --state-dir listing $q)"
done
fi

if section streaming; then
echo
echo "## streaming ($stream_items JSON Lines items loaded; the job then stops at its first item)"
awk -v n="$stream_items" 'BEGIN {for (i = 0; i < n; i++) printf "{\"id\": \"item-%d\", \"path\": \"/data/images/photo-%07d.jpg\", \"size\": %d}\n", i, i, i * 7}' > big.jsonl
echo "  input $(du -b big.jsonl | awk '{printf "%.0f", $1 / 1048576}') MB"
for ids in default custom; do
	extra=""
	[ "$ids" = custom ] && extra='  item_id: ${item.id}'
	printf 'name: stream\nmode: mapreduce\nmap:\n  input: big.jsonl\n%s\n  agent_template:\n    - shell: "false"\non_item_failure: stop\n' "$extra" > stream.yml
	t0=$(now)
	rss=$(peak_rss "$runner" run -q --progress never --state-dir "st-$ids" stream.yml)
	echo "  $ids item ids: loaded in $(since "$t0")s, peak RSS ${rss} MB"
	rm -rf "st-$ids"
done
fi

if section logs; then
echo
printf 'name: biglog\nmode: mapreduce\nmap:\n  input: "echo a"\n  agent_template:\n    - shell: seq 1 %d\n' "$log_lines" > biglog.yml
"$runner" run -q --progress never --state-dir st-logs --job-id biglog biglog.yml >/dev/null 2>&1
log=st-logs/jobs/biglog/logs/items/a.log
echo "## logs (runner logs of a $(du -b "$log" | awk '{printf "%.0f", $1 / 1048576}') MB item log through a pipe, against cat)"
rl=() cl=()
for _ in $(seq "$rounds"); do
	t0=$(now); "$runner" --state-dir st-logs logs biglog a | cat >/dev/null; rl+=("$(since "$t0")")
	t0=$(now); cat "$log" | cat >/dev/null; cl+=("$(since "$t0")")
done
r=$(printf '%s\n' "${rl[@]}" | median) c=$(printf '%s\n' "${cl[@]}" | median)
echo "  runner logs ${r}s, cat ${c}s: $(ratio "$r" "$c")x cat"
rm -rf st-logs
fi

if section isolation; then
echo
echo "## isolation ($iso_items items of 'true' at max_parallel 1 on a repository of 1,000 files; median of $rounds alternating runs)"
echo "(runner: worktree minus none, per item; loop: git worktree add -b + git worktree remove --force, per item)"
thousand_files iso
seq 1 "$iso_items" > iso-items.txt
for mode in worktree none; do
	printf 'name: iso\nmode: mapreduce\nmap:\n  input: %s/iso-items.txt\n  max_parallel: 1\n  isolation: %s\n  agent_template:\n    - shell: "true"\n' "$work" "$mode" > "iso-$mode.yml"
done
: > t.worktree; : > t.none; : > t.loop
for r in $(seq 1 "$rounds"); do
	(cd iso && t0=$(now) && "$runner" run -q --progress never --state-dir "$work/iw-$r" "$work/iso-worktree.yml" >/dev/null 2>&1 && since "$t0") >> t.worktree
	(cd iso && t0=$(now) && "$runner" run -q --progress never --state-dir "$work/in-$r" "$work/iso-none.yml" >/dev/null 2>&1 && since "$t0") >> t.none
	(
		cd iso
		t0=$(now)
		for i in $(seq 1 "$iso_items"); do
			git worktree add -q -b "loop-$r-$i" "$work/loop-wt" HEAD
			git worktree remove --force "$work/loop-wt"
		done
		since "$t0"
		git branch -q -D $(seq -f "loop-$r-%g" 1 "$iso_items") >/dev/null
	) >> t.loop
	rm -rf "iw-$r" "in-$r"
done
w=$(median < t.worktree); n=$(median < t.none); l=$(median < t.loop)
per_runner=$(awk -v w="$w" -v n="$n" -v k="$iso_items" 'BEGIN {printf "%.1f", 1000 * (w - n) / k}')
per_loop=$(awk -v l="$l" -v k="$iso_items" 'BEGIN {printf "%.1f", 1000 * l / k}')
echo "  runner, isolation worktree  ${w}s"
echo "  runner, isolation none      ${n}s"
echo "  runner, per item            ${per_runner} ms"
echo "  shell loop, per item        ${per_loop} ms"
echo "  ratio                       $(ratio "$per_runner" "$per_loop") (target: at most 1.5)"
fi

if section nats; then
echo
echo "## items on NATS workers (server, coordinator and workers as processes here; median of $rounds runs)"
port=$((14222 + $$ % 1000))
url=nats://127.0.0.1:$port
"$repo/bin/nats-server" -js -sd "$work/nats" -a 127.0.0.1 -p "$port" >/dev/null 2>&1 &
server=$!; pids+=("$server")
for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
# worker NAME QUEUE CONCURRENCY starts a worker; its pid goes in $worker.
worker() { "$runner" worker --nats "$url" --name "$1" --queue "$2" --concurrency "$3" >/dev/null 2>&1 & worker=$!; pids+=("$worker"); }
# ticks PID: the CPU time (user + system, in clock ticks) PID has used.
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
# latency JOB: publish->recorded (item_started to item_succeeded) per item, in ms.
latency() {
	"$runner" --state-dir "$1" events --json "${2:-j}" | jq -r '.[] | select(.type == "item_started" or .type == "item_succeeded") | [.type, .item_id, .time] | @tsv' |
		awk -F'\t' 'function secs(t,  a) { split(substr(t, 12, 18), a, ":"); return a[1]*3600 + a[2]*60 + a[3] }
			$1 == "item_started" { s[$2] = secs($3) } $1 == "item_succeeded" && ($2 in s) { printf "%.3f\n", (secs($3) - s[$2]) * 1000 }'
}
pct() { sort -g | awk -v p="$1" '{a[NR]=$1} END {print a[int(NR*p)+1]}'; }
noop() { printf 'name: noop\nmode: mapreduce\nmap:\n  input: seq 1 %d\n  max_parallel: %d\n  agent_template:\n    - shell: "true"\n      when: "false"\n' "$1" "$2"; }
echo "(no-op items: a step skipped by when: false, so an item costs only its way through runner and NATS)"

# 1. no-op items at window 64: items/s, and CPU per item of each process.
noop "$nats_noop" 64 > noop64.yml
worker n1 noop 32; w1=$worker; worker n2 noop 32; w2=$worker
: > t.rate; : > t.cpu
for r in $(seq 1 "$rounds"); do
	s0=$(ticks "$server"); a0=$(( $(ticks "$w1") + $(ticks "$w2") ))
	/usr/bin/time -f '%e %U %S' -o coord.txt "$runner" run -q --progress never --state-dir "n64-$r" --nats "$url" --nats-batch "$nats_batch" --queue noop noop64.yml >/dev/null 2>&1
	s1=$(ticks "$server"); a1=$(( $(ticks "$w1") + $(ticks "$w2") ))
	read -r wall cu cs < coord.txt
	awk -v n="$nats_noop" -v w="$wall" 'BEGIN {printf "%.0f\n", n / w}' >> t.rate
	awk -v n="$nats_noop" -v hz="$hz" -v s=$((s1 - s0)) -v a=$((a1 - a0)) -v c="$cu" -v d="$cs" \
		'BEGIN {printf "%.3f %.3f %.3f\n", 1000 * s / hz / n, 1000 * (c + d) / n, 1000 * a / hz / n}' >> t.cpu
	rm -rf "n64-$r"
done
read -r cpu_s cpu_c cpu_w < <(sort -g t.cpu | awk '{a[NR]=$0} END {print a[int((NR+1)/2)]}')
echo "  no-op items, window 64, 2 workers x 32: $(median < t.rate) items/s (target: at least 1,000/s on the coordinator host)"
echo "    CPU per item: server ${cpu_s} ms, coordinator ${cpu_c} ms (coordinator host $(awk -v a="$cpu_s" -v b="$cpu_c" 'BEGIN {printf "%.2f", a + b}') ms; target: at most 1 ms), workers ${cpu_w} ms"
kill "$w1" "$w2"

# 2. publish->recorded at window 8, against local mode's item_started->item_succeeded.
noop "$nats_noop" 8 > noop8.yml
worker l1 lat 8; w1=$worker
: > lat.nats; : > lat.local
for r in $(seq 1 "$rounds"); do
	"$runner" run -q --progress never --state-dir "l8-$r" --job-id j --nats "$url" --nats-batch "$nats_batch" --queue lat noop8.yml >/dev/null 2>&1
	latency "l8-$r" >> lat.nats
	"$runner" run -q --progress never --state-dir "ll-$r" --job-id j noop8.yml >/dev/null 2>&1
	latency "ll-$r" >> lat.local
	rm -rf "l8-$r" "ll-$r"
done
echo "  publish->recorded at max_parallel 8 (1 worker x 8): p50 $(pct 0.5 < lat.nats) ms, p99 $(pct 0.99 < lat.nats) ms (targets: 2 ms, 20 ms)"
echo "    local mode, start->recorded:                  p50 $(pct 0.5 < lat.local) ms, p99 $(pct 0.99 < lat.local) ms"
kill "$w1"

# 3. 'true' items at max_parallel 8, everything on this box: NATS against local.
printf 'name: true\nmode: mapreduce\nmap:\n  input: seq 1 %d\n  max_parallel: 8\n  agent_template:\n    - shell: "true"\n' "$nats_true" > true8.yml
worker t1 true 4; w1=$worker; worker t2 true 4; w2=$worker
: > t.local; : > t.nats
for r in $(seq 1 "$rounds"); do
	t0=$(now); "$runner" run -q --progress never --state-dir "tl-$r" true8.yml >/dev/null 2>&1; since "$t0" >> t.local
	t0=$(now); "$runner" run -q --progress never --state-dir "tn-$r" --nats "$url" --nats-batch "$nats_batch" --queue true true8.yml >/dev/null 2>&1; since "$t0" >> t.nats
	rm -rf "tl-$r" "tn-$r"
done
l=$(median < t.local); n=$(median < t.nats)
echo "  $nats_true 'true' items at max_parallel 8: local ${l}s, NATS (2 workers x 4) ${n}s: $(ratio "$l" "$n") of local throughput (target: at least 0.70)"
kill "$w1" "$w2"

# 4. 50 ms items on W workers x c slots against the ideal N * 50 ms / (W * c),
# and against local mode at the same max_parallel (on 2 cores, starting
# sh and sleep for each item keeps either from the ideal).
printf 'name: sleep\nmode: mapreduce\nmap:\n  input: seq 1 %d\n  max_parallel: 12\n  agent_template:\n    - shell: sleep 0.05\n' "$nats_sleep" > sleep.yml
worker s1 sleep 6; w1=$worker; worker s2 sleep 6; w2=$worker
: > t.sleep; : > t.sleeplocal
for r in $(seq 1 "$rounds"); do
	t0=$(now); "$runner" run -q --progress never --state-dir "sl-$r" --nats "$url" --nats-batch "$nats_batch" --queue sleep sleep.yml >/dev/null 2>&1; since "$t0" >> t.sleep
	t0=$(now); "$runner" run -q --progress never --state-dir "sll-$r" sleep.yml >/dev/null 2>&1; since "$t0" >> t.sleeplocal
	rm -rf "sl-$r" "sll-$r"
done
s=$(median < t.sleep); l=$(median < t.sleeplocal); ideal=$(awk -v n="$nats_sleep" 'BEGIN {printf "%.3f", n * 0.05 / 12}')
echo "  $nats_sleep 50 ms items, 2 workers x 6 slots: ${s}s against an ideal of ${ideal}s: $(ratio "$ideal" "$s") (target: at least 0.85)"
echo "    local mode at max_parallel 12: ${l}s ($(ratio "$ideal" "$l") of the ideal); NATS $(ratio "$l" "$s") of local"
kill "$w1" "$w2"

# 5. worktree items, each committing one file, on a repository of 1,000
# files: NATS (2 workers x 2 in two clones; the commits travel as bundles)
# against local worktree isolation, both at max_parallel 4.
thousand_files gitrepo -b main
git clone -q gitrepo clone1; git clone -q gitrepo clone2
printf 'name: commits\nmode: mapreduce\nmap:\n  input: seq 1 %d\n  max_parallel: 4\n  isolation: worktree\n  agent_template:\n    - shell: echo ${item} > item-${item}.txt && git add item-${item}.txt && git commit -qm "item ${item}"\n' "$nats_git" > commits.yml
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com
"$runner" worker --nats "$url" --name g1 --queue git --concurrency 2 --work-dir "$work/clone1" >/dev/null 2>&1 & w1=$!; pids+=("$w1")
"$runner" worker --nats "$url" --name g2 --queue git --concurrency 2 --work-dir "$work/clone2" >/dev/null 2>&1 & w2=$!; pids+=("$w2")
: > t.gitlocal; : > t.gitnats
for r in $(seq 1 "$rounds"); do
	(cd gitrepo && t0=$(now) && "$runner" run -q --progress never --state-dir "$work/gl-$r" "$work/commits.yml" >/dev/null 2>&1 && since "$t0") >> t.gitlocal
	(cd gitrepo && t0=$(now) && "$runner" run -q --progress never --state-dir "$work/gn-$r" --nats "$url" --nats-batch "$nats_batch" --queue git "$work/commits.yml" >/dev/null 2>&1 && since "$t0") >> t.gitnats
done
l=$(median < t.gitlocal); n=$(median < t.gitnats)
echo "  $nats_git worktree items committing a file each (1,000-file repository), max_parallel 4: local ${l}s, NATS (2 workers x 2, two clones) ${n}s: $(ratio "$n" "$l")x local (target: at most 1.5)"
kill "$w1" "$w2"
fi
