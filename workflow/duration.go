package workflow

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// maxDuration is the longest duration a file may give (about 292 years is
// what time.Duration holds; a hundred years is plenty).
const maxDuration = 100 * 365 * 24 * time.Hour

// units are the humantime unit names, by the duration they stand for.
var units = map[string]time.Duration{
	"ns": time.Nanosecond, "nsec": time.Nanosecond,
	"us": time.Microsecond, "µs": time.Microsecond, "usec": time.Microsecond,
	"ms": time.Millisecond, "msec": time.Millisecond, "millis": time.Millisecond, "millisecond": time.Millisecond, "milliseconds": time.Millisecond,
	"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
	"m": time.Minute, "min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hr": time.Hour, "hrs": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
	"w": 7 * 24 * time.Hour, "week": 7 * 24 * time.Hour, "weeks": 7 * 24 * time.Hour,
}

var (
	humanPart = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)\s*([a-zµ]+)`) })
	isoPeriod = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^P(?:([0-9.]+)W)?(?:([0-9.]+)D)?(?:T(?:([0-9.]+)H)?(?:([0-9.]+)M)?(?:([0-9.]+)S)?)?$`)
	})
)

var errDurationSyntax = errors.New("want a duration such as 250ms, 2s, 1m30s, 1h or 1d, a number of seconds, or ISO-8601 such as PT30S")

// ParseDuration reads the duration forms of workflow files: Go and
// humantime strings ("250ms", "1m30s", "2h 30m", "1d"), a plain number of
// seconds ("30", "1.5"), or ISO-8601 ("PT30S", "P1DT2H").
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errDurationSyntax
	}
	var (
		d   time.Duration
		err error
	)
	switch {
	case s[0] == 'P' || s[0] == 'p':
		d, err = parseISO(strings.ToUpper(s))
	case strings.Trim(s, "0123456789.") == "":
		d, err = scale(s, time.Second)
	case s[0] == '-':
		return 0, fmt.Errorf("%q is negative", s)
	default:
		d, err = parseHuman(strings.ToLower(s))
	}
	if err != nil {
		return 0, fmt.Errorf("bad duration %q: %w", s, err)
	}
	return d, nil
}

// parseHuman reads a sequence of number-unit parts, spaces allowed.
func parseHuman(s string) (time.Duration, error) {
	var total time.Duration
	for rest := s; rest != ""; rest = strings.TrimLeft(rest, " ") {
		m := humanPart().FindStringSubmatch(rest)
		if m == nil {
			return 0, errDurationSyntax
		}
		unit, ok := units[m[2]]
		if !ok {
			return 0, fmt.Errorf("unknown unit %q: %w", m[2], errDurationSyntax)
		}
		d, err := scale(m[1], unit)
		if err != nil {
			return 0, err
		}
		if total += d; total > maxDuration {
			return 0, errTooLong
		}
		rest = rest[len(m[0]):]
	}
	return total, nil
}

// parseISO reads an ISO-8601 duration of weeks, days, hours, minutes and
// seconds (years and months have no fixed length and are refused).
func parseISO(s string) (time.Duration, error) {
	m := isoPeriod().FindStringSubmatch(s)
	if m == nil || s == "P" || strings.HasSuffix(s, "T") {
		return 0, errDurationSyntax
	}
	var total time.Duration
	for i, unit := range []time.Duration{7 * 24 * time.Hour, 24 * time.Hour, time.Hour, time.Minute, time.Second} {
		if m[i+1] == "" {
			continue
		}
		d, err := scale(m[i+1], unit)
		if err != nil {
			return 0, err
		}
		if total += d; total > maxDuration {
			return 0, errTooLong
		}
	}
	return total, nil
}

var errTooLong = fmt.Errorf("longer than %d days", maxDuration/(24*time.Hour))

// scale multiplies a decimal number by a unit without overflowing.
func scale(num string, unit time.Duration) (time.Duration, error) {
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(f) || f < 0 {
		return 0, errDurationSyntax
	}
	v := f * float64(unit)
	if v > float64(maxDuration) {
		return 0, errTooLong
	}
	return time.Duration(math.Round(v)), nil
}
