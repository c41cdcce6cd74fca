#!/bin/sh
# A stand-in for an agent CLI such as `claude --print`, to try docs.yml
# without an AI service. Like the real one it gets its prompt as its last
# argument, works on the files of the directory it runs in (the item's
# worktree) and commits what it changed. It knows two prompts:
#   /fix-typos FILE       corrects the misspellings it knows in FILE
#   /retitle FILE TITLE   makes "# TITLE" the first line of FILE
set -eu
set -f
for prompt; do :; done
set -- $prompt

# Real agents take minutes, so all the tasks of a job are at work at once
# and start from the same commit. This one is quick: when the tasks share
# this repository (the job branch runner/<job> is in it) it waits until
# every task of tasks.json has started (its branch runner-items/<job>/<task>
# exists) or is merged already (a dlq retry runs one task alone). In a NATS
# worker's clone (no job branch: the tasks run in other clones too, where
# this one cannot see them) there is nothing to wait for: each task names
# the commit it starts from when it is sent, and they are sent at once.
begun() {
	git rev-parse -q --verify "refs/heads/runner-items/$RUNNER_JOB_ID/$1" >/dev/null ||
		git log --format=%s "runner/$RUNNER_JOB_ID" | grep -qx "Merge $1 (runner job $RUNNER_JOB_ID)"
}
if [ -n "${RUNNER_WORKTREE:-}" ] && git rev-parse -q --verify "refs/heads/runner/$RUNNER_JOB_ID" >/dev/null; then
	for task in $(sed -n 's/.*"id": "\([^"]*\)".*/\1/p' tasks.json); do
		i=0
		until begun "$task"; do
			i=$((i + 1))
			[ "$i" -le 600 ] || { echo "fake-agent: $task never started; going on" >&2; break; }
			sleep 0.1
		done
	done
fi

# edit FILE SCRIPT... runs sed on FILE in place (portably: BSD sed's -i
# wants an argument, GNU sed's does not).
edit() {
	file=$1
	shift
	sed "$@" "$file" > "$file.new" && mv "$file.new" "$file"
}

case $1 in
/fix-typos)
	edit "$2" -e 's/ teh / the /g' -e 's/Introducton/Introduction/g' -e 's/recieve/receive/g'
	git add "$2"
	git commit -qm "Fix typos in $2"
	echo "fixed the typos in $2"
	;;
/retitle)
	file=$2
	shift 2
	edit "$file" -e "1s/.*/# $*/"
	git add "$file"
	git commit -qm "Retitle $file: $*"
	echo "retitled $file"
	;;
*)
	echo "fake-agent: I do not know how to $1" >&2
	exit 1
	;;
esac
