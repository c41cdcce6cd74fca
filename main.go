// Command runner runs workflow files: standard workflows of shell steps and
// MapReduce workflows over many items, with retries, an error policy and a
// dead-letter queue.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/runnerdev/runner/cmd"
)

func main() {
	ctx, cancel := context.WithCancelCause(context.Background())
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		cancel(cmd.Interrupted{Signal: (<-signals).(syscall.Signal)})
		// A second signal abandons the cleanup, unless it is a hang-up: a
		// closed terminal sends two (from the shell, then from the kernel
		// as the shell exits).
		for sig := range signals {
			if sig != syscall.SIGHUP {
				os.Exit(128 + int(sig.(syscall.Signal)))
			}
		}
	}()
	os.Exit(cmd.Main(ctx, os.Args[1:], os.Stdout, os.Stderr))
}
