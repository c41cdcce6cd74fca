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

# Real agents take minutes, so all the items of a job are at work at once
# and start from the same commit. This one takes a moment: it waits until
# every task of tasks.json has its worktree, or 3 seconds (a dlq retry runs
# one task alone).
if [ -n "${RUNNER_WORKTREE:-}" ]; then
	tasks=$(grep -c '"id"' tasks.json)
	i=0
	while [ "$(ls "$RUNNER_WORKTREE/.." | wc -l)" -lt "$tasks" ] && [ "$i" -lt 30 ]; do
		sleep 0.1
		i=$((i + 1))
	done
fi

case $1 in
/fix-typos)
	sed -i -e 's/\bteh\b/the/g' -e 's/Introducton/Introduction/g' -e 's/recieve/receive/g' "$2"
	git add "$2"
	git commit -qm "Fix typos in $2"
	echo "fixed the typos in $2"
	;;
/retitle)
	file=$2
	shift 2
	sed -i "1s/.*/# $*/" "$file"
	git add "$file"
	git commit -qm "Retitle $file: $*"
	echo "retitled $file"
	;;
*)
	echo "fake-agent: I do not know how to $1" >&2
	exit 1
	;;
esac
