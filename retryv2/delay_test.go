package retryv2

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func policy(s Strategy, mod func(*Policy)) Policy {
	p := DefaultPolicy()
	p.Backoff.Strategy = s
	if mod != nil {
		mod(&p)
	}
	return p
}

func TestDelayTable(t *testing.T) {
	sec := time.Second
	tests := []struct {
		name string
		p    Policy
		want []time.Duration // k = 1, 2, ...
	}{
		{"fixed", policy(Fixed, nil), []time.Duration{sec, sec, sec, sec}},
		{"linear defaults increment to initial", policy(Linear, nil), []time.Duration{sec, 2 * sec, 3 * sec, 4 * sec}},
		{"linear increment", policy(Linear, func(p *Policy) { p.Backoff.Increment = 2 * sec }), []time.Duration{sec, 3 * sec, 5 * sec, 7 * sec}},
		{"exponential", policy(Exponential, nil), []time.Duration{sec, 2 * sec, 4 * sec, 8 * sec, 16 * sec, 30 * sec, 30 * sec}},
		{"exponential base 1.5", policy(Exponential, func(p *Policy) { p.Backoff.Base = 1.5 }), []time.Duration{sec, 1500 * time.Millisecond, 2250 * time.Millisecond}},
		{"fibonacci", policy(Fibonacci, nil), []time.Duration{sec, sec, 2 * sec, 3 * sec, 5 * sec, 8 * sec, 13 * sec, 21 * sec, 30 * sec}},
		{"custom then max_delay", policy(Custom, func(p *Policy) { p.Backoff.Delays = []time.Duration{sec, 5 * sec, 30 * sec}; p.MaxDelay = 20 * sec }),
			[]time.Duration{sec, 5 * sec, 20 * sec, 20 * sec}},
		{"cap below initial", policy(Fixed, func(p *Policy) { p.InitialDelay = 5 * sec; p.MaxDelay = 2 * sec }), []time.Duration{2 * sec}},
		{"zero initial", policy(Exponential, func(p *Policy) { p.InitialDelay = 0 }), []time.Duration{0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i, want := range tt.want {
				if got := tt.p.Delay(i+1, nil); got != want {
					t.Errorf("Delay(%d) = %v, want %v", i+1, got, want)
				}
			}
		})
	}
}

func TestDelayNeverOverflows(t *testing.T) {
	for _, s := range Strategies {
		p := policy(s, func(p *Policy) { p.MaxDelay = time.Duration(math.MaxInt64); p.InitialDelay = time.Hour })
		for _, k := range []int{1, 60, 93, 1000, 10_000, math.MaxInt32, math.MaxInt} {
			if d := p.Delay(k, nil); d < 0 {
				t.Errorf("%s: Delay(%d) = %v < 0", s, k, d)
			}
		}
	}
}

// Property: jittered delays stay within [0, max_delay] and within the
// documented band around the capped delay, for k up to 10,000.
func TestJitterBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, s := range Strategies {
		for _, mode := range []JitterMode{ProportionalJitter, FullJitter} {
			for _, factor := range []float64{0, 0.3, 1} {
				p := policy(s, func(p *Policy) {
					p.Jitter, p.JitterFactor = mode, factor
					p.Backoff.Delays = []time.Duration{time.Second, time.Minute}
				})
				for k := 1; k <= 10_000; k++ {
					base := p.baseDelay(k)
					d := p.Delay(k, rng.Float64)
					if d < 0 || d > p.MaxDelay {
						t.Fatalf("%s/%s/%v: Delay(%d) = %v outside [0, %v]", s, mode, factor, k, d, p.MaxDelay)
					}
					lo, hi := base-time.Duration(float64(base)*factor/2)-1, base+time.Duration(float64(base)*factor/2)+1
					if mode == FullJitter {
						lo, hi = 0, base
					}
					if d < lo || d > hi {
						t.Fatalf("%s/%s/%v: Delay(%d) = %v outside [%v, %v]", s, mode, factor, k, d, lo, hi)
					}
				}
			}
		}
	}
}

func TestJitterEndpoints(t *testing.T) {
	p := policy(Fixed, func(p *Policy) {
		p.InitialDelay = 10 * time.Second
		p.Jitter = ProportionalJitter
		p.JitterFactor = 0.5
	})
	if got := p.Delay(1, func() float64 { return 0 }); got != 7500*time.Millisecond {
		t.Errorf("low end = %v, want 7.5s", got)
	}
	if got := p.Delay(1, func() float64 { return 0.5 }); got != 10*time.Second {
		t.Errorf("middle = %v, want 10s", got)
	}
	p.InitialDelay = 30 * time.Second // at the cap: the upper half clamps to max_delay
	if got := p.Delay(1, func() float64 { return 0.999 }); got != 30*time.Second {
		t.Errorf("clamped = %v, want 30s", got)
	}
	p.Jitter = FullJitter
	if got := p.Delay(1, func() float64 { return 0.25 }); got != 7500*time.Millisecond {
		t.Errorf("full jitter = %v, want 7.5s", got)
	}
}
