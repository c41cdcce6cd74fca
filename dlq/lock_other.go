//go:build !(linux || darwin || freebsd || openbsd || netbsd || dragonfly)

package dlq

import (
	"os"
	"time"
)

// unlock is a no-op where bbolt does not use flock; closing f is enough
// or the lock lasts until the process exits.
func unlock(*os.File) {}

// lock leaves the locking to bbolt.
func lock(*os.File, bool, time.Duration) error { return nil }
