// Checks a bourse transparency log with Go's golang.org/x/mod/sumdb/note and
// golang.org/x/mod/sumdb/tlog, an implementation bourse did not write (run by
// tests/it/tlog.rs in GOPATH mode, offline).
//
//	go run verify.go BASE_URL VERIFIER_KEY OLD_CHECKPOINT_FILE INDEX=NEEDLE...
//
// It verifies the newest checkpoint's signature, fetches every entry bundle, rebuilds every
// stored hash with tlog.StoredHashes, compares every served hash tile with tlog.ReadTileData of
// the rebuilt hashes (x/mod's TileHashReader does not re-check every tile it reads), checks the
// root, checks each INDEX's served inclusion proof and that its entry contains NEEDLE, and checks
// that the old checkpoint is consistent with the new one. Then it flips one byte in an entry, a
// tile, a proof and a checkpoint and requires each check to fail. Prints "ok SIZE" at the end.
package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "FAIL: "+format+"\n", args...)
	os.Exit(1)
}

func get(base, path string) []byte {
	resp, err := http.Get(base + path)
	if err != nil {
		fail("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		fail("GET %s: %v", path, err)
	}
	if resp.StatusCode != 200 {
		fail("GET %s: HTTP %d %s", path, resp.StatusCode, body)
	}
	return body
}

type checkpoint struct {
	origin string
	size   int64
	root   tlog.Hash
}

// open verifies a checkpoint note and reads its body (c2sp.org/tlog-checkpoint).
func open(text []byte, verifier note.Verifier) (checkpoint, error) {
	n, err := note.Open(text, note.VerifierList(verifier))
	if err != nil {
		return checkpoint{}, err
	}
	lines := strings.Split(n.Text, "\n")
	if len(lines) < 4 {
		return checkpoint{}, fmt.Errorf("short checkpoint body")
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		return checkpoint{}, err
	}
	raw, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(raw) != 32 {
		return checkpoint{}, fmt.Errorf("bad root hash %q", lines[2])
	}
	var root tlog.Hash
	copy(root[:], raw)
	return checkpoint{lines[0], size, root}, nil
}

// c2sp maps x/mod's sumdb tile path (tile/8/L/N, tile/8/data/N) to C2SP's.
func c2sp(t tlog.Tile) string {
	p := strings.TrimPrefix(t.Path(), "tile/8/")
	if strings.HasPrefix(p, "data/") {
		return "/log/tile/entries/" + strings.TrimPrefix(p, "data/")
	}
	return "/log/tile/" + p
}

// entries parses entry bundles: big-endian uint16 length, then the bytes.
func entries(bundle []byte) ([][]byte, error) {
	var out [][]byte
	for len(bundle) > 0 {
		if len(bundle) < 2 {
			return nil, fmt.Errorf("truncated length")
		}
		n := int(bundle[0])<<8 | int(bundle[1])
		if len(bundle) < 2+n {
			return nil, fmt.Errorf("truncated entry")
		}
		out = append(out, bundle[2:2+n])
		bundle = bundle[2+n:]
	}
	return out, nil
}

// rebuild computes every stored hash of the entries, as x/mod numbers them.
func rebuild(all [][]byte) ([]tlog.Hash, error) {
	var stored []tlog.Hash
	reader := tlog.HashReaderFunc(func(indexes []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(indexes))
		for i, x := range indexes {
			if x >= int64(len(stored)) {
				return nil, fmt.Errorf("hash %d not yet built", x)
			}
			out[i] = stored[x]
		}
		return out, nil
	})
	for n, e := range all {
		hashes, err := tlog.StoredHashes(int64(n), e, reader)
		if err != nil {
			return nil, err
		}
		stored = append(stored, hashes...)
	}
	return stored, nil
}

func readerOf(stored []tlog.Hash) tlog.HashReader {
	return tlog.HashReaderFunc(func(indexes []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(indexes))
		for i, x := range indexes {
			if x >= int64(len(stored)) {
				return nil, fmt.Errorf("no hash %d", x)
			}
			out[i] = stored[x]
		}
		return out, nil
	})
}

