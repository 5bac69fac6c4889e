// Command fluent sends N records to a Fluentd forward server with
// fluent-logger-golang and RequestAck (each record carries a `chunk` id
// and Post returns once the server answered `{"ack": id}`). Each
// acknowledged record's id is appended to -acked after its ACK; with
// -retry, a failed Post is retried until the deadline (the kill -9 test).
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/fluent/fluent-logger-golang/fluent"
	"sluice.test/clients/acked"
)

func main() {
	addr := flag.String("addr", "", "host:port")
	n := flag.Int("n", 1000, "records")
	prefix := flag.String("id", "ff", "record id prefix")
	ackedPath := flag.String("acked", "", "file of acknowledged ids")
	retry := flag.Duration("retry", 0, "retry a failed post for this long")
	sharedKey := flag.String("shared-key", "", "unused by this client (no handshake support)")
	flag.Parse()
	_ = sharedKey
	host, p, err := net.SplitHostPort(*addr)
	if err != nil {
		fail(err)
	}
	port, _ := strconv.Atoi(p)
	out, err := acked.Open(*ackedPath, *prefix)
	if err != nil {
		fail(err)
	}
	deadline := time.Now().Add(*retry)
	lg, err := fluent.New(fluent.Config{FluentHost: host, FluentPort: port, RequestAck: true, Timeout: 10 * time.Second, WriteTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, MaxRetry: 3, RetryWait: 100, SubSecondPrecision: true})
	if err != nil {
		fail(err)
	}
	for i := 0; i < *n; {
		rec := map[string]interface{}{"message": fmt.Sprintf("%s-%d", *prefix, i), "seq": i, "kubernetes": map[string]string{"pod": "web-0"}}
		if err := lg.Post("app.web", rec); err != nil {
			if time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			fail(fmt.Errorf("record %d: %w", i, err))
		}
		out.Add(i, i+1)
		if i%50 == 0 {
			out.Sync()
		}
		i++
	}
	out.Sync()
	_ = lg.Close()
	fmt.Printf("acked %d\n", *n)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "fluent:", err)
	os.Exit(1)
}
