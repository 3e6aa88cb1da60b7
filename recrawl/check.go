package recrawl

import "github.com/gocrawl/gocrawl/settings"

func init() { settings.RegisterCheck("recrawl-records", checkRecords) }

// checkRecords is the records' part of settings.Validate: a recrawl
// (RECRAWL_ENABLED) revisits a job's known URLs, so it needs the job.
func checkRecords(s *settings.Settings) error {
	if s.Bool("RECRAWL_ENABLED") && s.String("JOBDIR") == "" && s.String("REDIS_URL") == "" {
		return settings.Invalid(s, "RECRAWL_ENABLED", "a recrawl revisits the URLs a job knows: set JOBDIR (or REDIS_URL) to the job of the first crawl")
	}
	return nil
}
