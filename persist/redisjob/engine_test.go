package redisjob_test

import (
	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/persist/redisjob"
)

// A distributed job is the engine's Shared (engine.Options.Shared).
var _ engine.Shared = (*redisjob.Job)(nil)
