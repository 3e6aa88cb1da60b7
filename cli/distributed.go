package cli

import (
	"context"
	"errors"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/persist/redisjob"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// openShared joins the distributed job of REDIS_URL, or returns nil when
// REDIS_URL is empty. A job or settings that cannot be used (Redis
// unreachable, another spider's job, JOBDIR also set, a custom scope
// manager...) is a usage error: exit status 2, nothing started.
func openShared(ctx context.Context, s *settings.Settings, sp spider.Spider, log zerolog.Logger) (*redisjob.Job, error) {
	if s.String("REDIS_URL") == "" {
		return nil, nil
	}
	j, err := redisjob.Open(ctx, s, sp, log)
	if err != nil {
		if errors.Is(err, redisjob.ErrBadJob) {
			return nil, UsageError(err)
		}
		return nil, err
	}
	return j, nil
}

// checkJobSettings refuses JOBDIR and REDIS_URL together before either is
// opened.
func checkJobSettings(s *settings.Settings) error {
	if s.String("JOBDIR") != "" && s.String("REDIS_URL") != "" {
		return UsageErrorf("JOBDIR and REDIS_URL cannot be used together: a job is kept either in a job directory (JOBDIR) " +
			"or in Redis, shared by workers (REDIS_URL); unset one of them")
	}
	return nil
}
