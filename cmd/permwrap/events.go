package main

import (
	"fmt"
	"io"
	"os"

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
