// Command lumber sends N events to a Lumberjack v2 server with the
// go-lumber sync client (the library Beats use), batch by batch, and
// checks that each batch's ACK names its last sequence number. Each
// acknowledged event's id is appended to -acked (one line each) after the
// ACK; with -retry the client reconnects and resends an unacknowledged
// batch until the deadline (the kill -9 test).
package main

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"net"
	"os"
	"time"

	v2 "github.com/elastic/go-lumber/client/v2"
	"sluice.test/clients/acked"
)

func main() {
	addr := flag.String("addr", "", "host:port")
	n := flag.Int("n", 1000, "events")
	batch := flag.Int("batch", 100, "events per window")
	prefix := flag.String("id", "lj", "event id prefix")
	compress := flag.Int("compress", 0, "zlib level (0: JSON frames)")
	ca := flag.String("ca", "", "PEM CA: connect with TLS")
	cert := flag.String("cert", "", "client certificate (PEM)")
	key := flag.String("key", "", "client key (PEM)")
	ackedPath := flag.String("acked", "", "file of acknowledged ids")
	retry := flag.Duration("retry", 0, "reconnect and resend for this long")
	flag.Parse()

	out, err := acked.Open(*ackedPath, *prefix)
	if err != nil {
		fail(err)
	}
	deadline := time.Now().Add(*retry)
	dial := func() (*v2.SyncClient, error) {
		opts := []v2.Option{v2.Timeout(30 * time.Second), v2.CompressionLevel(*compress)}
		if *ca == "" {
			return v2.SyncDial(*addr, opts...)
		}
		pool := x509.NewCertPool()
		pem, err := os.ReadFile(*ca)
		if err != nil {
			return nil, err
		}
		pool.AppendCertsFromPEM(pem)
		cfg := &tls.Config{RootCAs: pool, ServerName: "localhost"}
		if *cert != "" {
			c, err := tls.LoadX509KeyPair(*cert, *key)
			if err != nil {
				return nil, err
			}
			cfg.Certificates = []tls.Certificate{c}
		}
		return v2.SyncDialWith(func(network, address string) (net.Conn, error) {
			return tls.Dial(network, address, cfg)
		}, *addr, opts...)
	}
	var cl *v2.SyncClient
	sent := 0
	for sent < *n {
		if cl == nil {
			c, err := dial()
			if err != nil {
				if time.Now().Before(deadline) {
					time.Sleep(100 * time.Millisecond)
					continue
				}
				fail(err)
			}
			cl = c
		}
		end := sent + *batch
		if end > *n {
			end = *n
		}
		events := make([]interface{}, 0, end-sent)
		for i := sent; i < end; i++ {
			events = append(events, map[string]interface{}{
				"@timestamp": time.Now().UTC().Format(time.RFC3339Nano),
				"@metadata":  map[string]interface{}{"beat": "winlogbeat", "type": "_doc", "version": "8.15.0"},
				"message":    fmt.Sprintf("%s-%d", *prefix, i),
				"host":       map[string]interface{}{"name": "win-1"},
				"agent":      map[string]interface{}{"type": "winlogbeat", "name": "win-1", "version": "8.15.0"},
				"winlog":     map[string]interface{}{"channel": "Security", "event_id": 4624},
				"seq":        i,
			})
		}
		got, err := cl.Send(events)
		if err != nil {
			_ = cl.Close()
			cl = nil
			if time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			fail(fmt.Errorf("batch at %d: %w", sent, err))
		}
		if got != len(events) {
			fail(fmt.Errorf("batch at %d: ACK %d, want %d", sent, got, len(events)))
		}
		out.Add(sent, end)
		out.Sync()
		sent = end
	}
	if cl != nil {
		_ = cl.Close()
	}
	fmt.Printf("acked %d\n", sent)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "lumber:", err)
	os.Exit(1)
}
