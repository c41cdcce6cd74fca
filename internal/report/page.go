package report

import (
	"cmp"
	"fmt"
	"html/template"
	"slices"
	"sync"
	"time"

	"github.com/runnerdev/runner/internal/state"
)

// Timeline geometry, in pixels.
const (
	chartWidth  = 1160
	labelWidth  = 80
	laneHeight  = 20
	barHeight   = 14
	axisHeight  = 24
	minBarWidth = 2
	barGap      = 2  // between consecutive bars on a lane
	tickRoom    = 30 // half the width of a tick's label
)

// view is what the report template shows.
type view struct {
	Job       state.Meta
	Status    string // the job's status; a completed job's says what is in its DLQ
	StatusCSS string
	Duration  string
	Counts    *countsView // a MapReduce job's items
	Width     int
	Height    int
	AxisY     int
	Lanes     []laneView
	Ticks     []tickView
	Bars      []rectView
	Gaps      []lineView
	Pauses    []rectView
	Breaks    []rectView
	Dropped   int
	Steps     []stepRow
	StepCosts bool       // a step's agents reported what they spent: the steps table has a cost column
	Spend     string     // what the job's agents spent, all its runs; "" when none reported it
	Costliest []itemCost // the items whose agents spent the most, costliest first
	Merges    *mergesView
	Branches  *branchesView
	MapReduce bool // the page has a DLQ section
	DLQ       []dlqRow
	DLQMore   int // the items of the DLQ not listed
}

type laneView struct {
	Y            int
	Label, Title string
}

