package service

import "syscall"

// childAttr puts a job in its own process group (a Ctrl-C at the service's
// terminal reaches the service only, which stops its jobs itself) and asks
// Linux to send it SIGTERM if the service dies, so that the crawl saves its
// state and a restarted service can resume it.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
