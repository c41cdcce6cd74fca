package report

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/retryv2"
)

// JUnitJob is what a JUnit report says of a job besides its events.
type JUnitJob struct {
	Meta      state.Meta
	MapReduce bool     // its test cases are the setup and reduce steps and the items
	Steps     []string // a standard workflow's step keys, in order: those never reached are skipped
	// EventLog is the path of the job's event log, read line by line in
	// place of the events WriteJUnit is given when it is not "".
	EventLog string
}

// JUnit XML, as CI systems read it.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Class   string        `xml:"classname,attr"`
	Name    string        `xml:"name,attr"`
	Time    string        `xml:"time,attr"`
	Failure *junitFailure `xml:"failure,omitempty"`
	// Reruns are the failed attempts before the last of a case that
	// failed; Flaky those of a case that passed on a later attempt
	// (Maven Surefire's rerunFailure and flakyFailure).
	Reruns    []junitAttempt `xml:"rerunFailure"`
	Flaky     []junitAttempt `xml:"flakyFailure"`
	Skipped   *junitSkipped  `xml:"skipped,omitempty"`
	SystemOut string         `xml:"system-out,omitempty"`
	SystemErr string         `xml:"system-err,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// junitAttempt is one failed attempt of a test case, with what it
// printed.
type junitAttempt struct {
	Message    string `xml:"message,attr"`
	Type       string `xml:"type,attr"`
	StackTrace string `xml:"stackTrace,omitempty"`
	SystemOut  string `xml:"system-out,omitempty"`
	SystemErr  string `xml:"system-err,omitempty"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

// WriteJUnit writes a JUnit report of a job as its events tell it: one
// test case per step (standard workflows; steps never reached are
// skipped) or per item plus the setup and reduce steps (MapReduce), each
// with its last outcome and the tails of what its last run printed
// (system-out, system-err). A failure on_failure handled is a failure too
// (the summary counts it as failed) whose message says how it was
// handled; a fallback that succeeded makes the step pass, as it does in
// the summary. A case that passed after failed attempts (a step's retries,
// an item's retries, runs and dlq retries) is flaky: a flakyFailure per
// failed attempt; one that failed lists its earlier failed attempts as
// rerunFailure. The test cases are written one by one, as MarshalIndent
// writes them, without the document in memory.
func WriteJUnit(w io.Writer, job JUnitJob, events []eventlog.Event) error {
	doc, err := readJUnit(job, events)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	if _, err := bw.WriteString(xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(bw)
	enc.Indent("", "  ")
	suites := xml.StartElement{Name: xml.Name{Local: "testsuites"}, Attr: attrs("name", doc.Name, "tests", fmt.Sprint(doc.Tests),
		"failures", fmt.Sprint(doc.Failures), "skipped", fmt.Sprint(doc.Skipped), "time", doc.Time)}
	if err := enc.EncodeToken(suites); err != nil {
		return err
	}
	for _, s := range doc.Suites {
		if err := writeSuite(enc, s); err != nil {
			return err
		}
	}
	if err := enc.EncodeToken(suites.End()); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	if err := bw.WriteByte('\n'); err != nil {
		return err
	}
	return bw.Flush()
}

// writeSuite writes a test suite, its cases one by one.
func writeSuite(enc *xml.Encoder, s junitSuite) error {
	start := xml.StartElement{Name: xml.Name{Local: "testsuite"}, Attr: attrs("name", s.Name, "tests", fmt.Sprint(s.Tests),
		"failures", fmt.Sprint(s.Failures), "skipped", fmt.Sprint(s.Skipped), "time", s.Time, "timestamp", s.Timestamp)}
	if err := enc.EncodeToken(start); err != nil {
		return err
	}
	props := struct {
		Properties []junitProperty `xml:"property"`
	}{s.Properties}
	if err := enc.EncodeElement(props, xml.StartElement{Name: xml.Name{Local: "properties"}}); err != nil {
		return err
	}
	for _, c := range s.Cases {
		if err := enc.EncodeElement(c, xml.StartElement{Name: xml.Name{Local: "testcase"}}); err != nil {
			return err
		}
	}
	return enc.EncodeToken(start.End())
}

// attrs are the attributes of an element, from name, value pairs.
func attrs(pairs ...string) []xml.Attr {
	out := make([]xml.Attr, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, xml.Attr{Name: xml.Name{Local: pairs[i]}, Value: pairs[i+1]})
	}
	return out
}

