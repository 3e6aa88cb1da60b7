//go:build !unix

package downloader

// raiseOpenFileLimit reports an unknown limit where there is no
// RLIMIT_NOFILE: no connection budget unless DOWNLOAD_MAX_CONNECTIONS sets
// one.
func raiseOpenFileLimit() (cur, before uint64, raised bool, err error) { return 0, 0, false, nil }
