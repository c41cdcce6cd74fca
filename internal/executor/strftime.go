package executor

import (
	"fmt"
	"strings"
	"time"
)

// strftime formats t as chrono's (and C's) strftime does with format, for
// ${date:FORMAT}: the specifiers below; any other %X is written as it is.
func strftime(t time.Time, format string) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' || i+1 == len(format) {
			b.WriteByte(format[i])
			continue
		}
		i++
		if s, ok := specifier(t, format[i]); ok {
			b.WriteString(s)
		} else {
			b.WriteByte('%')
			b.WriteByte(format[i])
		}
	}
	return b.String()
}

// specifier is what %c writes for t.
func specifier(t time.Time, c byte) (string, bool) {
	layouts := map[byte]string{
		'Y': "2006", 'y': "06", 'm': "01", 'd': "02", 'e': "_2", 'H': "15", 'I': "03", 'M': "04", 'S': "05",
		'p': "PM", 'b': "Jan", 'h': "Jan", 'B': "January", 'a': "Mon", 'A': "Monday", 'Z': "MST", 'z': "-0700",
		'F': "2006-01-02", 'T': "15:04:05", 'D': "01/02/06", 'R': "15:04", 'r': "03:04:05 PM",
		'c': "Mon Jan _2 15:04:05 2006", 'x': "01/02/06", 'X': "15:04:05",
	}
	if l, ok := layouts[c]; ok {
		return t.Format(l), true
	}
	switch c {
	case 'j':
		return fmt.Sprintf("%03d", t.YearDay()), true
	case 's':
		return fmt.Sprint(t.Unix()), true
	case 'f':
		return fmt.Sprintf("%09d", t.Nanosecond()), true
	case 'u':
		return fmt.Sprint((int(t.Weekday())+6)%7 + 1), true
	case 'w':
		return fmt.Sprint(int(t.Weekday())), true
	case 'n':
		return "\n", true
	case 't':
		return "\t", true
	case '%':
		return "%", true
	}
	return "", false
}
