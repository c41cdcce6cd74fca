package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"time"

	"github.com/runnerdev/runner/eventlog"
	"github.com/runnerdev/runner/state"
)

// JUnitJob is what a JUnit report says of a job besides its events.
type JUnitJob struct {
	Meta      state.Meta
	MapReduce bool     // its test cases are the setup and reduce steps and the items
	Steps     []string // a standard workflow's step keys, in order: those never reached are skipped
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
	Skipped *junitSkipped `xml:"skipped,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

// WriteJUnit writes a JUnit report of a finished job: one test case per
// step (standard workflows; steps never reached are skipped) or per item
// plus the setup and reduce steps (MapReduce), each with its last outcome.
// A failure on_failure handled is a failure too (the summary counts it as
// failed) whose message says how it was handled; a fallback that
// succeeded makes the step pass, as it does in the summary.
func WriteJUnit(w io.Writer, job JUnitJob, events []eventlog.Event) error {
	data, err := xml.MarshalIndent(junit(job, events), "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append([]byte(xml.Header), append(data, '\n')...))
	return err
}

// junit builds the report that WriteJUnit writes.
func junit(job JUnitJob, events []eventlog.Event) junitSuites {
	m := job.Meta
	suite := junitSuite{Name: m.Workflow, Timestamp: m.Started.UTC().Format(time.RFC3339),
		Properties: []junitProperty{{"job_id", m.ID}, {"status", string(m.Status)}, {"seed", fmt.Sprint(m.Seed)}}}
	cases := map[string]*junitCase{}
	var order []string
	started := map[string]time.Time{}
	phase := "commands"
	if job.MapReduce {
		phase = "setup"
	}
	caseFor := func(class, name string) *junitCase {
		key := class + "\x00" + name
		c, ok := cases[key]
		if !ok {
			c = &junitCase{Class: m.Workflow + "." + class, Name: name, Time: "0"}
			cases[key] = c
			order = append(order, key)
		}
		return c
	}
	end := func(c *junitCase, key string, at time.Time) {
		if t, ok := started[key]; ok {
			c.Time = seconds(at.Sub(t))
		}
	}
	for _, e := range events {
		item, step := e.ItemID, e.Str("step")
		switch {
		case e.Type == eventlog.TypeMapStarted:
			phase = "map"
		case e.Type == eventlog.TypeMapCompleted:
			phase = "reduce"
		case item == "" && e.Type == eventlog.TypeStepStarted:
			started[phase+step] = e.Time
		case item == "" && (e.Type == eventlog.TypeStepCompleted || e.Type == eventlog.TypeStepFailed || e.Type == eventlog.TypeStepSkipped):
			c := caseFor(phase, step)
			end(c, phase+step, e.Time)
			c.Failure, c.Skipped = nil, nil
			switch {
			case e.Type == eventlog.TypeStepSkipped:
				c.Skipped = &junitSkipped{Message: e.Str("reason")}
			case e.Type == eventlog.TypeStepFailed:
				msg := e.Str("error")
				if h := e.Str("handled"); h != "" {
					msg += " (handled by on_failure: " + h + ")"
				}
				c.Failure = &junitFailure{Message: msg, Type: "step_failed", Text: msg}
			}
		case e.Type == eventlog.TypeItemStarted && e.Int("attempt") == 1:
			started["item"+item] = e.Time
		case e.Type == eventlog.TypeItemSucceeded || e.Type == eventlog.TypeItemFailed:
			c := caseFor("map", item)
			end(c, "item"+item, e.Time)
			c.Failure, c.Skipped = nil, nil
			if e.Type == eventlog.TypeItemFailed && e.Str("action") == "skip" {
				c.Skipped = &junitSkipped{Message: "on_item_failure: skip: " + e.Str("message")}
			} else if e.Type == eventlog.TypeItemFailed {
				c.Failure = &junitFailure{Message: e.Str("message"), Type: e.Str("kind"), Text: fmt.Sprintf("%s\nstep: %s\nexit code: %v", e.Str("message"), step, e.Fields["exit_code"])}
			}
		}
	}
	for _, step := range job.Steps {
		if _, ran := cases["commands\x00"+step]; !ran {
			caseFor("commands", step).Skipped = &junitSkipped{Message: "not run"}
		}
	}
	for _, key := range order {
		c := cases[key]
		suite.Cases = append(suite.Cases, *c)
		suite.Tests++
		switch {
		case c.Failure != nil:
			suite.Failures++
		case c.Skipped != nil:
			suite.Skipped++
		}
	}
	if len(events) > 0 {
		suite.Time = seconds(events[len(events)-1].Time.Sub(events[0].Time))
	}
	return junitSuites{Name: "runner", Tests: suite.Tests, Failures: suite.Failures, Skipped: suite.Skipped, Time: suite.Time, Suites: []junitSuite{suite}}
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }
