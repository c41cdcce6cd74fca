// Package cmd is runner's command line: one file per command, each turning
// flags into an options struct and making one package call; the only place
// where errors become exit codes and results become text or JSON.
//
// Main is the whole of it for main.go: it parses the arguments, runs the
// command under ctx (which main cancels with an Interrupted cause on a
// signal) and returns the process's exit code (ExitOK, ExitFailed,
// ExitUsage, ExitItemsInDLQ, or 128+N after signal N):
//
//	os.Exit(cmd.Main(ctx, os.Args[1:], os.Stdout, os.Stderr))
//
// A command has restic's shape: newXCommand(g) builds the cobra command,
// an xOptions struct holds its flags (AddFlags), and runX(ctx, g, o, args)
// makes its call into the packages (a job, a dispatcher, the DLQ) and
// renders what they return; run, resume and dlq retry show the job's
// progress through a terminal (terminal.go). exitCode (exit.go) is the one
// switch from an error to an exit code.
package cmd
