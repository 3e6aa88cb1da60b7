package warc

import (
	"encoding/binary"
	"hash/crc32"
	"math/bits"
	"runtime"
	"sync"
)

// This file holds the gzip members of small records. A record of up to
// presetMax bytes is compressed here, in one deflate block whose Huffman
// codes are set in advance (textCodes, built once from a typical record;
// deflate's fixed codes for bytes unlike text), instead of by the general
// compressor, which builds the codes of every block from its symbols: for
// a page of a few KiB, building those codes costs more than finding the
// repeated strings. The preset codes cost nothing to use, and lose a few
// percent of the compressed size (a tenth on S1's 4 KiB pages). Larger records amortize
// the building over more bytes and go to the general compressor
// (klauspost/compress), as do the levels above 1.

// presetMax is the size of the largest record compressed with preset
// codes; larger ones get codes of their own.
const presetMax = 16 << 10

// Deflate's limits (RFC 1951).
const (
	maxMatch    = 258
	minMatch    = 4 // the shortest match looked for (deflate allows 3)
	maxDistance = 32 << 10
	maxStored   = 65535 // the longest stored block
)

// hcode is a Huffman code as written: its bits reversed (deflate writes
// codes from their first bit, in the low bits of each byte), and its
// length in the bits above 16.
type hcode uint32

func (c hcode) bits() uint64 { return uint64(c & 0xffff) }
func (c hcode) len() uint    { return uint(c >> 16) }

// codes is a deflate block's code set: the literal/length and distance
// codes, and the bits that open a block using them (block header, code
// lengths for a dynamic block).
type codes struct {
	lit  [286]hcode
	dist [30]hcode
	// lens[l] is the code and extra bits of match length l (3 to 258),
	// ready to write; lensLen[l] their length.
	lens    [maxMatch + 1]uint32
	lensLen [maxMatch + 1]uint8
	head    []byte // the whole bytes of the block's opening
	headAcc uint64 // its last bits, less than a byte
	headN   uint
}

