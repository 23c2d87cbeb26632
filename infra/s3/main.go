// An S3-protocol server for tests and the benchmark: github.com/johannesboyne/gofakes3 (the S3 REST
// API: buckets, PUT/GET/HEAD/LIST of objects with their metadata, S3's XML errors) over its
// in-memory backend, listening on a loopback port.
//
//	s3-peer -port 0
//
// prints "listening 127.0.0.1:PORT" on stdout once it serves, and runs until stdin closes or it is
// signalled, so a test that dies never leaves it behind. It checks no signature: tests put the AWS
// gate (shared/src/testing/peers/aws-gate.ts) in front, as for the other AWS emulators.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

func main() {
	port := flag.Int("port", 0, "TCP port on 127.0.0.1 (0: any free port)")
	flag.Parse()
	faker := gofakes3.New(s3mem.New(), gofakes3.WithLogger(gofakes3.DiscardLog()))
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: faker.Server()}
	go func() {
		if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
			log.Fatal(err)
		}
	}()
	fmt.Printf("listening %s\n", ln.Addr())
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
	if err := srv.Shutdown(context.Background()); err != nil {
		log.Print(err)
	}
}
