package redisq

import (
	"context"
	"embed"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua
var luaFS embed.FS

// script is one Lua script of a shard: lib.lua followed by its body. It
// runs with EVALSHA and falls back to EVAL when the server does not know
// it (a restarted or new node), as redis.Script does.
type script struct {
	name string
	src  string
	*redis.Script
}

// The scripts, by file name (see each file's header for its arguments).
var (
	scriptApply   = load("apply")
	scriptPop     = load("pop")
	scriptAdmit   = load("admit")
	scriptRenew   = load("renew")
	scriptReserve = load("reserve")
	scriptPromote = load("promote")
	scriptReclaim = load("reclaim")
	scriptCounts  = load("counts")
	scriptPRead   = load("pread")
	scriptPWrite  = load("pwrite")
	scriptSeen    = load("seen")
	scriptForget  = load("forget")
	scriptRelease = load("release")
	scriptRobots  = load("robots")
)

func load(name string) script {
	lib, err := luaFS.ReadFile("lua/lib.lua")
	if err != nil {
		panic(err)
	}
	body, err := luaFS.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic(err)
	}
	src := string(lib) + "\n" + string(body)
	return script{name: name, src: src, Script: redis.NewScript(src)}
}

var allScripts = []script{scriptApply, scriptPop, scriptAdmit, scriptRenew, scriptReserve, scriptPromote,
	scriptReclaim, scriptCounts, scriptPRead, scriptPWrite, scriptSeen, scriptForget, scriptRelease, scriptRobots}

// ScriptName returns the name of the script whose SHA1 is sha ("pop",
// "apply", ...), or "" for another. Round-trip accounting uses it to
// label EVALSHA commands.
func ScriptName(sha string) string {
	for _, s := range allScripts {
		if s.Hash() == sha {
			return s.name
		}
	}
	return ""
}

// CommandName labels a command for round-trip accounting: the script name
// of an EVALSHA or EVAL, else the command's name in lower case.
func CommandName(cmd redis.Cmder) string {
	name := strings.ToLower(cmd.Name())
	args := cmd.Args()
	if (name == "evalsha" || name == "evalsha_ro") && len(args) > 1 {
		if n := ScriptName(fmt.Sprint(args[1])); n != "" {
			return n
		}
	}
	if name == "eval" && len(args) > 1 {
		for _, s := range allScripts {
			if fmt.Sprint(args[1]) == s.src {
				return s.name
			}
		}
	}
	return name
}

// run runs s on shard k of l with args.
func (s script) run(ctx context.Context, c redis.Scripter, l *Layout, k int, args ...any) *redis.Cmd {
	return s.Run(ctx, c, []string{l.routeKey(k)}, args...)
}
