package warc

import (
	"container/heap"
	"encoding/binary"
	"strings"
)

// textCodes are the preset codes of small records: dynamic Huffman codes
// (block type 2), built once from the symbols of a typical record (WARC
// header fields, HTTP head, an HTML page) with every symbol given a code,
// so that any record can be written with them. Their table opens every
// block (about 60 bytes); on the text of a page they spend about 2 bits
// less per literal than deflate's fixed codes.
var textCodes = newTextCodes()

func newTextCodes() *codes {
	var d deflater
	var lit [286]int
	var dist [30]int
	d.symbols(trainingRecord(), &lit, &dist)
	// Every symbol gets a code, the ones never seen the longest.
	for i := range lit {
		lit[i] = lit[i]*2 + 1
	}
	for i := range dist {
		dist[i] = dist[i]*8 + 1
	}
	litLens := huffmanLengths(lit[:], 15)
	distLens := huffmanLengths(dist[:], 15)
	c := &codes{}
	c.set(litLens, litLens, distLens, distLens)
	c.head, c.headAcc, c.headN = dynamicHeader(litLens, distLens)
	return c
}

// symbols counts the literal/length and distance symbols of src as
// encode finds them (the same search, without the writing).
func (d *deflater) symbols(src []byte, lit *[286]int, dist *[30]int) {
	var lenSym [maxMatch + 1]int
	for sym := range lengthBase {
		lo, hi := int(lengthBase[sym]), int(lengthBase[sym])+1<<lengthExtra[sym]
		for l := lo; l < hi && l <= maxMatch; l++ {
			lenSym[l] = 257 + sym
		}
	}
	clear(d.table[:])
	emit := 0
	limit := len(src) - 8
	for s := 0; s < limit; {
		cv := binary.LittleEndian.Uint32(src[s:])
		h := hash4(cv)
		cand := int(d.table[h])
		d.table[h] = int32(s)
		if cand >= s || s-cand > maxDistance || binary.LittleEndian.Uint32(src[cand:]) != cv {
			s += 1 + (s-emit)>>5
			continue
		}
		for cand > 0 && s > emit && src[cand-1] == src[s-1] {
			cand--
			s--
		}
		for _, b := range src[emit:s] {
			lit[b]++
		}
		n := minMatch + matchLen(src[s+minMatch:], src[cand+minMatch:])
		dsym := distHigh[(s-cand-1)>>7]
		if s-cand <= 256 {
			dsym = distLow[s-cand-1]
		}
		s += n
		for n > 0 {
			m := min(n, maxMatch)
			if n-m > 0 && n-m < 3 {
				m = n - 3
			}
			lit[lenSym[m]]++
			dist[dsym]++
			n -= m
		}
		emit = s
		if s < limit {
			d.table[hash4(binary.LittleEndian.Uint32(src[s-2:]))] = int32(s - 2)
		}
	}
	for _, b := range src[emit:] {
		lit[b]++
	}
	lit[256]++
}

// huffmanLengths returns the code lengths of a Huffman code of freq (all
// above 0), at most limit bits long: the frequencies are flattened until
// the code fits.
func huffmanLengths(freq []int, limit uint8) []uint8 {
	f := append([]int(nil), freq...)
	for {
		lens := huffman(f)
		longest := uint8(0)
		for _, l := range lens {
			longest = max(longest, l)
		}
		if longest <= limit {
			return lens
		}
		for i := range f {
			if f[i] > 0 {
				f[i] = f[i]/2 + 1
			}
		}
	}
}

// huffman returns the code lengths of a Huffman code of freq; symbols of
// frequency 0 get none (length 0).
func huffman(freq []int) []uint8 {
	n := len(freq)
	parent := make([]int, 2*n)
	h := &nodeHeap{}
	for i, f := range freq {
		if f > 0 {
			h.items = append(h.items, node{f, i})
		}
	}
	lens := make([]uint8, n)
	if len(h.items) == 1 {
		lens[h.items[0].id] = 1
		return lens
	}
	heap.Init(h)
	next := n
	for h.Len() > 1 {
		a, b := heap.Pop(h).(node), heap.Pop(h).(node)
		parent[a.id], parent[b.id] = next, next
		heap.Push(h, node{a.f + b.f, next})
		next++
	}
	root := next - 1
	for i, f := range freq {
		if f == 0 {
			continue
		}
		depth := uint8(0)
		for j := i; j != root; j = parent[j] {
			depth++
		}
		lens[i] = depth
	}
	return lens
}

type node struct{ f, id int }

type nodeHeap struct{ items []node }

func (h *nodeHeap) Len() int { return len(h.items) }
func (h *nodeHeap) Less(i, j int) bool {
	if h.items[i].f != h.items[j].f {
		return h.items[i].f < h.items[j].f
	}
	return h.items[i].id < h.items[j].id
}
func (h *nodeHeap) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *nodeHeap) Push(x any)    { h.items = append(h.items, x.(node)) }
func (h *nodeHeap) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}

// codegenOrder is the order in which the code length code's lengths are
// written (RFC 1951, 3.2.7).
var codegenOrder = [19]int{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}

