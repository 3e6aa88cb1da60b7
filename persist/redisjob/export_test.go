package redisjob

import "github.com/redis/go-redis/v9"

// SetTestHooks adds hooks to the connections Open makes from now on.
func SetTestHooks(h ...redis.Hook) { testHooks = h }