// readJUnit builds the report that WriteJUnit writes: from the job's
// event log, or from events.
func readJUnit(job JUnitJob, events []eventlog.Event) (junitSuites, error) {
	m := job.Meta
	b := newJUnitBuilder(m.Workflow, job.MapReduce)
	var first, last time.Time
	err := eachEvent(job.EventLog, events, func(e eventlog.Event) {
		if first.IsZero() {
			first = e.Time
		}
		last = e.Time
		b.add(e)
	})
	if err != nil {
		return junitSuites{}, err
	}
	for _, step := range job.Steps {
		if _, ran := b.cases["commands\x00"+step]; !ran {
			b.caseFor("commands", step).Skipped = &junitSkipped{Message: "not run"}
		}
	}
	suite := junitSuite{Name: m.Workflow, Timestamp: m.Started.UTC().Format(time.RFC3339),
		Properties: []junitProperty{{"job_id", m.ID}, {"status", string(m.Status)}, {"seed", fmt.Sprint(m.Seed)}}}
	for _, key := range b.order {
		c := b.cases[key].junitCase
		suite.Cases = append(suite.Cases, c)
		suite.Tests++
		switch {
		case c.Failure != nil:
			suite.Failures++
		case c.Skipped != nil:
			suite.Skipped++
		}
	}
	if !first.IsZero() {
		suite.Time = seconds(last.Sub(first))
	}
	return junitSuites{Name: "runner", Tests: suite.Tests, Failures: suite.Failures, Skipped: suite.Skipped, Time: suite.Time, Suites: []junitSuite{suite}}, nil
}

// junitBuilder is a report in the making: a test case per step or item,
// in the order they first ended or failed an attempt, and the phase the
// events are in.
type junitBuilder struct {
	workflow string
	first    string // the phase a run of the job starts in
	phase    string
	cases    map[string]*caseState
	order    []string
}

// caseState is a test case and the run of its step or item under way.
type caseState struct {
	junitCase
	start      time.Time
	running    bool           // an item's attempts are under way: its clock runs from their first
	attempts   []junitAttempt // its failed attempts, oldest first
	lastFailed bool           // its last attempt failed: that attempt is its failure
}

func newJUnitBuilder(workflow string, mapReduce bool) *junitBuilder {
	first := "commands"
	if mapReduce {
		first = "setup"
	}
	return &junitBuilder{workflow: workflow, first: first, phase: first, cases: map[string]*caseState{}}
}

// caseFor returns the case of name in class, made on first use.
func (b *junitBuilder) caseFor(class, name string) *caseState {
	key := class + "\x00" + name
	c, ok := b.cases[key]
	if !ok {
		c = &caseState{junitCase: junitCase{Class: b.workflow + "." + class, Name: name, Time: "0"}}
		b.cases[key] = c
		b.order = append(b.order, key)
	}
	return c
}

// add takes one event into the report.
func (b *junitBuilder) add(e eventlog.Event) {
	switch {
	case e.Type == eventlog.TypeJobResumed:
		b.phase = b.first
	case e.Type == eventlog.TypeMapStarted:
		b.phase = "map"
	case e.Type == eventlog.TypeMapCompleted:
		b.phase = "reduce"
	case e.ItemID != "":
		b.addItem(e)
	case e.Str("step") != "":
		b.addStep(e)
	}
}