type tickView struct {
	X      int
	Label  string
	Anchor string // text-anchor: a tick near the right edge is right-aligned so that it fits
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

// maxLabel is the most characters of a lane's label drawn (the full one
// is its tooltip).
const maxLabel = 12

func newView(j Job, tl timeline) view {
	m := j.Meta
	sc := newScale(tl, labelWidth, chartWidth-labelWidth-10)
	y := func(lane int) int { return lane * laneHeight }
	v := view{Job: m, Status: string(m.Status), StatusCSS: "status-" + string(m.Status), Duration: durationText(tl, sc),
		Width: chartWidth, Dropped: tl.dropped, Branches: newBranchesView(j.Branches, m.ID), MapReduce: m.Items != nil}
	if m.Spend != nil {
		v.Spend = m.Spend.String()
	}
	if c := m.Items; c != nil {
		if m.Status == state.Completed && c.DLQ > 0 {
			v.Status, v.StatusCSS = fmt.Sprintf("completed with %d item(s) in the DLQ", c.DLQ), "status-dlq"
		}
	}
	v.AxisY = tl.lanes * laneHeight
	v.Height = v.AxisY + axisHeight
	v.Lanes = laneViews(tl, y)
	at, labels := ticks(sc.active())
	for i, d := range at {
		x, anchor := sc.x(sc.at(d)), "middle"
		if x > chartWidth-10-tickRoom {
			anchor = "end"
		}
		v.Ticks = append(v.Ticks, tickView{X: x, Label: labels[i], Anchor: anchor})
	}
	next := nextOnLane(tl.bars)
	for i, b := range tl.bars {
		r := rectView{X: sc.x(b.start), Y: y(b.lane) + (laneHeight-barHeight)/2, W: max(sc.x(b.end)-sc.x(b.start), minBarWidth), H: barHeight, Class: b.class, Title: b.title}
		if n := next[i]; n >= 0 { // end barGap before the next bar, so that the two do not merge
			r.W = max(min(r.W, sc.x(tl.bars[n].start)-r.X-barGap), 1)
		}
		v.Bars = append(v.Bars, r)
	}
	v.Bars = append(v.Bars, cellRects(tl, sc, y)...)
	for _, g := range tl.gaps {
		v.Gaps = append(v.Gaps, lineView{X1: sc.x(g.start), X2: sc.x(g.end), Y: y(g.lane) + laneHeight/2, Title: g.title})
	}
	for _, p := range tl.pauses {
		v.Pauses = append(v.Pauses, rectView{X: sc.x(p.start), Y: 0, W: max(sc.x(p.end)-sc.x(p.start), minBarWidth), H: v.AxisY, Class: "pause", Title: p.title})
	}
	for _, b := range tl.breaks {
		v.Breaks = append(v.Breaks, rectView{X: sc.x(b.start) + 2, Y: 0, W: breakWidth - 4, H: v.AxisY, Class: "break", Title: b.title})
	}
	v.DLQMore = max(j.DLQTotal-len(j.DLQ), 0)
	for _, it := range j.DLQ {
		last := it.Failures[len(it.Failures)-1]
		v.DLQ = append(v.DLQ, dlqRow{ID: it.ItemID, Failures: it.FailureCount, Last: it.LastFailure.UTC().Format(time.RFC3339),
			Kind: last.Kind, Step: last.Step, Message: last.Message})
	}
	return v
}

// cellRects draws the attempts merged into cells: a rectangle per run of
// cells of one class on a slot's lane, its title counting them.
func cellRects(tl timeline, sc scale, y func(int) int) []rectView {
	var rects []rectView
	w := tl.cells.width
	for _, r := range tl.cells.runs() {
		from, to := time.Duration(r.from)*w, min(time.Duration(r.to)*w, sc.active())
		x1, x2 := sc.x(sc.at(from)), sc.x(sc.at(to))
		rects = append(rects, rectView{X: x1, Y: y(len(tl.steps)+r.slot) + (laneHeight-barHeight)/2, W: max(x2-x1, 1), H: barHeight,
			Class: r.class, Title: r.title(from, to)})
	}
	return rects
}

// durationText says how long the job ran and, when it ran more than
// once, over how many runs and how long from its start to its end.
func durationText(tl timeline, sc scale) string {
	ran := sc.active().Round(time.Millisecond).String()
	if len(tl.breaks) == 0 {
		return ran
	}
	return fmt.Sprintf("ran %s in %d runs, %s from start to end with the time between runs", ran, len(sc.runs), roughly(tl.end.Sub(tl.start)))
}

// laneViews labels the lanes: each step's, then the agent slots.
func laneViews(tl timeline, y func(int) int) []laneView {
	var lanes []laneView
	for lane := range tl.lanes {
		title := fmt.Sprintf("slot %d", lane-len(tl.steps)+1)
		if lane < len(tl.steps) {
			title = tl.steps[lane]
		}
		label := title
		if r := []rune(label); len(r) > maxLabel {
			label = string(r[:maxLabel-1]) + "…"
		}
		lanes = append(lanes, laneView{Y: y(lane), Label: label, Title: title})
	}
	return lanes
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

// page is parsed on first use, not when runner starts.
var page = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Parse(`<!DOCTYPE html>
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
.break { fill: #c9d3e0; }
.conflict td { color: #c62828; background: #fdecea; }
.step-failed, .step-interrupted { color: #c62828; } .step-succeeded { color: #2e7d32; }
.sum { color: #555; margin-top: -12px; }
.gap { stroke: #777; stroke-width: 1.5; stroke-dasharray: 3 3; }
.axis { stroke: #bbb; }
.legend span { display: inline-block; width: 12px; height: 12px; margin: 0 4px 0 14px; vertical-align: -2px; }
code { font-size: 12px; }
</style>
</head>
<body>
<h1>{{.Job.Workflow}} <span class="{{.StatusCSS}}">{{.Status}}</span></h1>
<div class="meta">job <code>{{.Job.ID}}</code> · exit code {{.Job.ExitCode}} · started {{.Job.Started.UTC.Format "2006-01-02 15:04:05 UTC"}} · {{.Duration}} · seed {{.Job.Seed}}{{with .Spend}} · <span id="spend">agents spent {{.}}</span>{{end}}</div>
{{with .Counts}}<table class="counts" id="counts"><tr>{{range .Cells}}<th>{{index . 0}}</th>{{end}}</tr><tr>{{range .Cells}}<td>{{index . 1}}</td>{{end}}</tr></table>
<p class="sum">{{.Sum}}{{with .FailedOnce}}<br>{{.}}{{end}}</p>
{{else}}<table class="counts" id="counts"><tr><th>steps</th><th>finished</th></tr><tr><td>{{.Job.Steps}}</td><td>{{.Job.StepsDone}}</td></tr></table>
{{end}}{{with .Job.Error}}<p><strong>Error:</strong> <code>{{.}}</code></p>{{end}}
<h2>Timeline</h2>
<div class="legend"><span class="ok" style="background:#2e9d57"></span>succeeded<span style="background:#d63b3b"></span>failed<span style="background:#e8862a"></span>timed out<span style="background:#9e9e9e"></span>unfinished<span style="background:rgba(214,59,59,.25)"></span>circuit breaker open<span style="background:#c9d3e0"></span>between runs (not to scale) · dashed: waiting to retry</div>
<svg id="timeline" xmlns="http://www.w3.org/2000/svg" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}">
{{range .Lanes}}<rect class="lane" x="80" y="{{.Y}}" width="1080" height="19"/><text class="lane-label" x="0" y="{{.Y}}" dy="14">{{.Label}}<title>{{.Title}}</title></text>
{{end}}{{range .Breaks}}<rect class="{{.Class}}" x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="{{.H}}"><title>{{.Title}}</title></rect>
{{end}}{{range .Pauses}}<rect class="pause" x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="{{.H}}"><title>{{.Title}}</title></rect>
{{end}}{{range .Gaps}}<line class="gap" x1="{{.X1}}" x2="{{.X2}}" y1="{{.Y}}" y2="{{.Y}}"><title>{{.Title}}</title></line>
{{end}}{{range .Bars}}<rect class="{{.Class}}" x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="{{.H}}"><title>{{.Title}}</title></rect>
{{end}}<line class="axis" x1="80" x2="1160" y1="{{.AxisY}}" y2="{{.AxisY}}"/>
{{range .Ticks}}<text x="{{.X}}" y="{{$.AxisY}}" dy="16" text-anchor="{{.Anchor}}">{{.Label}}</text>
{{end}}</svg>
{{if .Dropped}}<p>The timeline draws the first attempts one by one; the {{.Dropped}} after them are drawn merged, a mark per few pixels of a slot's lane in the colour of the worst attempt that ran there (its tooltip counts them).</p>{{end}}
{{if .Steps}}<h2>Steps</h2>
<table id="steps">
<tr><th>phase</th><th>step</th><th>status</th><th>attempts</th><th>duration</th><th>exit code</th>{{if .StepCosts}}<th>cost</th>{{end}}</tr>
{{range .Steps}}<tr><td>{{.Phase}}</td><td><code>{{.Name}}</code></td><td class="step-{{.Status}}">{{.Status}}</td><td>{{.Attempts}}</td><td>{{.Duration}}</td><td>{{.ExitCode}}</td>{{if $.StepCosts}}<td>{{.Cost}}</td>{{end}}</tr>
{{end}}</table>
{{end}}{{if .Costliest}}<h2>Costliest items</h2>
<table id="costliest">
<tr><th>item</th><th>status</th><th>cost (all its attempts)</th></tr>
{{range .Costliest}}<tr><td><code>{{.Item}}</code></td><td class="step-{{.Status}}">{{.Status}}</td><td>{{.Cost}}</td></tr>
{{end}}</table>
{{end}}{{with .Merges}}<h2>Merges</h2>
<p id="merge-summary">{{.Summary}}</p>
{{if .Conflicts}}<table id="conflicts">
<tr><th>item</th><th>branch (kept)</th><th>conflicting paths</th></tr>
{{range .Conflicts}}<tr class="conflict"><td><code>{{.Item}}</code></td><td><code>{{.Branch}}</code></td><td>{{range $i, $p := .Conflicts}}{{if $i}}, {{end}}<code>{{$p}}</code>{{end}}</td></tr>
{{end}}</table>
{{end}}{{if .Merged}}<table id="merged">
<tr><th>item</th><th>branch</th><th>commits</th></tr>
{{range .Merged}}<tr><td><code>{{.Item}}</code></td><td><code>{{.Branch}}</code></td><td>{{.Commits}}</td></tr>
{{end}}</table>
{{end}}{{end}}{{with .Branches}}<h2>Branches</h2>
<table id="branches">
<tr><th>job branch</th><td><code>{{.Job}}</code>: {{.State}}</td></tr>
{{with .Merge}}<tr><th>to merge it</th><td><code class="command">{{.}}</code> {{$.Branches.Where}}{{with $.Branches.Resume}}, or <code class="command">{{.}}</code>{{end}}</td></tr>
{{end}}{{if .Items}}<tr><th>items' branches</th><td>{{range $i, $b := .Items}}{{if $i}}, {{end}}<code>{{$b}}</code>{{end}}</td></tr>
{{end}}</table>
{{end}}{{if .MapReduce}}<h2>Dead-letter queue</h2>
{{if .DLQ}}<table id="dlq">
<tr><th>item</th><th>failures</th><th>last failure</th><th>kind</th><th>step</th><th>error</th></tr>
{{range .DLQ}}<tr><td><code>{{.ID}}</code></td><td>{{.Failures}}</td><td>{{.Last}}</td><td>{{.Kind}}</td><td>{{.Step}}</td><td><code>{{.Message}}</code></td></tr>
{{end}}</table>{{if .DLQMore}}
<p>{{len .DLQ}} listed, {{.DLQMore}} more in the queue (<code>runner dlq list {{.Job.ID}}</code> lists them all).</p>{{end}}{{else}}<p>Empty.</p>{{end}}
{{end}}</body>
</html>
`))
})