// Length and distance symbols: base value and extra bits of each
// (RFC 1951, 3.2.5).
var (
	lengthBase  = [29]uint16{3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258}
	lengthExtra = [29]uint8{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	distBase    = [30]uint16{1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577}
	distExtra   = [30]uint8{0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13}
)

// distLow[d-1] is the distance symbol of d up to 256; distHigh[(d-1)>>7]
// that of a longer one. (Initialized by expression, not in init, so that
// textCodes, built from them, comes after.)
var distLow, distHigh = distTables()

func distTables() (low, high [256]uint8) {
	for sym := range distBase {
		lo, hi := int(distBase[sym]), int(distBase[sym])+1<<distExtra[sym]
		for d := lo; d < hi; d++ {
			if d <= 256 {
				low[d-1] = uint8(sym)
			} else {
				high[(d-1)>>7] = uint8(sym)
			}
		}
	}
	return low, high
}

// fixedCodes are deflate's fixed Huffman codes (block type 1), which need
// no table in the block.
var fixedCodes = func() *codes {
	var lit [288]uint8
	for i := range lit {
		switch {
		case i < 144:
			lit[i] = 8
		case i < 256:
			lit[i] = 9
		case i < 280:
			lit[i] = 7
		default:
			lit[i] = 8
		}
	}
	var dist [30]uint8
	for i := range dist {
		dist[i] = 5
	}
	c := &codes{}
	c.set(lit[:286], lit[:], dist[:], dist[:])
	// BFINAL = 1, BTYPE = 01.
	c.headAcc, c.headN = 1|1<<1, 3
	return c
}()

// set fills c's codes from code lengths: those of the symbols written
// (lit, dist) within the complete sets the lengths are counted over
// (allLit, allDist: the fixed codes define 288 and 32 symbols).
func (c *codes) set(lit, allLit, dist, allDist []uint8) {
	copy(c.lit[:], canonical(allLit)[:len(lit)])
	copy(c.dist[:], canonical(allDist)[:len(dist)])
	for sym := range lengthBase {
		lo := int(lengthBase[sym])
		hi := lo + 1<<lengthExtra[sym]
		if sym == 27 { // 227-257: 258 has a symbol of its own
			hi = 258
		}
		code := c.lit[257+sym]
		for l := lo; l < hi && l <= maxMatch; l++ {
			c.lens[l] = uint32(code.bits()) | uint32(l-lo)<<code.len()
			c.lensLen[l] = uint8(code.len() + uint(lengthExtra[sym]))
		}
	}
}

// canonical returns the canonical Huffman codes of code lengths
// (RFC 1951, 3.2.2), bits reversed as they are written.
func canonical(lens []uint8) []hcode {
	var count [16]uint16
	for _, l := range lens {
		count[l]++
	}
	count[0] = 0
	var next [16]uint16
	code := uint16(0)
	for b := 1; b < 16; b++ {
		code = (code + count[b-1]) << 1
		next[b] = code
	}
	out := make([]hcode, len(lens))
	for i, l := range lens {
		if l == 0 {
			continue
		}
		rev := bits.Reverse16(next[l]) >> (16 - l)
		next[l]++
		out[i] = hcode(uint32(rev) | uint32(l)<<16)
	}
	return out
}

// The hash table of the match finder: positions of earlier 4-byte
// strings, by hash. 1,024 entries find nearly every match of a record of
// a few KiB (a larger table gains under 1 % on 16 KiB), and 4 KiB stay
// in the cache of a core busy with a crawl.
const hashBits = 10

// deflater compresses one record at a time into a gzip member. Its
// table is not cleared between records: an entry of an earlier record
// is told apart by its position, offset by base.
type deflater struct {
	table [1 << hashBits]int32
	base  int32
	rec   []byte // the record, assembled
	out   []byte // its deflate block
	alt   []byte // another one, with other codes
}

func hash4(u uint32) uint32 { return (u * 2654435761) >> (32 - hashBits) }

// encode appends to dst src as one final deflate block with codes c.
func (d *deflater) encode(dst, src []byte, c *codes) []byte {
	dst = append(dst, c.head...)
	// Room for the worst case (every byte a literal of 15 bits at most),
	// so that the bits go to out without growing it.
	o := len(dst)
	if need := o + 2*len(src) + 16; cap(dst) < need {
		dst = append(dst[:cap(dst)], make([]byte, need-cap(dst))...)
	}
	out := dst[:cap(dst)]
	acc, nb := c.headAcc, c.headN // bits not yet in out: fewer than 32
	if d.base > 1<<30 {
		clear(d.table[:])
		d.base = 0
	}
	base := int(d.base)
	d.base += int32(len(src)) + maxDistance + 1 // older entries are out of reach
	emit := 0
	limit := len(src) - 8 // room for the 8-byte loads of matchLen and the hash
	for s := 0; s < limit; {
		cv := binary.LittleEndian.Uint32(src[s:])
		h := hash4(cv)
		cand := int(d.table[h]) - base
		d.table[h] = int32(s + base)
		if cand < 0 || cand >= s || s-cand > maxDistance || binary.LittleEndian.Uint32(src[cand:]) != cv {
			s += 1 + (s-emit)>>5 // fewer probes where nothing matches
			continue
		}
		// Extend the match backward over the pending literals, then
		// forward.
		for cand > 0 && s > emit && src[cand-1] == src[s-1] {
			cand--
			s--
		}
		o, acc, nb = putLiterals(out, o, acc, nb, src[emit:s], c)
		n := minMatch + matchLen(src[s+minMatch:], src[cand+minMatch:])
		dist := s - cand
		dsym := distHigh[(dist-1)>>7]
		if dist <= 256 {
			dsym = distLow[dist-1]
		}
		dc := c.dist[dsym]
		dcode := dc.bits() | uint64(dist-int(distBase[dsym]))<<dc.len()
		dlen := dc.len() + uint(distExtra[dsym])
		s += n
		for n > 0 {
			m := min(n, maxMatch)
			if n-m > 0 && n-m < 3 {
				m = n - 3
			}
			o, acc, nb = putBits(out, o, acc, nb, uint64(c.lens[m]), uint(c.lensLen[m]))
			o, acc, nb = putBits(out, o, acc, nb, dcode, dlen)
			n -= m
		}
		emit = s
		if s < limit {
			d.table[hash4(binary.LittleEndian.Uint32(src[s-2:]))] = int32(s - 2 + base)
		}
	}
	o, acc, nb = putLiterals(out, o, acc, nb, src[emit:], c)
	eob := c.lit[256]
	o, acc, nb = putBits(out, o, acc, nb, eob.bits(), eob.len())
	for ; nb > 0; nb -= min(nb, 8) { // the last byte padded with zeros
		out[o] = byte(acc)
		o++
		acc >>= 8
	}
	return out[:o]
}

// putBits writes the n low bits of v (n at most 32) after the nb bits of
// acc, moving whole words of acc to out[o:]; it returns the new o, acc
// and nb.
func putBits(out []byte, o int, acc uint64, nb uint, v uint64, n uint) (int, uint64, uint) {
	acc |= v << nb
	nb += n
	if nb >= 32 {
		binary.LittleEndian.PutUint32(out[o:], uint32(acc))
		o += 4
		acc >>= 32
		nb -= 32
	}
	return o, acc, nb
}

// putLiterals writes the codes of the bytes lits, as putBits.
func putLiterals(out []byte, o int, acc uint64, nb uint, lits []byte, c *codes) (int, uint64, uint) {
	for _, b := range lits {
		l := c.lit[b]
		o, acc, nb = putBits(out, o, acc, nb, l.bits(), l.len())
	}
	return o, acc, nb
}

// matchLen returns how many bytes a and b share at their start (a is the
// shorter).
func matchLen(a, b []byte) int {
	n := 0
	for len(a)-n >= 8 {
		if x := binary.LittleEndian.Uint64(a[n:]) ^ binary.LittleEndian.Uint64(b[n:]); x != 0 {
			return n + bits.TrailingZeros64(x)>>3
		}
		n += 8
	}
	for n < len(a) && a[n] == b[n] {
		n++
	}
	return n
}

// gzipHeader opens every member: no name, no date, "fastest" compression
// (XFL 4), unknown system.
var gzipHeader = []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 255}

