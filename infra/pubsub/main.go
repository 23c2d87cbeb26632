// A Pub/Sub-protocol server for tests: cloud.google.com/go/pubsub/v2/pstest (Google's in-memory
// implementation of the Publisher and Subscriber gRPC services) listening on a loopback port.
//
//	pubsub-peer -port 0
//
// prints "listening 127.0.0.1:PORT" on stdout once it serves, and runs until stdin closes or it is
// signalled, so a test that dies never leaves it behind.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"syscall"

	"cloud.google.com/go/pubsub/v2/pstest"
)

func main() {
	port := flag.Int("port", 0, "TCP port on 127.0.0.1 (0: any free port)")
	flag.Parse()
	srv := pstest.NewServerWithPort(*port)
	fmt.Printf("listening %s\n", srv.Addr)
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(done)
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case <-done:
	case <-sig:
	}
	if err := srv.Close(); err != nil {
		log.Print(err)
	}
}
