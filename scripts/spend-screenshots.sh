#!/usr/bin/env bash
# The screenshots of docs/agents.md's "Cost and budgets": a map of 400
# items whose claude: steps a stand-in agent runs (it replays a
# stream-json session whose spend depends on the item; no AI service is
# called), its status line as a terminal shows it once 30 items finished,
# and its report, each taken in headless Chromium:
#   docs/img/spend-status-line.png, docs/img/spend-report.png
# Run from the repository's root: scripts/spend-screenshots.sh
set -euo pipefail
root=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/runner" .
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome)

mkdir -p "$work/bin" "$work/demo"
cat > "$work/bin/claude" <<'EOF'
#!/bin/sh
# A Claude Code session in stream-json: a tool call and an answer, whose
# tokens and cost grow with the item's number.
for last; do :; done
n=${last##* }
out=$((400 + n * 37 % 900))
cost=$(awk "BEGIN { printf \"%.4f\", 0.02 + ($n * 53 % 100) / 1000 + ($n % 9 == 0) * 0.21 }")
sid=sess-$n
cat <<JSON
{"type":"system","subtype":"init","session_id":"$sid","model":"claude-sonnet-4-5-20250929"}
{"type":"assistant","message":{"id":"m1-$n","model":"claude-sonnet-4-5-20250929","content":[{"type":"tool_use","name":"Bash","input":{"command":"go test ./pkg$n/..."}}],"usage":{"input_tokens":4,"cache_creation_input_tokens":1500,"cache_read_input_tokens":13000,"output_tokens":90}},"session_id":"$sid"}
JSON
sleep 0.3
cat <<JSON
{"type":"assistant","message":{"id":"m2-$n","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"Fixed pkg$n; its tests pass."}],"usage":{"input_tokens":9,"cache_creation_input_tokens":800,"cache_read_input_tokens":15000,"output_tokens":$out}},"session_id":"$sid"}
{"type":"result","subtype":"success","is_error":false,"num_turns":4,"duration_api_ms":21000,"result":"Fixed pkg$n; its tests pass.","session_id":"$sid","total_cost_usd":$cost,"usage":{"input_tokens":13,"cache_creation_input_tokens":2300,"cache_read_input_tokens":28000,"output_tokens":$((out + 90))}}
JSON
EOF
chmod 755 "$work/bin/claude"
cat > "$work/demo/fix.yml" <<'EOF'
name: fix-packages
mode: mapreduce
setup:
  - claude: /plan-fixes 0
  - shell: seq 1 400 > packages.txt
map:
  input: packages.txt
  isolation: none
  max_parallel: 8
  agent_template:
    - claude: /fix-package ${item}
reduce:
  - shell: echo "${map.successful} packages fixed"
EOF

cd "$work/demo"
PATH=$work/bin:$PATH "$work/runner" run --job-id fix --progress always --no-color fix.yml 2> stderr.txt > /dev/null
"$work/runner" report -o "$work/report.html" fix

# The terminal as it was when the status line first showed 30 items done:
# runner's lines above it, the line itself at the bottom.
python3 - "$work/demo/stderr.txt" "$work/status.html" <<'EOF'
import html, re, sys
text = open(sys.argv[1], encoding="utf-8", newline="").read()  # its \r kept
lines, status = [], ""
for chunk in re.split(r"\r\x1b\[K", text):
    *done, status = chunk.split("\n")
    lines += done
    m = re.match(r"map (\d+)/", status)
    if m and int(m.group(1)) >= 30 and "~$" in status:
        break
screen = [l for l in lines if l.strip()][-6:] + [status]
body = "\n".join(html.escape(l) for l in screen[:-1]) + '\n<span class="status">' + html.escape(screen[-1]) + "</span>"
open(sys.argv[2], "w").write("""<!doctype html><meta charset="utf-8"><style>
body { margin: 0; background: #1e1e1e; }
pre { margin: 0; padding: 14px 16px; color: #d4d4d4; font: 14px/1.45 "DejaVu Sans Mono", monospace; }
.status { color: #9a9a9a; }
</style><pre>$ runner run fix.yml
""" + body + "</pre>")
EOF
"$browser" --headless --no-sandbox --hide-scrollbars --screenshot="$root/docs/img/spend-status-line.png" --window-size=1240,180 "file://$work/status.html"
"$browser" --headless --no-sandbox --hide-scrollbars --screenshot="$root/docs/img/spend-report.png" --window-size=1240,1060 "file://$work/report.html"
