package state

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"strconv"
)

// codes are the last states of ItemStates' table, a byte per item; the
// zero byte is an item with no record.
var codes = [...]string{"", ItemRunning, ItemSucceeded, ItemDLQ, ItemSkipped}

func codeOf(s string) byte {
	for i, name := range codes {
		if name == s {
			return byte(i)
		}
	}
	return 0
}

// ItemStates is what the item log says of every item, in memory that
// grows by a byte per item: each item's last state, and the records (with
// the checkpoints of their current attempt) of the items last seen
// running. The item log's index (Layout.ItemIndex) stores it as of an
// offset of the log, so that reading it decodes only the lines after that
// offset, whatever the number of items finished before.
type ItemStates struct {
	table   []byte
	running map[int]ItemRecord
	// Decoded counts the item-log lines that reading decoded: those after
	// the index's offset, and the running items' records kept in it.
	Decoded int
}

func newItemStates() *ItemStates { return &ItemStates{running: map[int]ItemRecord{}} }

// State is the last state of the item at index, "" when it has no record.
func (s *ItemStates) State(index int) string {
	if index < 0 || index >= len(s.table) {
		return ""
	}
	return codes[s.table[index]]
}

// Finished reports whether the item at index has a final state: it
// succeeded, is in the DLQ or was skipped.
func (s *ItemStates) Finished(index int) bool {
	st := s.State(index)
	return st != "" && st != ItemRunning
}

// Count is the number of items whose last state is st.
func (s *ItemStates) Count(st string) int {
	return bytes.Count(s.table, []byte{codeOf(st)})
}

// Running returns the records of the items last seen running, by index,
// with their checkpoints; the caller may keep and change it.
func (s *ItemStates) Running() map[int]ItemRecord {
	out := make(map[int]ItemRecord, len(s.running))
	for i, rec := range s.running {
		rec.Steps = append([]StepRecord(nil), rec.Steps...)
		out[i] = rec
	}
	return out
}

// clone is a copy of s that later changes to s leave alone.
func (s *ItemStates) clone() *ItemStates {
	return &ItemStates{table: append([]byte(nil), s.table...), running: s.Running(), Decoded: s.Decoded}
}

// apply takes in one record of the item log: a state change, or a
// checkpoint that belongs to the current attempt of a running item.
func (s *ItemStates) apply(rec ItemRecord) {
	if rec.Index < 0 {
		return
	}
	if rec.Step != nil {
		if cur, ok := s.running[rec.Index]; ok && cur.Attempt == rec.Attempt {
			cur.Steps = append(cur.Steps, *rec.Step)
			s.running[rec.Index] = cur
		}
		return
	}
	for len(s.table) <= rec.Index {
		s.table = append(s.table, make([]byte, rec.Index+1-len(s.table))...)
	}
	s.table[rec.Index] = codeOf(rec.State)
	if rec.State == ItemRunning {
		rec.Steps = nil
		s.running[rec.Index] = rec
	} else {
		delete(s.running, rec.Index)
	}
}

// decodeItemRecord decodes one line of the item log.
func decodeItemRecord(line []byte) (ItemRecord, error) {
	var rec ItemRecord
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber() // captured values come back as they were journaled
	err := dec.Decode(&rec)
	return rec, err
}

// LoadItemStates reads the job's item states: the index, then the item
// log's lines after it.
func (j *Job) LoadItemStates() (*ItemStates, error) {
	s, _, err := loadItemStates(j.Layout(), -1)
	return s, err
}

