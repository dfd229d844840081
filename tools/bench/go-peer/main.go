// Command etcdbench measures etcd's own Go client (go.etcd.io/etcd/client/v3,
// with its concurrency and experimental/recipes packages) with the same
// workloads as etcd-recipes-bench, so the C++ numbers can be compared with a
// reference client against the same server in the same run. It prints one
// JSON object on stdout; diagnostics go to stderr.
//
// Built in module mode by etcd-recipes-bench (go_peer.cpp), which writes the
// go.mod: the client release of the same minor as the server it measures,
// pinned in tools/etcd-releases/versions.txt; see ../README.md.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	recipe "go.etcd.io/etcd/client/v3/experimental/recipes"
)

// Must match the C++ bench so that both clients send identical requests.
const (
	valueSize     = 32
	pipelineDepth = 64
	manyLocks     = 256 // lock_cycle_many's lock count
	keyPrefix     = "bench/go/"
)

var value = strings.Repeat("v", valueSize)

// warmupFor is how long each workload runs untimed first, so that
// connection setup and lazy initialisation stay out of the timed window.
var warmupFor time.Duration

func warmup(fn func() error) error {
	end := time.Now().Add(warmupFor)
	for time.Now().Before(end) {
		if err := fn(); err != nil {
			return err
		}
	}
	return nil
}

// sequential runs fn back to back for d and returns completions per second.
func sequential(d time.Duration, fn func() error) (float64, error) {
	if err := warmup(fn); err != nil {
		return 0, err
	}
	n := 0
	start := time.Now()
	end := start.Add(d)
	for time.Now().Before(end) {
		if err := fn(); err != nil {
			return 0, err
		}
		n++
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// concurrent runs fn from `workers` goroutines for d (one shared client:
// the idiomatic Go way to keep `workers` requests in flight). fn gets the
// worker's index, the same in the warm-up and the timed window.
func concurrent(d time.Duration, workers int, fn func(worker int) error) (float64, error) {
	if _, err := workersFor(warmupFor, workers, fn); err != nil {
		return 0, err
	}
	return workersFor(d, workers, fn)
}

func workersFor(d time.Duration, workers int, fn func(worker int) error) (float64, error) {
	var n int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(d)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for time.Now().Before(end) {
				if err := fn(w); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				if time.Now().Before(end) {
					atomic.AddInt64(&n, 1)
				}
			}
		}(w)
	}
	wg.Wait()
	return float64(n) / d.Seconds(), firstErr
}

