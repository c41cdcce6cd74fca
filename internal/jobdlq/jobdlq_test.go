package jobdlq

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// A lease names its process by host, pid and start time: it is gone when
// the pid is free or names a process that started at another time; a
// process on another host is never taken for gone.
func TestOwnerGone(t *testing.T) {
	me := claimOwner()
	if ownerGone(me) {
		t.Errorf("%s: this process is taken for gone", me)
	}
	host, pid, start, ok := parseOwner(me)
	if !ok || pid != os.Getpid() {
		t.Fatalf("parseOwner(%q) = %q %d %d %v", me, host, pid, start, ok)
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := host + ":" + strconv.Itoa(cmd.Process.Pid) + ":1"
	if !ownerGone(dead) {
		t.Errorf("%s: a process that exited is not taken for gone", dead)
	}
	if start != 0 && !ownerGone(host+":"+strconv.Itoa(pid)+":"+strconv.FormatUint(start+1, 10)) {
		t.Error("this pid with another start time is not taken for gone")
	}
	if ownerGone("elsewhere.example:" + strconv.Itoa(cmd.Process.Pid) + ":1") {
		t.Error("a process on another host is taken for gone")
	}
	if got := DescribeOwner(me); !strings.HasPrefix(got, "process "+strconv.Itoa(pid)+" on ") {
		t.Errorf("DescribeOwner = %q", got)
	}
	if got := DescribeOwner("odd"); got != `"odd"` {
		t.Errorf("DescribeOwner of a name it cannot read = %q", got)
	}
}
