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
		sig := <-signals
		cancel(cmd.Interrupted{Signal: sig.(syscall.Signal)})
		sig = <-signals // a second signal abandons the cleanup
		os.Exit(128 + int(sig.(syscall.Signal)))
	}()
	os.Exit(cmd.Main(ctx, os.Args[1:], os.Stdout, os.Stderr))
}