// addStep takes an event of a setup, reduce or standard step.
func (b *junitBuilder) addStep(e eventlog.Event) {
	step := e.Str("step")
	switch e.Type {
	case eventlog.TypeStepStarted:
		c := b.caseFor(b.phase, step)
		c.start, c.lastFailed = e.Time, false
	case eventlog.TypeAttemptFailed:
		if e.Str("kind") == retryv2.KindCanceled {
			return // cut short by the job's end (Ctrl-C, a stop): no failure of the step's, nor flaky when it passes on resume
		}
		b.caseFor(b.phase, step).failedAttempt(e, e.Str("kind"))
	case eventlog.TypeAttemptSucceeded:
		b.caseFor(b.phase, step).lastFailed = false
	case eventlog.TypeStepCompleted:
		b.caseFor(b.phase, step).passed(e)
	case eventlog.TypeStepSkipped:
		c := b.caseFor(b.phase, step)
		c.end(e)
		c.Skipped = &junitSkipped{Message: e.Str("reason")}
	case eventlog.TypeStepFailed:
		msg := e.Str("error")
		if h := e.Str("handled"); h != "" {
			msg += " (handled by on_failure: " + h + ")"
		}
		b.caseFor(b.phase, step).failed(e, &junitFailure{Message: msg, Type: "step_failed", Text: msg})
	}
}

// addItem takes an event of a map item: its attempts and outcomes, in
// the job's runs and in dlq retries.
func (b *junitBuilder) addItem(e eventlog.Event) {
	switch e.Type {
	case eventlog.TypeItemStarted:
		if c := b.caseFor("map", e.ItemID); !c.running {
			c.start, c.running = e.Time, true
		}
	case eventlog.TypeItemRetrying:
		b.caseFor("map", e.ItemID).failedAttempt(e, e.Str("kind"))
	case eventlog.TypeItemSucceeded:
		b.caseFor("map", e.ItemID).passed(e)
	case eventlog.TypeItemFailed:
		c := b.caseFor("map", e.ItemID)
		if e.Str("action") == "skip" {
			c.end(e)
			c.Skipped = &junitSkipped{Message: "on_item_failure: skip: " + e.Str("message")}
			return
		}
		c.failedAttempt(e, e.Str("kind"))
		c.failed(e, &junitFailure{Message: e.Str("message"), Type: e.Str("kind"), Text: attemptText(e)})
	}
}

// failedAttempt records a failed attempt of the case.
func (c *caseState) failedAttempt(e eventlog.Event, kind string) {
	c.attempts = append(c.attempts, junitAttempt{Message: e.Str("message"), Type: kind, StackTrace: attemptText(e),
		SystemOut: e.Str("stdout_tail"), SystemErr: e.Str("stderr_tail")})
	c.lastFailed = true
}

// end ends the case's run with e: its time, the output e tells of, and no
// outcome yet.
func (c *caseState) end(e eventlog.Event) {
	if !c.start.IsZero() {
		c.Time = seconds(e.Time.Sub(c.start))
	}
	c.running = false
	c.Failure, c.Skipped, c.Reruns, c.Flaky = nil, nil, nil, nil
	c.SystemOut, c.SystemErr = e.Str("stdout_tail"), e.Str("stderr_tail")
}

// passed ends the case with a success: flaky when attempts failed first.
func (c *caseState) passed(e eventlog.Event) {
	c.end(e)
	c.Flaky = slices.Clone(c.attempts)
}

// failed ends the case with failure f; the failed attempts before the
// one f reports are its reruns.
func (c *caseState) failed(e eventlog.Event, f *junitFailure) {
	c.end(e)
	c.Failure = f
	reruns := c.attempts
	if c.lastFailed && len(reruns) > 0 {
		reruns = reruns[:len(reruns)-1]
	}
	c.Reruns = slices.Clone(reruns)
}

// attemptText is the text of a failed attempt or item: its message, the
// step that failed and its exit code.
func attemptText(e eventlog.Event) string {
	text := e.Str("message")
	if step := e.Str("step"); step != "" && e.ItemID != "" {
		text += "\nstep: " + step
	}
	if n, ok := e.Fields["attempt"]; ok {
		text += fmt.Sprintf("\nattempt: %v", n)
	}
	return text + fmt.Sprintf("\nexit code: %v", e.Fields["exit_code"])
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }
