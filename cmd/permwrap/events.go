package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/events"
)

// Decision events (docs/teams.md, "Decision events"): the review log's
// records also sent to journald, syslog or an OpenTelemetry collector,
// as the policy's "events" and permwrap's own OTEL_* variables say.

// startEvents starts the sinks in force and sets them as the log's tee
// in opts; nil when none is. Warnings (an ignored variable) are printed.
func startEvents(s engine.EventsSettings, opts *authority.LogOptions, stderr io.Writer) (*events.Dispatcher, error) {
	cfg, warns, err := events.Resolve(s, os.Getenv, version())
	for _, w := range warns {
		fmt.Fprintln(stderr, "permwrap: warning: events:", w)
	}
	if err != nil {
		return nil, err
	}
	d, err := events.New(cfg)
	if err != nil || d == nil {
		return nil, err
	}
	opts.Tee = d
	return d, nil
}

// reportEventDrops says, as the run ends, what the sinks dropped (the
// log closed them: its last record counts the same).
func reportEventDrops(stderr io.Writer, d *events.Dispatcher) {
	if d == nil {
		return
	}
	var parts []string
	var total int64
	for _, name := range d.Sinks() {
		if n := d.Dropped()[name]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", name, n))
			total += n
		}
	}
	if total > 0 {
		fmt.Fprintf(stderr, "permwrap: events: %d record(s) were not sent (%s); the review log has them all and an events.dropped record\n", total, strings.Join(parts, ", "))
	}
}

// printEventSinks prints the sinks in force (permwrap check); header
// values are never shown.
func printEventSinks(w io.Writer, s engine.EventsSettings) {
	cfg, _, err := events.Resolve(s, os.Getenv, version())
	if err != nil {
		fmt.Fprintln(w, "events: error:", err)
		return
	}
	for _, line := range cfg.Describe() {
		fmt.Fprintln(w, "events:", line)
	}
}
