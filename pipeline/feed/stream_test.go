package feed

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestAppendReadsOnlyTheEnds: appending to a large file reads its first
// and last bytes only. The file is sparse (holes read as zeros); reading
// it whole would take its full size in memory and time.
func TestAppendReadsOnlyTheEnds(t *testing.T) {
	for _, ext := range []string{"jsonl", "csv", "json"} {
		t.Run(ext, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "big."+ext)
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			head, tail := "", "\n"
			switch ext {
			case "csv":
				head = "n\n"
			case "json":
				head, tail = "[\n", `{"n":0}`+"\n]\n"
			}
			const size = 64 << 30 // 64 GiB, sparse
			f.WriteString(head)
			if ext == "json" {
				// JSON needs blanks, not zeros, between the items: a
				// region of spaces just before the last item.
				f.WriteAt(bytes.Repeat([]byte(" "), 1<<20), size-1<<20)
			}
			f.WriteAt([]byte(tail), size)
			f.Close()
			start := time.Now()
			ex, err := New(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := ex.Check(); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if err := ex.Open(ctx, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := ex.ProcessItem(ctx, map[string]any{"n": 7}); err != nil {
				t.Fatal(err)
			}
			if err := ex.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("appending took %v: was the file read?", d)
			}
			st, _ := os.Stat(path)
			g, _ := os.Open(path)
			defer g.Close()
			end := make([]byte, min(st.Size(), 64))
			g.ReadAt(end, st.Size()-int64(len(end)))
			if !bytes.Contains(end, []byte("7")) {
				t.Errorf("the file ends with %q", end)
			}
			if ext == "json" && !bytes.HasSuffix(bytes.TrimSpace(end), []byte(`{"n":7}`+"\n]")) {
				t.Errorf("the array does not end with the new item: %q", end)
			}
		})
	}
}

func TestStreamToDevice(t *testing.T) {
	for _, f := range Formats {
		ex, err := New("/dev/null", Options{Format: f})
		if err != nil {
			t.Fatal(err)
		}
		ex.ResumeAt(1 << 40) // ignored for a stream
		if err := ex.Check(); err != nil {
			t.Fatalf("%s: Check: %v", f, err)
		}
		ctx := context.Background()
		if err := ex.Open(ctx, nil); err != nil {
			t.Fatalf("%s: Open: %v", f, err)
		}
		ex.ProcessItem(ctx, map[string]any{"n": 1})
		if err := ex.Close(ctx); err != nil {
			t.Fatalf("%s: Close: %v", f, err)
		}
	}
}

func TestStreamToFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "items.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	// No reader: refused at once, never blocking.
	ex, _ := New(fifo, Options{})
	done := make(chan error, 1)
	go func() { done <- ex.Check() }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "no process is reading") {
			t.Fatalf("Check without a reader: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Check blocked on a FIFO without a reader")
	}
	// With a reader: a valid JSON array, and Check's open is the one used
	// (closing it would have ended the reader's input).
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	ex, _ = New(fifo, Options{})
	if err := ex.Check(); err != nil {
		t.Fatal(err)
	}
	go func() {
		syscall.SetNonblock(int(r.Fd()), false)
		b, _ := io.ReadAll(r)
		got <- b
	}()
	ctx := context.Background()
	if err := ex.Open(ctx, nil); err != nil {
		t.Fatal(err)
	}
	ex.ProcessItem(ctx, map[string]any{"n": 1})
	ex.ProcessItem(ctx, map[string]any{"n": 2})
	if err := ex.Close(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case b := <-got:
		var arr []map[string]int
		if err := json.Unmarshal(b, &arr); err != nil || len(arr) != 2 {
			t.Fatalf("the reader got %q (%v)", b, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the reader got no EOF")
	}
}

// TestStreamToFullDevice: writing to /dev/full fails with a clear error
// instead of reading the device until memory runs out.
func TestStreamToFullDevice(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	ex, _ := New("/dev/full", Options{Format: JSONLines, FlushInterval: -1})
	if err := ex.Check(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := ex.Open(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ex.ProcessItem(ctx, map[string]any{"n": 1}); err == nil || !strings.Contains(err.Error(), "no space") {
		t.Errorf("writing to /dev/full: %v", err)
	}
	ex.Close(ctx)
}
