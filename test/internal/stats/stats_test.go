package stats

import (
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	tests := []struct {
		in          []float64
		med, lo, hi float64
	}{
		{nil, 0, 0, 0},
		{[]float64{5}, 5, 5, 5},
		{[]float64{3, 1, 2}, 2, 1, 3},
		{[]float64{4, 1, 3, 2}, 2.5, 1, 4},
	}
	for _, tt := range tests {
		in := append([]float64(nil), tt.in...)
		med, lo, hi := Median(in)
		if med != tt.med || lo != tt.lo || hi != tt.hi {
			t.Errorf("Median(%v) = %v, %v, %v; want %v, %v, %v", tt.in, med, lo, hi, tt.med, tt.lo, tt.hi)
		}
		for i := range in {
			if in[i] != tt.in[i] {
				t.Errorf("Median reordered its input: %v", in)
			}
		}
	}
	if med, _, _ := Median([]time.Duration{4 * time.Millisecond, time.Millisecond, 3 * time.Millisecond, 2 * time.Millisecond}); med != 2500*time.Microsecond {
		t.Errorf("durations: median %v, want 2.5ms", med)
	}
}
