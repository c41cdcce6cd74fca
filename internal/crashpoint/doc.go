// Package crashpoint names the moments between runner's git and state
// writes at which a test kills runner -9 (SPEC §9.2's crash guarantees:
// every one must leave a state that resume and dlq retry recognise).
//
// Each point is a constant named after the write that has just been made
// (ItemMerged, DLQAdded, ...), and All lists them for the tests that go
// through every one. The code calls Hit right after that write:
//
//	if err := l.dlq.Add(letter); err != nil {
//		return err
//	}
//	crashpoint.Hit(crashpoint.DLQAdded)
//
// Hit does nothing in runner as shipped; a runner built with the tag
// runner_crashpoints kills itself with SIGKILL at the point that
// RUNNER_CRASHPOINT names ("name", or "name:N" for its Nth hit).
package crashpoint
