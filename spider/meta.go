package spider

// MetaRetryTimes is the request meta key (an int) that counts the retries
// made so far: the retry middleware sets it on each retry it schedules, and
// the metrics observer counts a request with retry_times > 0 as a retry,
// not as a first attempt. Numbers may come back as float64 from a
// persistent queue.
const MetaRetryTimes = "retry_times"
