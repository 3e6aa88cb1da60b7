package settings

// Settings of the distributed crawl on Redis that batch a worker's round
// trips (package redisjob, docs/distributed.md "Cost").
func init() {
	for _, d := range []Def{
		{Name: "REDIS_POP_INTERVAL", Type: NonNegative(Float), Default: 0.05, Doc: "Seconds a worker that took every ready request waits before asking Redis again (drawn between half and 1.5 times it): requests that become ready meanwhile leave together in one round trip, each at most this much after its delay ended (0 = ask whenever a slot frees)."},
		{Name: "REDIS_FLUSH_INTERVAL", Type: NonNegative(Float), Default: 0.05, Doc: "Shortest time in seconds between two of a worker's writes of acknowledgements, new requests and send times to Redis: what accumulates meanwhile goes in one round trip (0 = write as soon as the previous write returned)."},
	} {
		Register(d)
	}
}
