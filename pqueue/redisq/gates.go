package redisq

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/gocrawl/gocrawl/throttling"
)

// Gates is where the frontier gets the parameters of the scopes' gates
// from: the scopes' policies (throttling.Policy, run in Go; the throttler
// in shared mode implements it).
type Gates interface {
	// InitialParams returns the parameters of a scope in its configured
	// state, written with the first request of a scope the job has never
	// seen (if no worker has created its gate meanwhile).
	InitialParams(scope string) throttling.GateParams
	// RefreshScope brings scope's parameters up to date from its policy:
	// its gate is missing, or stale (its ValidUntil has passed, or its OK
	// counter reached ValidUntilOK).
	RefreshScope(ctx context.Context, scope string) error
}

// encodeParams returns the "d,jl,jh,c,bu,q,w,vu,vo,sl,su" form the scripts read
// (times in Unix milliseconds, 0 for none; a ValidUntil before 1970, which
// a policy gives before its first tick, is stale at once).
func encodeParams(p throttling.GateParams) string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	ms := func(t time.Time) string {
		if t.IsZero() {
			return "0"
		}
		if t.UnixMicro() < 1000 {
			return "1"
		}
		return msString(t)
	}
	return strings.Join([]string{
		f(float64(p.Delay) / float64(time.Millisecond)), f(p.JitterLo), f(p.JitterHi), strconv.Itoa(p.Concurrency),
		ms(p.BlockedUntil), f(p.Quota), f(float64(p.Window) / float64(time.Millisecond)), ms(p.ValidUntil),
		strconv.FormatInt(p.ValidUntilOK, 10), strconv.FormatInt(p.SendLimit, 10), ms(p.SendLimitUntil),
	}, ",")
}

// decodeParams reads the parameters of a gate hash.
func decodeParams(v map[string]string) throttling.GateParams {
	n := func(k string) float64 { x, _ := strconv.ParseFloat(v[k], 64); return x }
	t := func(k string) time.Time {
		if x := n(k); x > 1 {
			return msTime(x)
		}
		return time.Time{}
	}
	return throttling.GateParams{Delay: msDuration(n("d")), JitterLo: n("jl"), JitterHi: n("jh"), Concurrency: int(n("c")),
		BlockedUntil: t("bu"), Quota: n("q"), Window: msDuration(n("w")), ValidUntil: t("vu"), ValidUntilOK: int64(n("vo")),
		SendLimit: int64(n("sl")), SendLimitUntil: t("su")}
}

// decodeState reads the state and counters of a gate hash.
func decodeState(v map[string]string) throttling.GateState {
	n := func(k string) float64 { x, _ := strconv.ParseFloat(v[k], 64); return x }
	i := func(k string) int64 { return int64(n(k)) }
	t := func(k string) time.Time {
		if x := n(k); x > 0 {
			return msTime(x)
		}
		return time.Time{}
	}
	s := throttling.GateState{Active: int(i("a")), LastSent: t("ls"), JitterF: n("jf"), QuotaUsed: n("qu"), WindowStart: t("ws"),
		Sends: i("ns"), OK: i("ok"), Refused: i("rf"), Other: i("ot"), LatencySum: msDuration(n("lsum")), LatencyN: i("ln"),
		InFlightSeconds: n("ifs"), FullSeconds: n("fs"), AreaAt: t("aa"), BucketStart: t("bs"),
		BucketSends: int(i("bc")), PrevBucketSends: int(i("bp")), Wired: t("lw"), TurnSends: i("nt")}
	if _, ok := v["jf"]; !ok {
		s.JitterF = 1
	}
	// The send before the latest, while the latest is not given back
	// (lr names its reservation until then) and has one (pls is '' after
	// a send in another's turn): the rate controller's gap bounds read it,
	// as from an in-memory gate. A gate written before lw existed has
	// neither lw nor nt: its last send is its wire time, as it was.
	if v["lr"] != "" && v["pls"] != "" {
		s.PrevSent, s.HasPrev = t("pls"), true
	}
	if s.Wired.Before(s.LastSent) {
		s.Wired = time.Time{} // not reported (lw 0)
	}
	return s
}

// classLetters encodes a request's outcome per scope for the scripts: one
// letter per scope, in the order of its scopes.
func classLetters(classes []throttling.OutcomeClass) string {
	b := make([]byte, len(classes))
	for i, c := range classes {
		switch c {
		case throttling.OutcomeOK:
			b[i] = 'o'
		case throttling.OutcomeRefused:
			b[i] = 'r'
		case throttling.OutcomeNotSent:
			b[i] = 'u'
		default:
			b[i] = 't'
		}
	}
	return string(b)
}
