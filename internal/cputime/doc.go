// Package cputime reads the process's CPU time for benchmarks, which report
// it per operation next to the wall-clock time that other work on a shared
// machine inflates.
package cputime
