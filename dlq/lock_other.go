//go:build !(linux || darwin || freebsd || openbsd || netbsd || dragonfly)

package dlq

import "os"

// unlock is a no-op where bbolt does not use flock; closing f is enough
// or the lock lasts until the process exits.
func unlock(*os.File) {}
