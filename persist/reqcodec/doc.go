// Package reqcodec encodes a spider.Request into bytes and back: the one
// record format of every persistent queue (JOBDIR's Pebble store, the
// Redis frontier and job, the spill queue of a crawl without JOBDIR).
//
// A record starts with CodecVersion; callbacks and errbacks are stored by
// the names of the spider's methods and resolved again when the record is
// decoded, so a Codec is made for one spider (Codec{Spider: sp}). Values
// that cannot be stored (a func in meta, a callback that is not a method
// of the spider) fail Encode with ErrUnpersistable; a record of another
// version or a damaged one fails Decode with ErrCodecVersion or
// ErrCorruptRecord, never with a partly filled request.
package reqcodec
