package scheduler

import (
	"errors"
	"fmt"

	"github.com/gocrawl/gocrawl/settings"
)

// SpillStorage is the name package spillq registers its storage under
// (RegisterStorage): the queue of a crawl without a job (JOBDIR,
// REDIS_URL) that keeps SCHEDULER_MEMORY_MAX_REQUESTS requests in memory
// and spills the rest to a temporary Pebble database. The gocrawl command
// and every cli.Main program import it.
const SpillStorage = "spill"

// SpillImport is the package whose import registers SpillStorage.
const SpillImport = "github.com/gocrawl/gocrawl/pqueue/spillq"

// ErrNoSpillStore is the kind of the error of a crawl whose settings ask
// for a spilling queue in a program that did not import package spillq.
var ErrNoSpillStore = errors.New("no spill store linked into this program")

// checkSpill is the rule for a program that did not link a spill store,
// applied when no registered storage applies: the default
// SCHEDULER_MEMORY_MAX_REQUESTS keeps every queued request in memory (as
// the setting's 0 does; a program built on the engine alone does not
// write to disk behind its author's back), while a value set on purpose (a
// settings file, the spider, the environment, the command line) is an
// error naming the package to import, so a bound asked for is never
// silently ignored.
func checkSpill(d Deps) error {
	limit := d.Settings.Int("SCHEDULER_MEMORY_MAX_REQUESTS")
	if limit <= 0 || storages.Has(SpillStorage) {
		return nil
	}
	v, ok := d.Settings.Origin("SCHEDULER_MEMORY_MAX_REQUESTS")
	if !ok || v.Source == settings.SourceDefault {
		d.Log.Debug().Int("SCHEDULER_MEMORY_MAX_REQUESTS", limit).
			Msg("scheduler queue: no spill store linked (package spillq), every queued request stays in memory")
		return nil
	}
	from := v.Source.String()
	if v.Origin != "" {
		from = v.Origin
	}
	return fmt.Errorf("SCHEDULER_MEMORY_MAX_REQUESTS (%d, from %s) asks to spill the queue to disk: %w; add the import\n\timport _ %q\nto the program (the gocrawl command and cli.Main programs have it), or set it to 0 to keep every queued request in memory",
		limit, from, ErrNoSpillStore, SpillImport)
}