// dynamicHeader returns the opening of a final block of dynamic codes of
// lengths lit (286) and dist (30): its whole bytes, and the bits left.
func dynamicHeader(lit, dist []uint8) ([]byte, uint64, uint) {
	// The code lengths, run-length encoded: (symbol, extra bits) pairs.
	all := append(append([]uint8(nil), lit...), dist...)
	type cg struct{ sym, extra uint8 }
	var seq []cg
	for i := 0; i < len(all); {
		v, r := all[i], 1
		for i+r < len(all) && all[i+r] == v {
			r++
		}
		i += r
		if v == 0 {
			for r >= 11 {
				k := min(r, 138)
				seq, r = append(seq, cg{18, uint8(k - 11)}), r-k
			}
			if r >= 3 {
				seq, r = append(seq, cg{17, uint8(r - 3)}), 0
			}
		} else {
			seq, r = append(seq, cg{v, 0}), r-1
			for r >= 3 {
				k := min(r, 6)
				seq, r = append(seq, cg{16, uint8(k - 3)}), r-k
			}
		}
		for ; r > 0; r-- {
			seq = append(seq, cg{v, 0})
		}
	}
	var freq [19]int
	for _, s := range seq {
		freq[s.sym]++
	}
	cgLens := huffmanLengths(freq[:], 7)
	cgCodes := canonical(cgLens)
	hclen := 19
	for hclen > 4 && cgLens[codegenOrder[hclen-1]] == 0 {
		hclen--
	}
	out, o := make([]byte, 512), 0
	acc, nb := uint64(0), uint(0)
	put := func(v uint64, n uint) { o, acc, nb = putBits(out, o, acc, nb, v, n) }
	put(1|2<<1, 3) // BFINAL = 1, BTYPE = 10
	put(uint64(len(lit)-257), 5)
	put(uint64(len(dist)-1), 5)
	put(uint64(hclen-4), 4)
	for _, sym := range codegenOrder[:hclen] {
		put(uint64(cgLens[sym]), 3)
	}
	extra := [19]uint{16: 2, 17: 3, 18: 7}
	for _, s := range seq {
		c := cgCodes[s.sym]
		put(c.bits(), c.len())
		put(uint64(s.extra), extra[s.sym])
	}
	for nb >= 8 {
		out[o] = byte(acc)
		o, acc, nb = o+1, acc>>8, nb-8
	}
	return out[:o], acc, nb
}

// trainingRecord is the record textCodes are built from: a response
// record of an ordinary web page, its header fields and markup.
func trainingRecord() []byte {
	var b strings.Builder
	b.WriteString("WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:5d1c3e2a-9f47-4b8e-a0c6-3e7f18d2b95c>\r\n" +
		"WARC-Date: 2024-05-17T09:41:27.318204Z\r\nWARC-Target-URI: https://www.example.org/news/2024/05/city-council-approves-new-library-budget\r\n" +
		"WARC-Concurrent-To: <urn:uuid:b7e04a91-26d3-4f5c-8e19-c04d7a3b6f82>\r\nWARC-IP-Address: 93.184.216.34\r\n" +
		"Content-Type: application/http;msgtype=response\r\nWARC-Payload-Digest: sha1:3QJZ7XKMB4WLNPD2VHGT6YRC5SAFUE2O\r\n" +
		"WARC-Block-Digest: sha1:N6BSKW4XQ2ZJFH7TDLCY3RVMGPA5UE7I\r\nContent-Length: 9218\r\n\r\n" +
		"HTTP/1.1 200 OK\r\nCache-Control: max-age=600, public\r\nContent-Length: 8874\r\nContent-Type: text/html; charset=utf-8\r\n" +
		"Date: Fri, 17 May 2024 09:41:27 GMT\r\nEtag: \"6647251e-22aa\"\r\nLast-Modified: Fri, 17 May 2024 08:12:14 GMT\r\nServer: nginx/1.24.0\r\n" +
		"Vary: Accept-Encoding\r\n\r\n")
	b.WriteString(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>City council approves new library budget | Example News</title>
<link rel="stylesheet" href="/static/css/main.3f9a2c.css">
<link rel="canonical" href="https://www.example.org/news/2024/05/city-council-approves-new-library-budget">
<script src="/static/js/app.81d4e7.js" defer></script>
</head>
<body class="article">
<header class="site-header"><a class="logo" href="/">Example News</a>
<nav><ul class="menu">
<li><a href="/news/">News</a></li>
<li><a href="/sports/">Sports</a></li>
<li><a href="/business/">Business</a></li>
<li><a href="/opinion/">Opinion</a></li>
<li><a href="/about/contact">Contact us</a></li>
</ul></nav></header>
<main id="content">
<article>
<h1>City council approves new library budget</h1>
<p class="byline">By Jane Smith, May 17, 2024</p>
<p>The city council voted on Thursday evening to approve a budget of $4.2 million for the new central library,
ending a debate that lasted more than two years. The building, which will replace the old library on Main Street,
is expected to open in the spring of 2026 and will include a children's wing, study rooms and a small theater.</p>
<p>"This is a great day for our community," said the mayor after the vote. "A library is where people of all ages
come to learn, to read and to meet each other." Several residents spoke in favor of the project during the public
comment period, while others asked how the city would pay for the maintenance of the new building.</p>
<h2>What happens next</h2>
<p>Construction is scheduled to begin in September. The council also asked the planning department to publish a
report on parking and traffic around the site before the end of the year.</p>
</article>
<aside class="related"><h3>Related articles</h3><ul>
<li><a href="/news/2024/04/library-design-unveiled">Library design unveiled at public meeting</a></li>
<li><a href="/news/2024/03/budget-hearing-draws-crowd">Budget hearing draws a large crowd</a></li>
<li><a href="/news/2024/02/schools-plan-new-reading-program">Schools plan a new reading program</a></li>
</ul></aside>
</main>
<footer class="site-footer"><p>&copy; 2024 Example News. All rights reserved.</p>
<p><a href="/privacy">Privacy policy</a> | <a href="/terms">Terms of use</a></p></footer>
</body>
</html>
`)
	b.WriteString("\r\n\r\n")
	return []byte(b.String())
}