// putOnly measures go_put_seq alone: one round of the bench's paired
// put_seq_vs_go_paired, which alternates short windows of both clients.
func putOnly(endpoints []string, d time.Duration) (map[string]float64, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	ctx := context.Background()
	rate, err := sequential(d, func() error {
		_, err := cli.Put(ctx, keyPrefix+"put", value)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("go_put_seq: %w", err)
	}
	return map[string]float64{"go_put_seq": rate}, nil
}

func run(endpoints []string, d time.Duration) (map[string]float64, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	ctx := context.Background()
	put := func() error {
		_, err := cli.Put(ctx, keyPrefix+"put", value)
		return err
	}
	out := map[string]float64{}

	if out["go_put_seq"], err = sequential(d, put); err != nil {
		return nil, fmt.Errorf("go_put_seq: %w", err)
	}
	if out["go_put_pipelined"], err = concurrent(d, pipelineDepth, func(int) error { return put() }); err != nil {
		return nil, fmt.Errorf("go_put_pipelined: %w", err)
	}

	session, err := concurrency.NewSession(cli, concurrency.WithTTL(10))
	if err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	defer session.Close()
	mu := concurrency.NewMutex(session, keyPrefix+"mutex")
	cycle := func() error {
		if err := mu.Lock(ctx); err != nil {
			return err
		}
		return mu.Unlock(ctx)
	}
	if out["go_mutex_cycle_seq"], err = sequential(d, cycle); err != nil {
		return nil, fmt.Errorf("go_mutex_cycle_seq: %w", err)
	}

	// elect_cycle_seq: Campaign until leading, then Resign, on the same
	// session; uncontended.
	election := concurrency.NewElection(session, keyPrefix+"election")
	electCycle := func() error {
		if err := election.Campaign(ctx, "bench"); err != nil {
			return err
		}
		return election.Resign(ctx)
	}
	if out["go_elect_cycle_seq"], err = sequential(d, electCycle); err != nil {
		return nil, fmt.Errorf("go_elect_cycle_seq: %w", err)
	}

	// lock_cycle_many: one Mutex per goroutine, each on its own name, all on
	// the one session. A Mutex is not safe for concurrent use, but worker i
	// only ever uses mutexes[i].
	// etcd's experimental/recipes Queue: Enqueue is one create-if-absent Txn
	// under prefix/<unix nanos>; Dequeue reads the oldest key (a Get sorted
	// by create revision) and deletes it with a Txn guarded by its mod
	// revision.
	queue := recipe.NewQueue(cli, keyPrefix+"queue")
	queueCycle := func() error {
		if err := queue.Enqueue(value); err != nil {
			return err
		}
		got, err := queue.Dequeue()
		if err != nil {
			return err
		}
		if got != value {
			return fmt.Errorf("dequeued %q", got)
		}
		return nil
	}
	if out["go_queue_cycle_seq"], err = sequential(d, queueCycle); err != nil {
		return nil, fmt.Errorf("go_queue_cycle_seq: %w", err)
	}

	mutexes := make([]*concurrency.Mutex, manyLocks)
	for i := range mutexes {
		mutexes[i] = concurrency.NewMutex(session, fmt.Sprintf("%smany/%d", keyPrefix, i))
	}
	manyCycle := func(w int) error {
		if err := mutexes[w].Lock(ctx); err != nil {
			return err
		}
		return mutexes[w].Unlock(ctx)
	}
	if out["go_mutex_cycle_many"], err = concurrent(d, manyLocks, manyCycle); err != nil {
		return nil, fmt.Errorf("go_mutex_cycle_many: %w", err)
	}
	return out, nil
}

// failover writes sequentially for d while the bench kills a member, and
// reports the longest gap between two successful puts (from the end of one
// to the end of the next) and when it began, so that the bench can check
// that the gap spans its kill. Every put has a 30 s timeout: longer than
// etcd holds a request it cannot serve.
func failover(endpoints []string, d time.Duration) (map[string]float64, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	var lastOK time.Time
	var gap time.Duration
	var gapStart time.Time
	failed := 0
	for end := time.Now().Add(d); time.Now().Before(end); {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := cli.Put(ctx, keyPrefix+"failover", value)
		cancel()
		if err != nil {
			failed++
			time.Sleep(time.Millisecond)
			continue
		}
		now := time.Now()
		if !lastOK.IsZero() && now.Sub(lastOK) > gap {
			gap, gapStart = now.Sub(lastOK), lastOK
		}
		lastOK = now
	}
	return map[string]float64{
		"gap_ms":         float64(gap) / float64(time.Millisecond),
		"gap_start_unix": float64(gapStart.UnixNano()) / 1e9,
		"failed_puts":    float64(failed),
	}, nil
}

func main() {
	endpoints := flag.String("endpoints", "127.0.0.1:2379", "comma-separated host:port list")
	duration := flag.Duration("duration", 5*time.Second, "timed window per metric")
	flag.DurationVar(&warmupFor, "warmup", time.Second, "untimed run before each timed window")
	mode := flag.String("mode", "metrics",
		"metrics: every workload in turn; put: go_put_seq alone (one round of a paired comparison); failover: see func failover")
	flag.Parse()

	var out map[string]float64
	var err error
	if *mode == "failover" {
		out, err = failover(strings.Split(*endpoints, ","), *duration)
	} else if *mode == "put" {
		out, err = putOnly(strings.Split(*endpoints, ","), *duration)
	} else {
		out, err = run(strings.Split(*endpoints, ","), *duration)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcdbench:", err)
		os.Exit(1)
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "etcdbench:", err)
		os.Exit(1)
	}
}
