// Package spool keeps output that is made before it can be written: in
// memory up to a bound, the rest in an unnamed temporary file.
package spool

import (
	"bufio"
	"bytes"
	"io"
	"os"
)

// Memory is how much of a spool's text stays in memory; the rest goes
// to a temporary file.
const Memory = 256 << 10

// Spool keeps what is written to it, to be read back once it is all
// written (Reader, WriteTo) or piece by piece as it goes (ReadAt): the
// first Memory bytes in memory, the rest in an unnamed temporary file,
// gone with the process however it ends. Its memory does not grow with
// what it holds. The zero Spool is empty and ready.
type Spool struct {
	mem  bytes.Buffer
	file *os.File
	w    *bufio.Writer
	size int64
}

func (s *Spool) Write(p []byte) (int, error) {
	s.size += int64(len(p))
	if s.file == nil && s.mem.Len()+len(p) <= Memory {
		return s.mem.Write(p)
	}
	if s.file == nil {
		f, err := os.CreateTemp("", "runner-spool-")
		if err != nil {
			return 0, err
		}
		os.Remove(f.Name())
		s.file, s.w = f, bufio.NewWriterSize(f, 64<<10)
	}
	return s.w.Write(p)
}

// Size is how many bytes were written.
func (s *Spool) Size() int64 { return s.size }

// Spilled reports whether the spool went beyond Memory into its file.
func (s *Spool) Spilled() bool { return s.file != nil }

// Reader returns what was written, from its start.
func (s *Spool) Reader() (io.Reader, error) {
	if s.file == nil {
		return bytes.NewReader(s.mem.Bytes()), nil
	}
	if err := s.w.Flush(); err != nil {
		return nil, err
	}
	return io.MultiReader(bytes.NewReader(s.mem.Bytes()), bufio.NewReaderSize(io.NewSectionReader(s.file, 0, s.size), 64<<10)), nil
}

// ReadAt reads what was written at offset off, as io.ReaderAt does.
func (s *Spool) ReadAt(p []byte, off int64) (int, error) {
	mem := int64(s.mem.Len())
	if off < mem {
		n := copy(p, s.mem.Bytes()[off:])
		if n == len(p) {
			return n, nil
		}
		m, err := s.ReadAt(p[n:], mem)
		return n + m, err
	}
	if s.file == nil {
		return 0, io.EOF
	}
	if err := s.w.Flush(); err != nil {
		return 0, err
	}
	return io.NewSectionReader(s.file, 0, s.size-mem).ReadAt(p, off-mem)
}

// WriteTo writes what was written to w.
func (s *Spool) WriteTo(w io.Writer) (int64, error) {
	r, err := s.Reader()
	if err != nil {
		return 0, err
	}
	return io.Copy(w, r)
}

// Close lets go of the temporary file.
func (s *Spool) Close() {
	if s.file != nil {
		s.file.Close()
	}
}
