package retryv2

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

var retryAfterLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?im)^\s*retry-after:\s*(.+?)\s*$`) })

// requestedDelay is the delay the failed command asked for: the number of
// seconds it wrote to $RUNNER_RETRY_AFTER_FILE (Outcome.RetryAfter), else
// the last "Retry-After: <seconds | HTTP-date>" line in its output.
func requestedDelay(o Outcome) (time.Duration, bool) {
	if o.RetryAfter != nil {
		return *o.RetryAfter, true
	}
	var found string
	for _, text := range []string{o.Stdout, o.Stderr} {
		if m := retryAfterLine().FindAllStringSubmatch(text, -1); m != nil {
			found = m[len(m)-1][1]
		}
	}
	if found == "" {
		return 0, false
	}
	return ParseRetryAfter(found, time.Now())
}

// ParseRetryAfter reads a Retry-After value: seconds (integer or decimal)
// or an HTTP-date, relative to now. Past dates mean no wait.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs < 0 || secs > 1e9 {
			return 0, false
		}
		return time.Duration(secs * float64(time.Second)), true
	}
	for _, layout := range httpDates {
		if t, err := time.Parse(layout, v); err == nil {
			return max(t.Sub(now), 0), true
		}
	}
	return 0, false
}

// httpDates are the date formats HTTP allows (RFC 9110 §5.6.7): IMF-fixdate,
// and the obsolete RFC 850 and asctime forms. (Parsed here rather than by
// net/http, which would link an HTTP stack into runner for three layouts.)
var httpDates = []string{
	"Mon, 02 Jan 2006 15:04:05 GMT",
	"Monday, 02-Jan-06 15:04:05 GMT",
	"Mon Jan _2 15:04:05 2006",
}
