package main

import (
	"bufio"
	"encoding/json"
	"os"
	"time"
)

// dumpHost is one line of -dump: a host's arrivals, in seconds from the
// crawler's start, with what the server did with each.
type dumpHost struct {
	Host     int         `json:"host"`
	Class    string      `json:"class"`
	Arrivals []dumpEntry `json:"arrivals"`
}

type dumpEntry struct {
	// At is when the handler started; Wire when the request reached the
	// server's socket, Accepted when its connection was accepted (the
	// first request of a connection only), in seconds from the start.
	At       float64 `json:"t"`
	Wire     float64 `json:"wire,omitempty"`
	Accepted float64 `json:"accepted,omitempty"`
	Robots   bool    `json:"robots,omitempty"`
	Fresh    bool    `json:"fresh,omitempty"`
	Refused  bool    `json:"refused,omitempty"`
}

// dump writes every host's arrivals to path as JSON lines (one host a
// line), for a closer look at a run than the report gives: the gaps of one
// host, when its refusals came.
func (s *site) dump(path string, start time.Time) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, h := range s.hosts {
		h.mu.Lock()
		d := dumpHost{Host: h.i, Class: h.class, Arrivals: make([]dumpEntry, len(h.reqs))}
		for k, a := range h.reqs {
			d.Arrivals[k] = dumpEntry{At: a.at.Sub(start).Seconds(), Robots: a.robots, Fresh: a.fresh, Refused: a.refused}
			if !a.wire.IsZero() {
				d.Arrivals[k].Wire = a.wire.Sub(start).Seconds()
			}
			if !a.accepted.IsZero() {
				d.Arrivals[k].Accepted = a.accepted.Sub(start).Seconds()
			}
		}
		h.mu.Unlock()
		if err := enc.Encode(d); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
