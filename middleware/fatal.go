package middleware

import "fmt"

// FatalError is the error of a downloader middleware that cannot go on
// (its archive's disk is full): the engine stops the crawl, with Reason
// as the crawl's finish reason, instead of sending more requests whose
// downloads would be lost. The request it fails stays queued, so a crawl
// with a job directory (JOBDIR) sends it again when it resumes.
type FatalError struct {
	// Reason is the crawl's finish reason ("warc_error").
	Reason string
	Err    error
}

func (e *FatalError) Error() string { return fmt.Sprintf("%s: %v", e.Reason, e.Err) }

func (e *FatalError) Unwrap() error { return e.Err }
