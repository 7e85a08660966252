package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/idempotent-sqs/pipeline/functions/telemetry"
)

func TestNewLoggerWritesLambdaJSON(t *testing.T) {
	var buf bytes.Buffer
	log := telemetry.NewLogger(&buf, slog.LevelInfo)
	log.Debug("hidden")
	log.With(slog.Group("req", slog.String("time", "kept"))).Warn("record failed",
		telemetry.AttrMessageID, "m-1", telemetry.AttrReceiveCount, 3)

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("want 1 line (DEBUG filtered at INFO), got %d: %q", len(lines), buf.String())
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &got); err != nil {
		t.Fatalf("line is not JSON: %v: %s", err, lines[0])
	}
	if got["level"] != "WARN" || got["message"] != "record failed" || got["messageId"] != "m-1" ||
		got["receiveCount"] != float64(3) {
		t.Errorf("unexpected fields: %v", got)
	}
	ts, ok := got["timestamp"].(string)
	if !ok {
		t.Fatalf("no timestamp key: %v", got)
	}
	if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
		t.Errorf("timestamp %q is not RFC 3339 (Lambda log-level filtering needs it): %v", ts, err)
	}
	for _, k := range []string{"time", "msg"} {
		if _, ok := got[k]; ok {
			t.Errorf("key %q should have been renamed: %v", k, got)
		}
	}
	// Keys inside groups belong to the caller and are not renamed.
	if req, _ := got["req"].(map[string]any); req["time"] != "kept" {
		t.Errorf("grouped key renamed: %v", got["req"])
	}
}

func TestParseLevel(t *testing.T) {
	tests := []struct {
		in      string
		want    slog.Level
		wantErr string
	}{
		{in: "DEBUG", want: slog.LevelDebug},
		{in: "info", want: slog.LevelInfo},
		{in: " Warn ", want: slog.LevelWarn},
		{in: "WARNING", want: slog.LevelWarn},
		{in: "ERROR", want: slog.LevelError},
		{in: "", wantErr: `invalid log level "": want DEBUG, INFO, WARN or ERROR`},
		{in: "VERBOSE", wantErr: `invalid log level "VERBOSE": want DEBUG, INFO, WARN or ERROR`},
		{in: "INFO+2", wantErr: `invalid log level "INFO+2"`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := telemetry.ParseLevel(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseLevel(%q) error = %v, want %q", tt.in, err, tt.wantErr)
				}
				if !errors.Is(err, telemetry.ErrInvalidLevel) {
					t.Errorf("error %v is not ErrInvalidLevel", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseLevel(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

// LogAttrs writes what slog.Logger.LogAttrs writes through NewLogger's handler, and nothing
// below the level.
func TestLogAttrsWritesTheLoggersLine(t *testing.T) {
	var viaSlog, viaUs bytes.Buffer
	attrs := []slog.Attr{slog.String(telemetry.AttrMessageID, "m1"), slog.Int(telemetry.AttrReceiveCount, 2)}
	telemetry.NewLogger(&viaSlog, slog.LevelInfo).With("service", "svc").LogAttrs(context.Background(), slog.LevelWarn, "record outcome", attrs...)
	telemetry.LogAttrs(context.Background(), telemetry.NewLogger(&viaUs, slog.LevelInfo).With("service", "svc"), slog.LevelWarn, "record outcome", attrs...)
	strip := func(b *bytes.Buffer) string { // the timestamps differ
		var m map[string]any
		if err := json.Unmarshal(b.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", b.String(), err)
		}
		if _, ok := m["timestamp"].(string); !ok {
			t.Errorf("line %q has no timestamp", b.String())
		}
		delete(m, "timestamp")
		out, _ := json.Marshal(m)
		return string(out)
	}
	if got, want := strip(&viaUs), strip(&viaSlog); got != want {
		t.Errorf("LogAttrs line = %s, want %s", got, want)
	}
	var below bytes.Buffer
	telemetry.LogAttrs(context.Background(), telemetry.NewLogger(&below, slog.LevelWarn), slog.LevelInfo, "dropped", attrs...)
	if below.Len() != 0 {
		t.Errorf("INFO line under a WARN logger: %q, want nothing", below.String())
	}
}
