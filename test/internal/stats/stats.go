// Package stats holds the one summary the benchmarks report: a median with its min and max.
package stats

import (
	"cmp"
	"slices"
)

// Number is what Median summarizes: counts, rates, durations.
type Number interface {
	~int | ~int64 | ~float64
}

// Median returns the median of xs (the mean of the middle two for an even count) and its
// min and max; all zero for no values. xs is not modified.
func Median[T Number](xs []T) (med, lo, hi T) {
	if len(xs) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(xs)
	slices.SortFunc(s, cmp.Compare[T])
	n := len(s)
	med = s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return med, s[0], s[n-1]
}