// loadItemStates reads the index at l.ItemIndex, when it is whole and
// within the log, then decodes the log's lines after its offset up to
// size (-1: to the end). It returns the states and the offset just past
// the last whole line read.
func loadItemStates(l Layout, size int64) (*ItemStates, int64, error) {
	f, err := os.Open(l.ItemStates)
	if errors.Is(err, os.ErrNotExist) {
		return newItemStates(), 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("item log: %w", err)
	}
	defer f.Close()
	if size < 0 {
		info, err := f.Stat()
		if err != nil {
			return nil, 0, fmt.Errorf("item log: %w", err)
		}
		size = info.Size()
	}
	s, off := readItemIndex(l.ItemIndex, size)
	r := bufio.NewReaderSize(io.NewSectionReader(f, off, size-off), 64<<10)
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			var long []byte
			long, err = r.ReadBytes('\n')
			line = append(append([]byte(nil), line...), long...)
		}
		if errors.Is(err, io.EOF) {
			return s, off, nil // a line without its newline is a write cut short
		}
		if err != nil {
			return nil, 0, fmt.Errorf("item log: %w", err)
		}
		at := off
		off += int64(len(line))
		if line = bytes.TrimSpace(line); len(line) == 0 {
			continue
		}
		rec, err := decodeItemRecord(line)
		if err != nil {
			return nil, 0, fmt.Errorf("%s at byte %d: damaged record: %w", l.ItemStates, at, err)
		}
		s.Decoded++
		s.apply(rec)
	}
}

// The item log's index is a header line, `runner-item-index OFFSET ITEMS
// CRC`, then a byte per item (its last state as of OFFSET), then the
// records of the items running at OFFSET as item-log lines. CRC is the
// CRC-32 (IEEE) of `runner-item-index OFFSET ITEMS` and everything after
// the header.
const indexMagic = "runner-item-index"

// readItemIndex returns the states and offset of the index at path, or
// none and 0 when it is missing, damaged, or beyond the log's size (then
// the whole log is read, as before there was an index).
func readItemIndex(path string, size int64) (*ItemStates, int64) {
	data, err := os.ReadFile(path)
	if err != nil {
		return newItemStates(), 0
	}
	header, body, ok := bytes.Cut(data, []byte{'\n'})
	fields := bytes.Fields(header)
	if !ok || len(fields) != 4 || string(fields[0]) != indexMagic {
		return newItemStates(), 0
	}
	off, err1 := strconv.ParseInt(string(fields[1]), 10, 64)
	n, err2 := strconv.Atoi(string(fields[2]))
	sum, err3 := strconv.ParseUint(string(fields[3]), 10, 32)
	if err1 != nil || err2 != nil || err3 != nil || off < 0 || off > size || n < 0 || n > len(body) || indexSum(off, n, body) != uint32(sum) {
		return newItemStates(), 0
	}
	s := newItemStates()
	s.table = append([]byte(nil), body[:n]...)
	for line := range bytes.Lines(body[n:]) {
		rec, err := decodeItemRecord(line)
		if err != nil {
			return newItemStates(), 0
		}
		s.Decoded++
		s.apply(rec)
	}
	return s, off
}

// encodeItemIndex is the index of s as of the log's offset off.
func encodeItemIndex(s *ItemStates, off int64) ([]byte, error) {
	body := bytes.NewBuffer(append([]byte(nil), s.table...))
	for _, rec := range s.running {
		steps := rec.Steps
		rec.Steps = nil
		if err := writeRecordLine(body, rec); err != nil {
			return nil, err
		}
		for _, step := range steps {
			if err := writeRecordLine(body, ItemRecord{Index: rec.Index, ID: rec.ID, Attempt: rec.Attempt, Step: &step}); err != nil {
				return nil, err
			}
		}
	}
	header := fmt.Sprintf("%s %d %d %d\n", indexMagic, off, len(s.table), indexSum(off, len(s.table), body.Bytes()))
	return append([]byte(header), body.Bytes()...), nil
}

// indexSum is the CRC of an index of n items at offset off with body.
func indexSum(off int64, n int, body []byte) uint32 {
	return crc32.Update(crc32.ChecksumIEEE(fmt.Appendf(nil, "%s %d %d", indexMagic, off, n)), crc32.IEEETable, body)
}

func writeRecordLine(w *bytes.Buffer, rec ItemRecord) error {
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("item index: %w", err)
	}
	w.Write(line)
	return w.WriteByte('\n')
}
