package eventlog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// mapDecode is how lines were read before the decoder: encoding/json into
// a map[string]any with UseNumber. The decoder must agree with it.
func mapDecode(data []byte) (Event, error) {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return Event{}, err
	}
	ts, _ := m["time"].(string)
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return Event{}, fmt.Errorf("event time %q: %w", ts, err)
	}
	e := Event{Time: t}
	e.JobID, _ = m["job_id"].(string)
	typ, _ := m["type"].(string)
	e.Type = Type(typ)
	delete(m, "time")
	delete(m, "job_id")
	delete(m, "type")
	e.Fields = m
	e.ItemID = e.Str("item_id")
	return e, nil
}

const head = `{"time":"2026-11-22T10:00:00.5Z","job_id":"j","type":"a"`

// trickyLines are lines on which a hand-written JSON reader could go
// wrong.
var trickyLines = []string{
	head + `}`,
	head + `,"s":"a\"b\\c\/d\n\t\r\b\f\u00e9\u2028<>&"}`,
	head + `,"s":"héllo 世界 🎉","t":"\ud83c\udf89"}`,
	head + `,"lone":"\udc80","high":"\ud800x","pair_reversed":"\udc00\ud800"}`,
	head + ",\"raw\":\"\xff\xfe invalid \xc3\"}",
	head + ",\"ctl\":\"a\x01b\"}",
	head + `,"bad_escape":"\x"}`,
	head + `,"short_u":"\u12"}`,
	head + `,"n":0,"neg":-0,"f":1.5e10,"e":-1E-5,"big":12345678901234567890123,"huge":1e400,"p":2E+3}`,
	head + `,"n":01}`,
	head + `,"n":1.}`,
	head + `,"n":.5}`,
	head + `,"n":-}`,
	head + `,"n":1e}`,
	head + `,"n":+1}`,
	head + `,"n":1x}`,
	head + `,"o":{"b":[1,"x",null,true,false,{"c":[]},{}],"time":"nested, not the event's"},"a":[]}`,
	head + `,"o":{"b":[1,2,]}}`,
	head + `,"o":{"b":{"c":1,}}}`,
	head + `,"o":{"b" 1}}`,
	head + `,"l":tru}`,
	head + `,"l":nul}`,
	head + `,"l":truex}`,
	` { "time" : "2026-11-22T10:00:00Z" , "job_id" : "j" , "type" : "a" , "x" : [ 1 , 2 ] } `,
	"{\"time\":\"2026-11-22T10:00:00Z\",\t\"type\":\"a\"\r}",
	head + `,"item_id":"x","item_id":"y"}`,
	head + `,"it\u0065m_id":"escaped name"}`,
	head + `,"item_id":7}`,
	head + `,"":"empty name"}`,
	head + `,"type":5}`,
	`{"job_id":"j","type":"a"}`,
	`{"time":5,"type":"a"}`,
	`{"time":"2026-11-22T10:00:00+02:00","type":"a"}`,
	`{"time":"2026-11-22T10:00:00.123456789-07:30","type":"a"}`,
	`{"time":"2026-02-30T10:00:00Z","type":"a"}`,
	`{"time":"2026-01-31T23:59:59.999999999Z","type":"a"}`,
	`{"time":"2024-02-29T00:00:00Z","type":"a"}`,
	`{"time":"2026-11-22T23:59:60Z","type":"a"}`,
	`{"time":"2026-11-22T24:00:00Z","type":"a"}`,
	`{"time":"2026-11-22T10:00:00.1234567891Z","type":"a"}`,
	`{"time":"2026-11-22T10:00:00.Z","type":"a"}`,
	`{"time":"2026-11-22T10:00:00,5Z","type":"a"}`,
	`{"time":"2026-11-22t10:00:00Z","type":"a"}`,
	`{"time":"2026-11-22T10:00:00z","type":"a"}`,
	`{"time":"0000-01-01T00:00:00Z","type":"a"}`,
	`{"time":"+026-11-22T10:00:00Z","type":"a"}`,
	`{"time":"2026-11-22T10:00:00.000000000Z","type":"a"}`,
	`{"time":"2026-11-22T10:00:00.1Z","job_id":"j","type":"a"`,
	`{"time":"2026-11-22T10:00:00.1Z","jo`,
	`{"time":"2026-11-22T10:00:00.1Z","job_id":"j`,
	`{"time":"2026-11-22T10:00:00.1Z","job_id":"j\`,
	`{`,
	``,
	`not json`,
	`null`,
	`[1]`,
	`"x"`,
	`{"time":"2026-11-22T10:00:00Z","type":"a"}{"x":1}`,
	`{"time":"2026-11-22T10:00:00Z","type":"a"} x`,
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	head + `,"deep":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`,
	head + `,"deep":` + strings.Repeat(`{"a":`, 9000) + "1" + strings.Repeat("}", 9000) + `}`,
}

// checkLikeMapDecode fails t when the decoder disagrees with mapDecode on
// line. The one intended difference: data after the event's object,
// which mapDecode never looked at, makes the line damaged.
func checkLikeMapDecode(t *testing.T, line []byte) {
	got, err := new(decoder).event(line)
	want, werr := mapDecode(line)
	switch {
	case werr == nil && !json.Valid(line):
		if err == nil {
			t.Errorf("%q: decoded %+v; want an error for the data after the event", line, got)
		}
	case (err == nil) != (werr == nil):
		t.Errorf("%q: error %v, want %v", line, err, werr)
	case err == nil && !reflect.DeepEqual(got, want):
		t.Errorf("%q:\ngot  %#v\nwant %#v", line, got, want)
	}
}

func TestDecodeLikeEncodingJSON(t *testing.T) {
	for _, line := range trickyLines {
		checkLikeMapDecode(t, []byte(line))
	}
	for _, c := range constructed {
		e := c.got
		e.Time, e.JobID = time.Date(2026, 11, 22, 10, 0, 0, 120000000, time.UTC), "job"
		line, err := e.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		checkLikeMapDecode(t, line)
	}
}

func FuzzDecodeLikeEncodingJSON(f *testing.F) {
	for _, line := range trickyLines {
		f.Add([]byte(line))
	}
	f.Fuzz(checkLikeMapDecode)
}

// The direct reading of times gives time.Parse's time.Time exactly, for
// every length of fraction MarshalJSON writes and days around month ends.
func TestParseTimeLikeTimeParse(t *testing.T) {
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 20000 {
		at := start.Add(time.Duration(i) * 37 * time.Hour).Add(time.Duration(i*7919%1000000007) * time.Nanosecond)
		s := at.Format(time.RFC3339Nano)
		got, err := eventTime([]byte(`"` + s + `"`))
		want, werr := time.Parse(time.RFC3339Nano, s)
		if err != nil || werr != nil || got != want {
			t.Fatalf("%s: %v, %v; want %v, %v", s, got, err, want, werr)
		}
	}
	if _, ok := parseUTC([]byte("2026-11-22T10:00:00.123Z")); !ok {
		t.Error("the form MarshalJSON writes went to time.Parse")
	}
}

// A decoded event is written back as json.Marshal writes it: numbers as
// read, nested objects with sorted keys, strings escaped its way.
func TestDecodeRoundTripsMarshal(t *testing.T) {
	line := head + `,"attempt":2,"item":{"b":[1.5,"x",null],"a":true},"item_id":"x\"y","message":"caf\u00e9 \u003cb\u003e"}`
	e, err := new(decoder).event([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := e.MarshalJSON()
	want := head + `,"attempt":2,"item":{"a":true,"b":[1.5,"x",null]},"item_id":"x\"y","message":"café \u003cb\u003e"}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
}

// BenchmarkDecodeEvent is the cost of reading one line of a log, over the
// events the constructors build.
func BenchmarkDecodeEvent(b *testing.B) {
	var lines [][]byte
	for _, c := range constructed {
		e := c.got
		e.Time, e.JobID = time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC), "deploy-20261122-100000-a1b2c3"
		line, _ := e.MarshalJSON()
		lines = append(lines, line)
	}
	d := newDecoder()
	b.ReportAllocs()
	for b.Loop() {
		for _, line := range lines {
			if _, err := d.event(line); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(lines)), "ns/event")
}
