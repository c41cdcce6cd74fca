package proc

import (
	"io"
	"slices"
	"sync"
	"syscall"
)

// readBufSize is the size of the buffer a run reads its pipes into.
const readBufSize = 32 << 10

// readBufs recycles read buffers across runs (sync.Pool is per-P and does
// not serialise concurrent runs).
var readBufs = sync.Pool{New: func() any { b := make([]byte, readBufSize); return &b }}

// stream takes one output pipe of the child to its consumers: the live
// writer, the optional capture and the tail ring.
type stream struct {
	fd      int // read end of the pipe; -1 once closed
	childFD int // write end, for the child; -1 once closed (after the start)

	live io.Writer // nil, or dropped after an error or panic

	capture   bool
	limit     int
	buf       []byte // capture, at most limit bytes
	truncated bool

	tail  Tail
	total int64 // bytes read from the pipe
}

// newStream is a stream of the given consumers with its pipe open; its
// tail keeps the last tailLimit bytes.
func newStream(live io.Writer, capture bool, limit, tailLimit int) (*stream, error) {
	r, w, err := pipe()
	if err != nil {
		return nil, err
	}
	return &stream{fd: r, childFD: w, live: live, capture: capture, limit: limit, tail: Tail{Limit: tailLimit}}, nil
}

// read reads once from the pipe, which poll reported ready, into buf and
// hands what it got to the consumers. It reports false at EOF or on error.
func (s *stream) read(buf []byte) bool {
	n, err := syscall.Read(s.fd, buf)
	if n > 0 {
		s.consume(buf[:n])
		return true
	}
	return err == syscall.EINTR || err == syscall.EAGAIN
}

// closeChildEnd closes the write end once the child has its copy: EOF
// must then come from the child alone.
func (s *stream) closeChildEnd() {
	closeFDs(s.childFD)
	s.childFD = -1
}

// close closes whichever ends of the pipe are still open.
func (s *stream) close() {
	s.closeChildEnd()
	closeFDs(s.fd)
	s.fd = -1
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
	s.total += int64(len(p))
}

// writeLive forwards p to the live writer, dropping the writer for the rest
// of the run if it fails, writes short or panics.
func (s *stream) writeLive(p []byte) {
	defer func() {
		if recover() != nil {
			s.live = nil
		}
	}()
	if n, err := s.live.Write(p); err != nil || n != len(p) {
		s.live = nil
	}
}

// Tail keeps the last Limit bytes written to it (TailSize when Limit is 0
// or less). It grows on demand, so runs with little output never allocate
// the full Limit. It is not safe for concurrent use.
//
// While len(b) < size the data is b itself, in order. Once len(b) == size,
// b is circular and w is both the next write position and the start of the
// oldest data.
type Tail struct {
	Limit int
	b     []byte
	w     int
}

// Write keeps the end of p; it never fails.
func (r *Tail) Write(p []byte) (int, error) {
	n, size := len(p), r.size()
	if len(p) >= size {
		r.b = append(r.b[:0], p[len(p)-size:]...)
		r.w = 0
		return n, nil
	}
	if room := size - len(r.b); room > 0 {
		k := min(room, len(p))
		if len(r.b)+k > cap(r.b) {
			// Double, up to size: append's own growth for large slices
			// (1.25x) would copy a 1 MiB tail a dozen times.
			grown := make([]byte, len(r.b), min(size, max(2*cap(r.b), len(r.b)+k)))
			copy(grown, r.b)
			r.b = grown
		}
		r.b = append(r.b, p[:k]...)
		p = p[k:]
	}
	for len(p) > 0 {
		k := copy(r.b[r.w:], p)
		p = p[k:]
		r.w = (r.w + k) % size
	}
	return n, nil
}

// size is how many bytes the tail keeps.
func (r *Tail) size() int {
	if r.Limit <= 0 {
		return TailSize
	}
	return r.Limit
}

// Bytes returns the tail in order (nil if nothing was written): the Tail's
// own buffer, which a later Write changes.
func (r *Tail) Bytes() []byte {
	if len(r.b) == 0 {
		return nil
	}
	if r.w != 0 {
		// Rotate in place (the tail is done with), rather than copy what
		// may be a 1 MiB buffer.
		slices.Reverse(r.b[:r.w])
		slices.Reverse(r.b[r.w:])
		slices.Reverse(r.b)
		r.w = 0
	}
	return r.b
}
