package spool

import (
	"bytes"
	"io"
	"strconv"
	"testing"
)

// A spool gives back what was written, whole and at any offset, in
// memory up to Memory and beyond it from its file.
func TestSpoolGivesBackWhatWasWritten(t *testing.T) {
	for _, lines := range []int{0, 10, 100_000} {
		var s Spool
		var want bytes.Buffer
		var offsets []int64
		for i := range lines {
			offsets = append(offsets, s.Size())
			line := "line " + strconv.Itoa(i) + "\n"
			s.Write([]byte(line))
			want.WriteString(line)
		}
		if s.Spilled() != (want.Len() > Memory) {
			t.Errorf("%d bytes: spilled %v", want.Len(), s.Spilled())
		}
		for _, i := range []int{0, lines / 3, lines - 1} {
			if i < 0 || i >= lines {
				continue
			}
			line := "line " + strconv.Itoa(i) + "\n"
			got := make([]byte, len(line))
			if _, err := s.ReadAt(got, offsets[i]); err != nil || string(got) != line {
				t.Errorf("ReadAt line %d: %q, %v", i, got, err)
			}
		}
		var got bytes.Buffer
		if _, err := s.WriteTo(&got); err != nil || !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("%d lines: %d bytes back, want %d: %v", lines, got.Len(), want.Len(), err)
		}
		var across [20]byte
		if s.Spilled() {
			if _, err := s.ReadAt(across[:], Memory-10); err != nil && err != io.EOF || !bytes.Equal(across[:], want.Bytes()[Memory-10:Memory+10]) {
				t.Errorf("ReadAt across memory and file: %q, %v", across, err)
			}
		}
		s.Close()
	}
}