// parseProof reads a c2sp.org/tlog-proof: index, hashes, then the checkpoint.
func parseProof(text []byte) (int64, tlog.RecordProof, []byte, error) {
	parts := bytes.SplitN(text, []byte("\n\n"), 2)
	if len(parts) != 2 {
		return 0, nil, nil, fmt.Errorf("no blank line")
	}
	lines := strings.Split(string(parts[0]), "\n")
	if lines[0] != "c2sp.org/tlog-proof@v1" {
		return 0, nil, nil, fmt.Errorf("bad header %q", lines[0])
	}
	lines = lines[1:]
	if strings.HasPrefix(lines[0], "extra ") {
		lines = lines[1:]
	}
	index, err := strconv.ParseInt(strings.TrimPrefix(lines[0], "index "), 10, 64)
	if err != nil {
		return 0, nil, nil, err
	}
	var proof tlog.RecordProof
	for _, l := range lines[1:] {
		raw, err := base64.StdEncoding.DecodeString(l)
		if err != nil || len(raw) != 32 {
			return 0, nil, nil, fmt.Errorf("bad hash %q", l)
		}
		var h tlog.Hash
		copy(h[:], raw)
		proof = append(proof, h)
	}
	return index, proof, parts[1], nil
}

func flip(b []byte, i int) []byte {
	c := append([]byte(nil), b...)
	c[i%len(c)] ^= 0x01
	return c
}

