// Package acked is the -acked file of the test clients: the ids
// (`<prefix>-<n>`) of the events the server acknowledged, one a line,
// appended as the ACKs arrive, so a test can tell what was acknowledged
// before a kill.
package acked

import (
	"fmt"
	"os"
)

// Log appends acknowledged ids; a nil Log (no -acked file) writes nothing.
type Log struct {
	f      *os.File
	prefix string
}

// Open appends to path; nil when path is empty.
func Open(path, prefix string) (*Log, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	return &Log{f: f, prefix: prefix}, nil
}

// Add records the ids from..to-1 as acknowledged.
func (l *Log) Add(from, to int) {
	if l == nil {
		return
	}
	for i := from; i < to; i++ {
		fmt.Fprintf(l.f, "%s-%d\n", l.prefix, i)
	}
}

// Sync flushes what was added to disk.
func (l *Log) Sync() {
	if l != nil {
		_ = l.f.Sync()
	}
}
