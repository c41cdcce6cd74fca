#!/bin/sh
# test.sh DIR: the tests of the scripts built into DIR.
dir=$1
fail=0
check() { # check WANT COMMAND...
	want=$1
	shift
	got=$("$@")
	if [ "$got" = "$want" ]; then
		echo "ok   $*"
	else
		echo "FAIL $*: got '$got', want '$want'"
		fail=1
	fi
}
check 'hello, world' sh "$dir/greet.sh"
check 'hello, ana' sh "$dir/greet.sh" ana
check 'HELLO, ANA!' sh "$dir/shout.sh" ana
exit $fail
