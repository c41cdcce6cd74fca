package state

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// maxLogName bounds the part of an item log's name made of its id: a
// file name has at most 255 bytes.
const maxLogName = 200

// ItemLogName is the file name of the output log of the item id: the id
// with every byte but ASCII letters, digits and "._-+,=@" written as %XX
// (a leading "." too, so that no log is hidden), and ".log". A name that
// would be too long for a file system is cut and ends with "~" and a hash
// of the whole id, so that two ids never share a log.
func ItemLogName(id string) string { return itemFileName(id) + ".log" }

// ItemStreamName is the file name of the raw stream log of the item id:
// its output log's, with ".jsonl".
func ItemStreamName(id string) string { return itemFileName(id) + ".jsonl" }

// itemFileName is the name of the item id's files, without their
// extension (ItemLogName).
func itemFileName(id string) string {
	var b []byte
	for i := 0; i < len(id); i++ {
		c := id[i]
		if safeLogByte(c) && (c != '.' || i > 0) {
			b = append(b, c)
		} else {
			b = fmt.Appendf(b, "%%%02X", c)
		}
	}
	if len(b) > maxLogName {
		sum := sha256.Sum256([]byte(id))
		b = append(b[:maxLogName-20], '~')
		b = hex.AppendEncode(b, sum[:8])
	}
	return string(b)
}

func safeLogByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '.', '_', '-', '+', ',', '=', '@':
		return true
	}
	return false
}

// ItemLogPath is the path of the output log of the job's item id.
func (j *Job) ItemLogPath(id string) string { return j.Layout().ItemLog(id) }
