package local

import (
	"sync"
	"time"
)

// CronClockBeforeMinute makes o's Cron clock read `before` short of a minute when Start
// first reads it (as it sets up the schedules), and then run at the wall clock's pace, so
// that an every-minute schedule fires `before` after the kit is up, however long Start
// took. The function returned gives the clock's offset from the wall clock.
func CronClockBeforeMinute(o *Options, before time.Duration) func() time.Duration {
	var once sync.Once
	var shift time.Duration
	set := func() {
		now := time.Now()
		shift = now.Truncate(time.Minute).Add(time.Minute).Sub(now) - before
	}
	o.clock = func() time.Time {
		once.Do(set)
		return time.Now().Add(shift)
	}
	return func() time.Duration {
		once.Do(set)
		return shift
	}
}

// SweepStale removes the build directories of kits that are gone (Start does it first).
var SweepStale = sweepStale

// BinDir is the directory k builds its functions into.
func BinDir(k *Kit) string { return k.binDir }
