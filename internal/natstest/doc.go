// Package natstest starts NATS JetStream servers for tests, on 127.0.0.1,
// never linked into runner.
//
// A Server runs in the test's process: Start (a temporary store), StartOn (a
// port chosen before, see FreePort: a server that a client is already
// waiting for) or StartIn (for a script's setup, without a testing.TB). A
// Proc is a server in a process of its own, the test binary run again, so
// that a test can kill it with kill -9 and restart it on its store or on a
// new, empty one:
//
//	func TestMain(m *testing.M) { natstest.ServeIfChild(); os.Exit(m.Run()) }
//
//	srv := natstest.Process(t, t.TempDir(), 0)
//	nc := srv.Connect(t) // reconnects for ever
//	srv.Kill()
//	srv.Restart()
package natstest