// appendMember appends to dst one gzip member holding the record of
// header h and block parts, its bytes stored as they are (store) or
// compressed with preset codes. It reports false, leaving dst as it was,
// when the record is larger than presetMax.
func appendMember(dst []byte, store bool, h Header, parts ...[]byte) ([]byte, bool) {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	if n > presetMax {
		return dst, false
	}
	d := deflaters.get()
	defer deflaters.put(d)
	d.rec = appendRecord(d.rec[:0], h, parts...)
	if len(d.rec) > presetMax+4<<10 { // a record of very long fields
		return dst, false
	}
	dst = append(dst, gzipHeader...)
	if !store {
		d.out = d.encode(d.out[:0], d.rec, textCodes)
		if len(d.out) > len(d.rec)/2 {
			// Bytes unlike a page's text (a page in a script other than
			// Latin, binary data): the fixed codes may do better.
			d.alt = d.encode(d.alt[:0], d.rec, fixedCodes)
			if len(d.alt) < len(d.out) {
				d.out, d.alt = d.alt, d.out
			}
		}
		if store = len(d.out) > len(d.rec)+5; !store { // else incompressible: stored is smaller
			dst = append(dst, d.out...)
		}
	}
	if store {
		dst = appendStored(dst, d.rec)
	}
	dst = binary.LittleEndian.AppendUint32(dst, crc32.ChecksumIEEE(d.rec))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(d.rec)))
	if cap(d.rec) > 2*presetMax {
		d.rec, d.out, d.alt = nil, nil, nil
	}
	return dst, true
}

// appendStored appends b as deflate stored blocks, the last one final.
func appendStored(dst, b []byte) []byte {
	for {
		n := min(len(b), maxStored)
		final := byte(0)
		if n == len(b) {
			final = 1
		}
		dst = append(dst, final, byte(n), byte(n>>8), ^byte(n), ^byte(n>>8))
		dst = append(dst, b[:n]...)
		if b = b[n:]; final == 1 {
			return dst
		}
	}
}

// deflaters is the free list of deflaters (a 4 KiB table each), as
// compressors is that of the general compressors.
var deflaters = deflaterList{free: make(chan *deflater, runtime.GOMAXPROCS(0)+1)}

type deflaterList struct {
	free  chan *deflater
	spill sync.Pool
}

func (l *deflaterList) get() *deflater {
	select {
	case d := <-l.free:
		return d
	default:
		if d, ok := l.spill.Get().(*deflater); ok {
			return d
		}
		return new(deflater)
	}
}

func (l *deflaterList) put(d *deflater) {
	select {
	case l.free <- d:
	default:
		l.spill.Put(d)
	}
}
