package natscoord

import (
	"os"
	"testing"

	"github.com/runnerdev/runner/internal/natstest"
)

func TestMain(m *testing.M) {
	natstest.ServeIfChild() // a NATS server process that a test kills and restarts
	os.Exit(m.Run())
}
