package local

import "time"

// ShiftCronClock makes o's Cron fire by the wall clock shifted by d.
func ShiftCronClock(o *Options, d time.Duration) {
	o.clock = func() time.Time { return time.Now().Add(d) }
}
