package engine

// Built-in components that register themselves by name in an init
// function; importing them here links them into every program that runs
// an Engine, so settings can name them.
import (
	_ "github.com/gocrawl/gocrawl/robots" // "RobotsTxt" downloader middleware
)