func main() {
	if len(os.Args) < 4 {
		fail("usage: verify BASE_URL VERIFIER_KEY OLD_CHECKPOINT_FILE INDEX=NEEDLE...")
	}
	base, vkey, oldFile := os.Args[1], os.Args[2], os.Args[3]
	verifier, err := note.NewVerifier(vkey)
	if err != nil {
		fail("verifier key: %v", err)
	}
	noteText := get(base, "/log/checkpoint")
	cp, err := open(noteText, verifier)
	if err != nil {
		fail("checkpoint: %v", err)
	}
	if cp.origin != verifier.Name() {
		fail("origin %q is not the key name %q", cp.origin, verifier.Name())
	}

	// Every entry, from the entry bundles.
	var all [][]byte
	for start := int64(0); start < cp.size; start += 256 {
		w := cp.size - start
		if w > 256 {
			w = 256
		}
		t := tlog.Tile{H: 8, L: -1, N: start / 256, W: int(w)}
		got, err := entries(get(base, c2sp(t)))
		if err != nil || int64(len(got)) != w {
			fail("entry bundle %s: %d entries, %v", c2sp(t), len(got), err)
		}
		all = append(all, got...)
	}
	stored, err := rebuild(all)
	if err != nil {
		fail("rebuilding hashes: %v", err)
	}
	reader := readerOf(stored)
	root, err := tlog.TreeHash(cp.size, reader)
	if err != nil || root != cp.root {
		fail("the entries' root %v is not the checkpoint's %v (%v)", root, cp.root, err)
	}

	// Every hash tile the checkpoint needs, compared byte for byte with the rebuilt hashes.
	tiles := tlog.NewTiles(8, 0, cp.size)
	var firstTile []byte
	var firstPath string
	for _, t := range tiles {
		want, err := tlog.ReadTileData(t, reader)
		if err != nil {
			fail("tile %s: %v", c2sp(t), err)
		}
		served := get(base, c2sp(t))
		if !bytes.Equal(served, want) {
			fail("tile %s differs from the rebuilt hashes", c2sp(t))
		}
		if firstTile == nil {
			firstTile, firstPath = served, c2sp(t)
		}
	}

	// Inclusion of sampled entries, with the served proofs.
	var sampleProof []byte
	for _, arg := range os.Args[4:] {
		kv := strings.SplitN(arg, "=", 2)
		index, err := strconv.ParseInt(kv[0], 10, 64)
		if err != nil || index >= cp.size {
			fail("bad sample %q", arg)
		}
		if len(kv) == 2 && !bytes.Contains(all[index], []byte(kv[1])) {
			fail("entry %d does not contain %q", index, kv[1])
		}
		text := get(base, fmt.Sprintf("/log/proof/%d", index))
		got, proof, proofNote, err := parseProof(text)
		if err != nil || got != index {
			fail("proof %d: %v", index, err)
		}
		pcp, err := open(proofNote, verifier)
		if err != nil {
			fail("proof %d's checkpoint: %v", index, err)
		}
		if pcp.size < cp.size {
			// The proof names an older checkpoint: it must be a prefix of this log.
			if r, _ := tlog.TreeHash(pcp.size, reader); r != pcp.root {
				fail("proof %d's checkpoint is not a prefix of the log", index)
			}
		} else if pcp.size > cp.size {
			fail("proof %d names a checkpoint newer than the newest", index)
		}
		if err := tlog.CheckRecord(proof, pcp.size, pcp.root, index, tlog.RecordHash(all[index])); err != nil {
			fail("inclusion of %d: %v", index, err)
		}
		ours, err := tlog.ProveRecord(pcp.size, index, reader)
		if err != nil || len(ours) != len(proof) {
			fail("x/mod's proof of %d differs in length from the served one", index)
		}
		if sampleProof == nil {
			sampleProof = text
		}
	}

	// Consistency with a checkpoint seen earlier.
	oldText, err := os.ReadFile(oldFile)
	if err != nil {
		fail("%v", err)
	}
	old, err := open(oldText, verifier)
	if err != nil {
		fail("old checkpoint: %v", err)
	}
	if old.size > cp.size {
		fail("the log went backwards: %d then %d", old.size, cp.size)
	}
	treeProof, err := tlog.ProveTree(cp.size, old.size, reader)
	if err != nil {
		fail("consistency proof: %v", err)
	}
	if err := tlog.CheckTree(treeProof, cp.size, cp.root, old.size, old.root); err != nil {
		fail("the old checkpoint (size %d) is not consistent with the new (size %d): %v", old.size, cp.size, err)
	}

	// Tampering must be caught: a flipped byte in a checkpoint, an entry, a tile, a proof.
	rootLine := bytes.Index(noteText, []byte("\n")) + 1
	rootLine = rootLine + bytes.Index(noteText[rootLine:], []byte("\n")) + 1
	if _, err := open(flip(noteText, rootLine+3), verifier); err == nil {
		fail("a checkpoint with a flipped byte verified")
	}
	tampered := append([][]byte(nil), all...)
	tampered[len(all)/2] = flip(all[len(all)/2], 10)
	if bad, err := rebuild(tampered); err == nil {
		if r, _ := tlog.TreeHash(cp.size, readerOf(bad)); r == cp.root {
			fail("an entry with a flipped byte gave the same root")
		}
	}
	if firstTile != nil {
		want, _ := tlog.ReadTileData(tiles[0], reader)
		if bytes.Equal(flip(firstTile, 7), want) {
			fail("tile %s with a flipped byte matched", firstPath)
		}
	}
	if sampleProof != nil {
		head := bytes.Index(sampleProof, []byte("\n\n"))
		// Flip a byte inside the first hash line (after the header and index lines).
		at := bytes.Index(sampleProof, []byte("\nindex "))
		at = at + 1 + bytes.Index(sampleProof[at+1:], []byte("\n")) + 2
		if at < head {
			index, proof, proofNote, err := parseProof(flip(sampleProof, at))
			if err == nil {
				pcp, _ := open(proofNote, verifier)
				if tlog.CheckRecord(proof, pcp.size, pcp.root, index, tlog.RecordHash(all[index])) == nil {
					fail("a proof with a flipped byte verified")
				}
			}
		}
	}
	fmt.Printf("ok %d\n", cp.size)
}
