//go:build !linux

package service

import "syscall"

// childAttr puts a job in its own process group (a Ctrl-C at the service's
// terminal reaches the service only, which stops its jobs itself).
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
