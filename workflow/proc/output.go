package proc

import (
	"io"
	"os"
	"sync"
)

// readBufSize is the size of the buffer each stream copier reads into.
const readBufSize = 32 << 10

// readBufs recycles read buffers across runs (sync.Pool is per-P and does
// not serialise concurrent runs).
var readBufs = sync.Pool{New: func() any { b := make([]byte, readBufSize); return &b }}

// stream copies one output pipe of the child into its consumers: the live
// writer, the optional capture and the tail ring.
type stream struct {
	r *os.File // read end of the pipe, owned by the copier (Run may close it early)

	live io.Writer   // nil, or dropped after an error or panic
	mu   *sync.Mutex // non-nil when live is shared with the other stream

	capture   bool
	limit     int
	buf       []byte // capture, at most limit bytes
	truncated bool

	tail Tail
}

// open creates the pipe and returns the write end for the child.
func (s *stream) open() (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	s.r = r
	return w, nil
}

// copy reads the pipe until EOF or error (including Run closing it) and
// signals done.
func (s *stream) copy(done chan<- struct{}) {
	defer func() { done <- struct{}{} }()
	defer s.r.Close()
	bp := readBufs.Get().(*[]byte)
	defer readBufs.Put(bp)
	b := *bp
	for {
		n, err := s.r.Read(b)
		if n > 0 {
			s.consume(b[:n])
		}
		if err != nil {
			return
		}
	}
}

// consume hands one chunk to every consumer.
func (s *stream) consume(p []byte) {
	if s.live != nil {
		s.writeLive(p)
	}
	if s.capture {
		if room := s.limit - len(s.buf); room < len(p) {
			p2 := p[:max(room, 0)]
			s.buf = append(s.buf, p2...)
			s.truncated = true
		} else {
			s.buf = append(s.buf, p...)
		}
	}
	s.tail.Write(p)
}

// writeLive forwards p to the live writer, dropping the writer for the rest
// of the run if it fails, writes short or panics.
func (s *stream) writeLive(p []byte) {
	if s.mu != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
	}
	defer func() {
		if recover() != nil {
			s.live = nil
		}
	}()
	if n, err := s.live.Write(p); err != nil || n != len(p) {
		s.live = nil
	}
}

// Tail keeps the last TailSize bytes written to it. It grows on demand, so
// runs with little output never allocate the full TailSize. It is not safe
// for concurrent use.
//
// While len(b) < TailSize the data is b itself, in order. Once len(b) ==
// TailSize, b is circular and w is both the next write position and the
// start of the oldest data.
type Tail struct {
	b []byte
	w int
}

// Write keeps the end of p; it never fails.
func (r *Tail) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= TailSize {
		r.b = append(r.b[:0], p[len(p)-TailSize:]...)
		r.w = 0
		return n, nil
	}
	if room := TailSize - len(r.b); room > 0 {
		k := min(room, len(p))
		r.b = append(r.b, p[:k]...)
		p = p[k:]
	}
	for len(p) > 0 {
		k := copy(r.b[r.w:], p)
		p = p[k:]
		r.w = (r.w + k) % TailSize
	}
	return n, nil
}

// Bytes returns the tail in order (nil if nothing was written). The Tail
// must not be written to afterwards.
func (r *Tail) Bytes() []byte {
	if len(r.b) == 0 {
		return nil
	}
	if r.w == 0 {
		return r.b
	}
	out := make([]byte, 0, len(r.b))
	out = append(out, r.b[r.w:]...)
	return append(out, r.b[:r.w]...)
}
