package report

import (
	"cmp"
	"fmt"
	"html/template"
	"slices"
	"time"

	"github.com/runnerdev/runner/dlq"
	"github.com/runnerdev/runner/state"
)

// Timeline geometry, in pixels.
const (
	chartWidth  = 1160
	labelWidth  = 80
	laneHeight  = 20
	barHeight   = 14
	axisHeight  = 24
	minBarWidth = 2
	barGap      = 2 // between consecutive bars on a lane
)

// view is what the report template shows.
type view struct {
	Job       state.Meta
	Status    string // the job's status; a completed job's says what is in its DLQ
	StatusCSS string
	Duration  string // wall clock: first event to last, pauses between runs included
	Ran       string // a resumed job's: the time its ended runs took; "" for a job run once
	Counts    [][2]string
	Width     int
	Height    int
	AxisY     int
	Lanes     []laneView
	Ticks     []tickView
	Bars      []rectView
	Gaps      []lineView
	Pauses    []rectView
	Dropped   int
	DLQ       []dlqRow
}

type laneView struct {
	Y     int
	Label string
}

type tickView struct {
	X      int
	Label  string
	Anchor string // text-anchor: the last tick is right-aligned so that it fits
}

type rectView struct {
	X, Y, W, H int
	Class      string
	Title      string
}

type lineView struct {
	X1, X2, Y int
	Title     string
}

type dlqRow struct {
	ID, Last, Kind, Step, Message string
	Failures                      int
}

func newView(m state.Meta, tl timeline, dead []dlq.Item) view {
	total := tl.end.Sub(tl.start)
	if total <= 0 {
		total = time.Millisecond
	}
	x := func(t time.Time) int {
		return labelWidth + int(float64(t.Sub(tl.start))/float64(total)*float64(chartWidth-labelWidth-10))
	}
	y := func(lane int) int { return lane * laneHeight }
	v := view{Job: m, Status: string(m.Status), StatusCSS: "status-" + string(m.Status), Duration: total.Round(time.Millisecond).String(), Width: chartWidth, Dropped: tl.dropped}
	if m.ResumedCount > 0 && m.RanMS > 0 {
		v.Ran = fmt.Sprintf("ran %s in %d runs", time.Duration(m.RanMS)*time.Millisecond, m.ResumedCount+1)
	}
	if c := m.Items; m.Status == state.Completed && c != nil && c.DLQ > 0 {
		v.Status, v.StatusCSS = fmt.Sprintf("completed with %d item(s) in the DLQ", c.DLQ), "status-dlq"
	}
	v.AxisY = tl.lanes * laneHeight
	v.Height = v.AxisY + axisHeight
	if c := m.Items; c != nil {
		v.Counts = [][2]string{{"items", fmt.Sprint(c.Total)}, {"succeeded", fmt.Sprint(c.Succeeded)}, {"failed", fmt.Sprint(c.Failed)},
			{"in the DLQ", fmt.Sprint(c.DLQ)}, {"skipped", fmt.Sprint(c.Skipped)}, {"pending", fmt.Sprint(c.Pending)}}
	} else {
		v.Counts = [][2]string{{"steps", fmt.Sprint(m.Steps)}, {"finished", fmt.Sprint(m.StepsDone)}}
	}
	for lane := range tl.lanes {
		label := "steps"
		if lane > 0 {
			label = fmt.Sprintf("slot %d", lane)
		}
		v.Lanes = append(v.Lanes, laneView{Y: y(lane), Label: label})
	}
	for i := 0; i <= 6; i++ {
		at := tl.start.Add(total * time.Duration(i) / 6)
		anchor := "middle"
		if i == 6 {
			anchor = "end"
		}
		v.Ticks = append(v.Ticks, tickView{X: x(at), Label: at.Sub(tl.start).Round(time.Millisecond).String(), Anchor: anchor})
	}
	next := nextOnLane(tl.bars)
	for i, b := range tl.bars {
		r := rectView{X: x(b.start), Y: y(b.lane) + (laneHeight-barHeight)/2, W: max(x(b.end)-x(b.start), minBarWidth), H: barHeight, Class: b.class, Title: b.title}
		if n := next[i]; n >= 0 { // end barGap before the next bar, so that the two do not merge
			r.W = max(min(r.W, x(tl.bars[n].start)-r.X-barGap), 1)
		}
		v.Bars = append(v.Bars, r)
	}
	for _, g := range tl.gaps {
		v.Gaps = append(v.Gaps, lineView{X1: x(g.start), X2: x(g.end), Y: y(g.lane) + laneHeight/2, Title: g.title})
	}
	for _, p := range tl.pauses {
		v.Pauses = append(v.Pauses, rectView{X: x(p.start), Y: 0, W: max(x(p.end)-x(p.start), minBarWidth), H: v.AxisY, Class: "pause", Title: p.title})
	}
	for _, it := range dead {
		last := it.Failures[len(it.Failures)-1]
		v.DLQ = append(v.DLQ, dlqRow{ID: it.ItemID, Failures: it.FailureCount, Last: it.LastFailure.UTC().Format(time.RFC3339),
			Kind: last.Kind, Step: last.Step, Message: last.Message})
	}
	return v
}

