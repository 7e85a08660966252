package batch

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestNewValidatesOptions(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		wantErr []string
	}{
		{name: "negative concurrency", opts: Options{Concurrency: -1},
			wantErr: []string{"Options.Concurrency = -1: must be >= 1, or 0 for the default 10"}},
		{name: "negative margin", opts: Options{DeadlineMargin: -time.Second},
			wantErr: []string{"Options.DeadlineMargin = -1s: must be 0 for the default 2s, or from 100ms (the least that leaves time to answer Lambda) to 15m0s (the maximum Lambda timeout)"}},
		{name: "margin below the minimum", opts: Options{DeadlineMargin: 99 * time.Millisecond},
			wantErr: []string{"Options.DeadlineMargin = 99ms: must be 0 for the default 2s, or from 100ms"}},
		{name: "margin of one nanosecond", opts: Options{DeadlineMargin: 1},
			wantErr: []string{"Options.DeadlineMargin = 1ns: must be 0 for the default 2s, or from 100ms"}},
		{name: "margin above the Lambda maximum", opts: Options{DeadlineMargin: 16 * time.Minute},
			wantErr: []string{"Options.DeadlineMargin = 16m0s: must be 0 for the default 2s, or from 100ms"}},
		{name: "every problem at once", opts: Options{Concurrency: -5, DeadlineMargin: -1},
			wantErr: []string{"Options.Concurrency = -5", "Options.DeadlineMargin = -1ns"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(tt.opts)
			if p != nil || err == nil {
				t.Fatalf("New(%+v) = %v, %v; want an error", tt.opts, p, err)
			}
			if !errors.Is(err, ErrInvalidOptions) {
				t.Errorf("error %v is not ErrInvalidOptions", err)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

func TestNewDefaults(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	tests := []struct {
		name       string
		opts       Options
		wantConc   int
		wantMargin time.Duration
		wantLog    *slog.Logger
	}{
		{name: "zero value", opts: Options{}, wantConc: 10, wantMargin: 2 * time.Second, wantLog: slog.Default()},
		{name: "explicit", opts: Options{Concurrency: 3, DeadlineMargin: 15 * time.Minute, Logger: log},
			wantConc: 3, wantMargin: 15 * time.Minute, wantLog: log},
		{name: "smallest margin", opts: Options{DeadlineMargin: MinDeadlineMargin}, wantConc: 10, wantMargin: 100 * time.Millisecond,
			wantLog: slog.Default()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if p.Concurrency() != tt.wantConc || p.DeadlineMargin() != tt.wantMargin || p.log != tt.wantLog {
				t.Errorf("got (%d, %s, %p), want (%d, %s, %p)", p.Concurrency(), p.DeadlineMargin(), p.log,
					tt.wantConc, tt.wantMargin, tt.wantLog)
			}
		})
	}
}

func TestStatusString(t *testing.T) {
	want := map[Status]string{StatusSucceeded: "succeeded", StatusFailed: "failed", StatusPanicked: "panicked",
		StatusSkippedGroupFailed: "skipped_group_failed", StatusSkippedDeadline: "skipped_deadline", 0: "Status(0)"}
	for s, w := range want {
		if s.String() != w {
			t.Errorf("Status(%d).String() = %q, want %q", int(s), s.String(), w)
		}
	}
}
