package natsworker

import (
	"io"

	"github.com/runnerdev/runner/internal/crashpoint"
)

// objectChunkSize is the size of the chunks the Object Store cuts an
// object into (jetstream's default, which runner keeps).
const objectChunkSize = 128 * 1024

// chunkCrashReader reads r for an Object Store upload and passes crash
// point crashpoint.BundleChunkSent once, when the store asks for more
// after a whole chunk: that chunk has been published (a chunk larger than
// the client's buffer is written to the connection as it is published).
type chunkCrashReader struct {
	r      io.Reader
	read   int
	passed bool
}

func (c *chunkCrashReader) Read(p []byte) (int, error) {
	if c.read >= objectChunkSize && !c.passed {
		c.passed = true
		crashpoint.Hit(crashpoint.BundleChunkSent)
	}
	n, err := c.r.Read(p)
	c.read += n
	return n, err
}