// nextOnLane returns, for each bar, the index of the bar that starts next
// on its lane, or -1 for the last one.
func nextOnLane(bars []bar) []int {
	order := make([]int, len(bars))
	next := make([]int, len(bars))
	for i := range bars {
		order[i], next[i] = i, -1
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(bars[a].lane, bars[b].lane), bars[a].start.Compare(bars[b].start))
	})
	for k := 1; k < len(order); k++ {
		if bars[order[k]].lane == bars[order[k-1]].lane {
			next[order[k-1]] = order[k]
		}
	}
	return next
}

var page = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>runner report: {{.Job.ID}}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 20px; margin: 0 0 4px; }
.meta { color: #555; margin-bottom: 16px; }
.status-completed { color: #2e7d32; } .status-dlq { color: #b35c00; } .status-failed, .status-stopped, .status-interrupted { color: #c62828; }
table { border-collapse: collapse; margin: 8px 0 20px; }
th, td { text-align: left; padding: 3px 12px 3px 0; border-bottom: 1px solid #eee; vertical-align: top; }
th { color: #555; font-weight: 600; }
.counts td { padding-right: 24px; }
svg text { font: 11px system-ui, sans-serif; fill: #555; }
.lane { fill: #f6f6f6; }
.ok { fill: #2e9d57; } .fail { fill: #d63b3b; } .timeout { fill: #e8862a; } .open { fill: #9e9e9e; }
.pause { fill: #d63b3b; fill-opacity: 0.13; }
.gap { stroke: #777; stroke-width: 1.5; stroke-dasharray: 3 3; }
.axis { stroke: #bbb; }
.legend span { display: inline-block; width: 12px; height: 12px; margin: 0 4px 0 14px; vertical-align: -2px; }
code { font-size: 12px; }
</style>
</head>
<body>
<h1>{{.Job.Workflow}} <span class="{{.StatusCSS}}">{{.Status}}</span></h1>
<div class="meta">job <code>{{.Job.ID}}</code> · exit code {{.Job.ExitCode}} · started {{.Job.Started.UTC.Format "2006-01-02 15:04:05 UTC"}} · {{.Duration}} wall clock, pauses included{{with .Ran}} · {{.}}{{end}} · seed {{.Job.Seed}}</div>
<table class="counts"><tr>{{range .Counts}}<th>{{index . 0}}</th>{{end}}</tr><tr>{{range .Counts}}<td>{{index . 1}}</td>{{end}}</tr></table>
{{with .Job.Error}}<p><strong>Error:</strong> <code>{{.}}</code></p>{{end}}
<h2>Timeline</h2>
<div class="legend"><span class="ok" style="background:#2e9d57"></span>succeeded<span style="background:#d63b3b"></span>failed<span style="background:#e8862a"></span>timed out<span style="background:#9e9e9e"></span>unfinished<span style="background:rgba(214,59,59,.25)"></span>circuit breaker open · dashed: waiting to retry</div>
<svg id="timeline" xmlns="http://www.w3.org/2000/svg" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}">
{{range .Lanes}}<rect class="lane" x="80" y="{{.Y}}" width="1080" height="19"/><text x="0" y="{{.Y}}" dy="14">{{.Label}}</text>
{{end}}{{range .Pauses}}<rect class="pause" x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="{{.H}}"><title>{{.Title}}</title></rect>
{{end}}{{range .Gaps}}<line class="gap" x1="{{.X1}}" x2="{{.X2}}" y1="{{.Y}}" y2="{{.Y}}"><title>{{.Title}}</title></line>
{{end}}{{range .Bars}}<rect class="{{.Class}}" x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="{{.H}}"><title>{{.Title}}</title></rect>
{{end}}<line class="axis" x1="80" x2="1160" y1="{{.AxisY}}" y2="{{.AxisY}}"/>
{{range .Ticks}}<text x="{{.X}}" y="{{$.AxisY}}" dy="16" text-anchor="{{.Anchor}}">{{.Label}}</text>
{{end}}</svg>
{{if .Dropped}}<p>The timeline shows the first attempts only: {{.Dropped}} more are not drawn.</p>{{end}}
<h2>Dead-letter queue</h2>
{{if .DLQ}}<table>
<tr><th>item</th><th>failures</th><th>last failure</th><th>kind</th><th>step</th><th>error</th></tr>
{{range .DLQ}}<tr><td><code>{{.ID}}</code></td><td>{{.Failures}}</td><td>{{.Last}}</td><td>{{.Kind}}</td><td>{{.Step}}</td><td><code>{{.Message}}</code></td></tr>
{{end}}</table>{{else}}<p>Empty.</p>{{end}}
</body>
</html>
`))
