package remote

import (
	"encoding/json"
	"testing"
)

// A run's name, as its events are recorded with it, reads back as the
// run; anything else is not a run.
func TestRunIDReadsBackFromItsText(t *testing.T) {
	run := RunID{Epoch: 2, Sent: 1, Delivery: 3}
	if got, ok := ParseRunID(run.String()); !ok || got != run {
		t.Errorf("ParseRunID(%q) = %+v, %v; want %+v", run.String(), got, ok, run)
	}
	for _, s := range []string{"", "2.0", "2.0.1x", "a.b.c"} {
		if _, ok := ParseRunID(s); ok {
			t.Errorf("ParseRunID(%q) read a run", s)
		}
	}
}

// The messages keep the JSON of runner.progress.J that workers and
// coordinators of natsconn.Proto "1" speak: a change is a new protocol.
func TestWireFormatOfProto1(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{Msg{Kind: KindEvent, Run: Run{Index: 1, Attempt: 2, Epoch: 3, Sent: 1, Delivery: 4, Worker: "w"}, Seq: 5},
			`{"kind":"event","index":1,"attempt":2,"epoch":3,"sent":1,"delivery":4,"worker":"w","seq":5}`},
		{Msg{Kind: KindOutput, Stream: "stdout", Text: "i\tline\n"},
			`{"kind":"output","index":0,"attempt":0,"epoch":0,"delivery":0,"worker":"","stream":"stdout","text":"i\tline\n"}`},
		{Reply{Error: "no", Term: true}, `{"error":"no","term":true}`},
		{Reply{Unknown: true}, `{"unknown":true}`},
	} {
		data, err := json.Marshal(c.v)
		if err != nil || string(data) != c.want {
			t.Errorf("%+v as JSON: %s (%v), want %s", c.v, data, err, c.want)
		}
	}
}
