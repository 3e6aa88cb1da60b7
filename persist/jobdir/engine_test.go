package jobdir_test

import (
	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/persist/jobdir"
)

// A job directory is the engine's Job (engine.Options.Job).
var _ engine.Job = (*jobdir.Job)(nil)
