// SPDX-License-Identifier: MIT
// Load generator for `cprof serve` (bench/serve_ingest.sh, bench/serve_query.sh):
// real HTTP clients (net/http, keep-alive), one goroutine each.
//
//	push:  serve_load -mode push -url URL -clients 16 -duration 60s BODY...
//	       each client POSTs BODY[i % n] to /api/v1/push?name=bench&client=cI&time=T
//	       (a distinct T per push) as fast as the server answers.
//	query: serve_load -mode query -url URL -clients 4 -n 400 PATH...
//	       GETs the paths round robin and reports latency percentiles per path.
//
// Prints one JSON object on stdout.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

func pct(d []time.Duration, p float64) float64 {
	if len(d) == 0 {
		return 0
	}
	i := int(float64(len(d)-1) * p)
	return float64(d[i].Microseconds()) / 1000
}

func main() {
	mode := flag.String("mode", "push", "push or query")
	url := flag.String("url", "http://127.0.0.1:7070", "the server")
	clients := flag.Int("clients", 16, "concurrent clients")
	duration := flag.Duration("duration", 60*time.Second, "push: how long")
	n := flag.Int("n", 400, "query: requests in all")
	t0 := flag.Int64("start", 0, "push: unix seconds of the first push's time= (default: 30 minutes ago); "+
		"a test run under faketime passes its shell's clock, which Go's time.Now does not see")
	flag.Parse()
	args := flag.Args()
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "serve_load: give bodies (push) or paths (query)")
		os.Exit(2)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: *clients * 2}
	client := &http.Client{Transport: tr, Timeout: 60 * time.Second}

	if *mode == "push" {
		bodies := make([][]byte, len(args))
		for i, a := range args {
			b, err := os.ReadFile(a)
			if err != nil {
				fmt.Fprintln(os.Stderr, "serve_load:", err)
				os.Exit(1)
			}
			bodies[i] = b
		}
		var seq int64 = time.Now().Add(-30 * time.Minute).UnixNano()
		if *t0 != 0 {
			seq = *t0 * int64(time.Second)
		}
		ok := make([]int64, *clients)
		errs := make([]int64, *clients)
		lat := make([][]time.Duration, *clients)
		var firstErr atomic.Value
		deadline := time.Now().Add(*duration)
		var wg sync.WaitGroup
		start := time.Now()
		for c := 0; c < *clients; c++ {
			wg.Add(1)
			go func(c int) {
				defer wg.Done()
				body := bodies[c%len(bodies)]
				for time.Now().Before(deadline) {
					t := atomic.AddInt64(&seq, 1000)
					u := fmt.Sprintf("%s/api/v1/push?name=bench&client=c%d&time=%d", *url, c, t)
					t0 := time.Now()
					resp, err := client.Post(u, "application/octet-stream", bytes.NewReader(body))
					if err == nil {
						msg, _ := io.ReadAll(resp.Body)
						resp.Body.Close()
						if resp.StatusCode != 200 {
							err = fmt.Errorf("status %d: %s", resp.StatusCode, bytes.TrimSpace(msg))
						}
					}
					lat[c] = append(lat[c], time.Since(t0))
					if err != nil {
						errs[c]++
						firstErr.CompareAndSwap(nil, err.Error())
						continue
					}
					ok[c]++
				}
			}(c)
		}
		wg.Wait()
		elapsed := time.Since(start).Seconds()
		var all []time.Duration
		var tok, terr int64
		for c := range ok {
			tok += ok[c]
			terr += errs[c]
			all = append(all, lat[c]...)
		}
		sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
		out := map[string]any{
			"pushes": tok, "errors": terr, "seconds": elapsed, "per_second": float64(tok) / elapsed,
			"p50_ms": pct(all, 0.5), "p99_ms": pct(all, 0.99), "per_client": ok,
		}
		if e := firstErr.Load(); e != nil {
			out["first_error"] = e
		}
		json.NewEncoder(os.Stdout).Encode(out)
		return
	}

	// query
	type res struct {
		path string
		d    time.Duration
		err  string
	}
	jobs := make(chan string)
	results := make(chan res, *n)
	var wg sync.WaitGroup
	for c := 0; c < *clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range jobs {
				t0 := time.Now()
				resp, err := client.Get(*url + p)
				e := ""
				if err != nil {
					e = err.Error()
				} else {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						e = fmt.Sprintf("status %d", resp.StatusCode)
					}
				}
				results <- res{p, time.Since(t0), e}
			}
		}()
	}
	for i := 0; i < *n; i++ {
		jobs <- args[i%len(args)]
	}
	close(jobs)
	wg.Wait()
	close(results)
	per := map[string][]time.Duration{}
	var all []time.Duration
	errors := 0
	firstErr := ""
	for r := range results {
		if r.err != "" {
			errors++
			if firstErr == "" {
				firstErr = r.path + ": " + r.err
			}
		}
		per[r.path] = append(per[r.path], r.d)
		all = append(all, r.d)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	paths := map[string]any{}
	for p, d := range per {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		paths[p] = map[string]float64{"p50_ms": pct(d, 0.5), "p99_ms": pct(d, 0.99), "max_ms": pct(d, 1)}
	}
	out := map[string]any{"requests": len(all), "errors": errors, "p50_ms": pct(all, 0.5), "p99_ms": pct(all, 0.99),
		"paths": paths}
	if firstErr != "" {
		out["first_error"] = firstErr
	}
	json.NewEncoder(os.Stdout).Encode(out)
}
