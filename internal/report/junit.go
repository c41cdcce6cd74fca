package report

import (
	"bufio"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/spool"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/retryv2"
)

// JUnitJob is what a JUnit report says of a job besides its events.
type JUnitJob struct {
	Meta      state.Meta
	MapReduce bool     // its test cases are the setup and reduce steps and the items
	Steps     []string // a standard workflow's step labels, in order: those never reached are skipped
	// EventLog is the path of the job's event log, read line by line in
	// place of the events WriteJUnit is given when it is not "".
	EventLog string
	// StepLogs are the paths of the steps' logs (state.Layout.StepLog):
	// a step's case's system-out is its whole log, every attempt's output
	// after its header, where the log is there (else the last attempt's
	// stdout tail, as its events hold it).
	StepLogs map[StepRef]string
}

// StepRef names a step of a job in its phase by its label
// (workflow.Step.Label), as its events do.
type StepRef struct{ Phase, Label string }

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

type junitProperties struct {
	Property []junitProperty `xml:"property"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Class string `xml:"classname,attr"`
	Name  string `xml:"name,attr"`
	Time  string `xml:"time,attr"`
	// Properties are what the case's agents spent (cost_usd, tokens),
	// when they reported it.
	Properties *junitProperties `xml:"properties,omitempty"`
	Failure    *junitFailure    `xml:"failure,omitempty"`
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
// rerunFailure. The items' cases come between the setup's and the
// reduce's in the order they last ended (then those that never ended),
// each kept in a spool once it ended, not in memory; the test cases are
// written one by one, as MarshalIndent writes them, without the document
// in memory.
func WriteJUnit(w io.Writer, job JUnitJob, events []eventlog.Event) error {
	b, err := readJUnit(job, events)
	if err != nil {
		return err
	}
	defer b.ended.Close()
	doc := b.document(job.Meta)
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
	s := doc.Suites[0]
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
	err = b.eachCase(func(c junitCase) error {
		return enc.EncodeElement(c, xml.StartElement{Name: xml.Name{Local: "testcase"}})
	})
	if err != nil {
		return err
	}
	for _, end := range []xml.EndElement{start.End(), suites.End()} {
		if err := enc.EncodeToken(end); err != nil {
			return err
		}
	}
	if err := enc.Close(); err != nil {
		return err
	}
	if err := bw.WriteByte('\n'); err != nil {
		return err
	}
	return bw.Flush()
}

// attrs are the attributes of an element, from name, value pairs.
func attrs(pairs ...string) []xml.Attr {
	out := make([]xml.Attr, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, xml.Attr{Name: xml.Name{Local: pairs[i]}, Value: pairs[i+1]})
	}
	return out
}

// readJUnit reads the job's event log, or events, into a builder.
func readJUnit(job JUnitJob, events []eventlog.Event) (*junitBuilder, error) {
	b := newJUnitBuilder(job.Meta.Workflow, job.MapReduce)
	b.logs = job.StepLogs
	for _, step := range job.Steps {
		b.caseFor("commands", step) // the cases in the file's order, whatever order a parallel: block's steps ran in
	}
	err := eachEvent(job.EventLog, events, b.add)
	if err == nil {
		err = b.err
	}
	if err != nil {
		b.ended.Close()
		return nil, err
	}
	for _, step := range job.Steps {
		if c := b.caseFor("commands", step); !c.reached {
			c.Skipped = &junitSkipped{Message: "not run"}
		}
	}
	return b, nil
}

// document is the report's document without its test cases (eachCase
// gives them), its counts those of all of them.
func (b *junitBuilder) document(m state.Meta) junitSuites {
	suite := junitSuite{Name: m.Workflow, Timestamp: m.Started.UTC().Format(time.RFC3339),
		Properties: []junitProperty{{"job_id", m.ID}, {"status", string(m.Status)}, {"seed", fmt.Sprint(m.Seed)}},
		Tests:      b.endedCounts.tests, Failures: b.endedCounts.failures, Skipped: b.endedCounts.skipped}
	if m.Spend != nil {
		suite.Properties = append(suite.Properties, spendProperties(*m.Spend)...)
	}
	for _, c := range b.cases {
		suite.Tests++
		switch {
		case c.Failure != nil:
			suite.Failures++
		case c.Skipped != nil:
			suite.Skipped++
		}
	}
	if !b.firstAt.IsZero() {
		suite.Time = seconds(b.lastAt.Sub(b.firstAt))
	}
	return junitSuites{Name: "runner", Tests: suite.Tests, Failures: suite.Failures, Skipped: suite.Skipped, Time: suite.Time, Suites: []junitSuite{suite}}
}

// eachCase calls fn with each test case in the report's order: the steps
// seen before the first item, the items that ended in the order they
// last ended, those that did not in the order they were first seen, the
// other steps.
func (b *junitBuilder) eachCase(fn func(junitCase) error) error {
	itemsAt := len(b.order)
	if b.itemsAt >= 0 {
		itemsAt = b.itemsAt
	}
	for _, key := range b.order[:itemsAt] {
		if err := fn(b.cases[key].withLog()); err != nil {
			return err
		}
	}
	r, err := b.ended.Reader()
	if err != nil {
		return err
	}
	lines := bufio.NewReader(r)
	for off := int64(0); off < b.ended.Size(); {
		line, err := lines.ReadBytes('\n')
		if err != nil {
			return fmt.Errorf("junit: ended cases: %w", err)
		}
		var rec endedCase
		if err := json.Unmarshal(line, &rec); err != nil {
			return fmt.Errorf("junit: ended cases: %w", err)
		}
		if at, ok := b.failedAt[rec.Key]; rec.Case.Failure == nil || ok && at == off {
			if err := fn(rec.Case); err != nil {
				return err
			}
		}
		off += int64(len(line))
	}
	var live []*caseState
	for _, c := range b.cases {
		if c.item {
			live = append(live, c)
		}
	}
	slices.SortFunc(live, func(a, b *caseState) int { return a.seen - b.seen })
	for _, c := range live {
		if err := fn(c.junitCase); err != nil {
			return err
		}
	}
	for _, key := range b.order[itemsAt:] {
		if err := fn(b.cases[key].withLog()); err != nil {
			return err
		}
	}
	return nil
}

// withLog is a step's case with its whole log as its system-out, when it
// has one that can be read (read only as the case is written: one log in
// memory at a time).
func (c *caseState) withLog() junitCase {
	if c.log == "" {
		return c.junitCase
	}
	if text, err := os.ReadFile(c.log); err == nil && len(text) > 0 {
		jc := c.junitCase
		jc.SystemOut = string(text)
		return jc
	}
	return c.junitCase
}

// junitBuilder is a report in the making: a test case per step, in the
// order they were first seen, and per item, kept in memory while the item
// runs and in a spool once it ended; and the phase the events are in.
type junitBuilder struct {
	workflow string
	first    string // the phase a run of the job starts in
	phase    string
	cases    map[string]*caseState // the steps', and the items' that have not ended
	logs     map[StepRef]string    // JUnitJob.StepLogs
	order    []string              // the steps' keys, in the order first seen
	itemsAt  int                   // where in order the items go: the steps seen before the first; -1 before one
	seen     int                   // cases made so far
	// ended holds the items' cases that ended, an endedCase a line, in
	// the order they ended, counted in endedCounts. The line of a failed
	// item stays in failedAt, which a dlq retry that runs it again reads
	// it back from: its case goes on from there, and the line is passed
	// over.
	ended       spool.Spool
	endedCounts struct{ tests, failures, skipped int }
	failedAt    map[string]int64
	err         error
	firstAt     time.Time
	lastAt      time.Time
}

// endedCase is the line of an item's case in junitBuilder.ended.
type endedCase struct {
	Key        string         `json:"key"`
	Case       junitCase      `json:"case"`
	Attempts   []junitAttempt `json:"attempts,omitempty"`
	LastFailed bool           `json:"last_failed,omitempty"`
}

// caseState is a test case and the run of its step or item under way.
type caseState struct {
	junitCase
	item       bool   // an item's case
	log        string // a step's case: the path of its log (JUnitJob.StepLogs); "" for none
	seen       int    // when it was made, among the report's cases
	start      time.Time
	running    bool                 // an item's attempts are under way: its clock runs from their first
	attempts   []junitAttempt       // its failed attempts, oldest first
	lastFailed bool                 // its last attempt failed: that attempt is its failure
	canceled   bool                 // its last attempt was cancelled (Ctrl-C, a stop, a parallel: block's fail_fast)
	reached    bool                 // a step's case: an event of the step was read
	spent      *eventlog.AgentUsage // a step's case: what its agents spent, all its runs
}

// spendProperties are the properties that say what agents spent.
func spendProperties(u eventlog.AgentUsage) []junitProperty {
	return []junitProperty{{"cost_usd", strconv.FormatFloat(u.CostUSD, 'f', -1, 64)}, {"tokens", strconv.FormatInt(u.Tokens(), 10)}}
}

func newJUnitBuilder(workflow string, mapReduce bool) *junitBuilder {
	first := "commands"
	if mapReduce {
		first = "setup"
	}
	return &junitBuilder{workflow: workflow, first: first, phase: first, cases: map[string]*caseState{}, itemsAt: -1, failedAt: map[string]int64{}}
}

// caseFor returns the case of name in class, made on first use.
func (b *junitBuilder) caseFor(class, name string) *caseState {
	key := class + "\x00" + name
	c, ok := b.cases[key]
	if !ok {
		c = &caseState{junitCase: junitCase{Class: b.workflow + "." + class, Name: name, Time: "0"}, seen: b.seen, log: b.logs[StepRef{class, name}]}
		b.seen++
		b.cases[key] = c
		b.order = append(b.order, key)
	}
	return c
}

// itemCase returns the case of an item, made on first use, or taken back
// from the spool when the item ended failed and runs again.
func (b *junitBuilder) itemCase(id string) *caseState {
	key := "map\x00" + id
	if c, ok := b.cases[key]; ok {
		return c
	}
	if b.itemsAt < 0 {
		b.itemsAt = len(b.order)
	}
	c := &caseState{junitCase: junitCase{Class: b.workflow + ".map", Name: id, Time: "0"}, item: true, seen: b.seen}
	b.seen++
	if off, ok := b.failedAt[key]; ok {
		rec, err := b.endedAt(off)
		if err != nil && b.err == nil {
			b.err = err
		}
		delete(b.failedAt, key)
		b.endedCounts.tests--
		b.endedCounts.failures--
		c.junitCase, c.attempts, c.lastFailed = rec.Case, rec.Attempts, rec.LastFailed
	}
	b.cases[key] = c
	return c
}

// endedAt reads back the line of an ended case at offset off of the
// spool.
func (b *junitBuilder) endedAt(off int64) (endedCase, error) {
	var rec endedCase
	line, err := bufio.NewReader(io.NewSectionReader(&b.ended, off, b.ended.Size()-off)).ReadBytes('\n')
	if err == nil {
		err = json.Unmarshal(line, &rec)
	}
	if err != nil {
		return rec, fmt.Errorf("junit: ended cases: %w", err)
	}
	return rec, nil
}

// itemEnded moves an item's case that ended from memory to the spool.
func (b *junitBuilder) itemEnded(c *caseState) {
	key := "map\x00" + c.Name
	line, err := json.Marshal(endedCase{Key: key, Case: c.junitCase, Attempts: c.attempts, LastFailed: c.lastFailed})
	if err == nil {
		off := b.ended.Size()
		_, err = b.ended.Write(append(line, '\n'))
		if c.Failure != nil {
			b.failedAt[key] = off
		}
	}
	if err != nil && b.err == nil {
		b.err = fmt.Errorf("junit: ended cases: %w", err)
	}
	delete(b.cases, key)
	b.endedCounts.tests++
	switch {
	case c.Failure != nil:
		b.endedCounts.failures++
	case c.Skipped != nil:
		b.endedCounts.skipped++
	}
}

// add takes one event into the report.
func (b *junitBuilder) add(e eventlog.Event) {
	if b.firstAt.IsZero() {
		b.firstAt = e.Time
	}
	b.lastAt = e.Time
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
	step, phase := e.Str("step"), e.Str("phase")
	if phase == "" {
		phase = b.phase // an earlier runner's events, which name no phase
	}
	b.caseFor(phase, step).reached = true
	switch e.Type {
	case eventlog.TypeStepStarted:
		c := b.caseFor(phase, step)
		c.start, c.lastFailed, c.canceled = e.Time, false, false
	case eventlog.TypeAttemptFailed:
		if e.Str("kind") == retryv2.KindCanceled {
			b.caseFor(phase, step).canceled = true
			return // cut short by the job's end (Ctrl-C, a stop): no failure of the step's, nor flaky when it passes on resume
		}
		b.caseFor(phase, step).failedAttempt(e, e.Str("kind"))
	case eventlog.TypeAttemptSucceeded:
		b.caseFor(phase, step).lastFailed = false
	case eventlog.TypeStepCompleted:
		b.caseFor(phase, step).passed(e)
	case eventlog.TypeAgentUsage:
		c := b.caseFor(phase, step)
		u, _ := e.Usage()
		c.spent = eventlog.AddUsage(c.spent, &u)
		c.Properties = &junitProperties{spendProperties(*c.spent)}
	case eventlog.TypeStepSkipped:
		c := b.caseFor(phase, step)
		c.end(e)
		c.Skipped = &junitSkipped{Message: e.Str("reason")}
	case eventlog.TypeStepFailed:
		if c := b.caseFor(phase, step); c.canceled && e.Str("parallel") != "" {
			c.end(e) // another step of its parallel: block failed, or the job stopped: it did not
			c.Skipped = &junitSkipped{Message: "cancelled: " + e.Str("error")}
			return
		}
		msg := e.Str("error")
		if h := e.Str("handled"); h != "" {
			msg += " (handled by on_failure: " + h + ")"
		}
		b.caseFor(phase, step).failed(e, &junitFailure{Message: msg, Type: "step_failed", Text: msg})
	}
}

// addItem takes an event of a map item: its attempts and outcomes, in
// the job's runs and in dlq retries.
func (b *junitBuilder) addItem(e eventlog.Event) {
	if u, ok := e.ItemUsage(); ok {
		b.itemCase(e.ItemID).Properties = &junitProperties{spendProperties(u)}
	}
	switch e.Type {
	case eventlog.TypeItemStarted:
		if c := b.itemCase(e.ItemID); !c.running {
			c.start, c.running = e.Time, true
		}
	case eventlog.TypeItemRetrying:
		b.itemCase(e.ItemID).failedAttempt(e, e.Str("kind"))
	case eventlog.TypeItemSucceeded:
		c := b.itemCase(e.ItemID)
		c.passed(e)
		b.itemEnded(c)
	case eventlog.TypeItemFailed:
		c := b.itemCase(e.ItemID)
		if e.Str("action") == "skip" {
			c.end(e)
			c.Skipped = &junitSkipped{Message: "on_item_failure: skip: " + e.Str("message")}
		} else {
			c.failedAttempt(e, e.Str("kind"))
			c.failed(e, &junitFailure{Message: e.Str("message"), Type: e.Str("kind"), Text: attemptText(e)})
		}
		b.itemEnded(c)
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
