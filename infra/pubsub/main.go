// A Pub/Sub-protocol server for tests: cloud.google.com/go/pubsub/v2/pstest (Google's in-memory
// implementation of the Publisher and Subscriber gRPC services) listening on a loopback port.
//
//	pubsub-peer -port 0
//
// prints "listening 127.0.0.1:PORT" on stdout once it serves, and runs until stdin closes or it is
// signalled, so a test that dies never leaves it behind.
//
// Failures a real project answers and pstest never does, by topic id, for tests of how they are
// handled: a publish to a topic whose id starts with "throttled-" is answered RESOURCE_EXHAUSTED
// (quota), "denied-" PERMISSION_DENIED; the topics must exist as usual.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// byTopic answers publishes to topics named for a failure with that failure.
type byTopic struct{}

func (byTopic) React(req interface{}) (bool, interface{}, error) {
	p, ok := req.(*pb.PublishRequest)
	if !ok {
		return false, nil, nil
	}
	id := p.GetTopic()[strings.LastIndex(p.GetTopic(), "/")+1:]
	switch {
	case strings.HasPrefix(id, "throttled-"):
		return true, nil, status.Errorf(codes.ResourceExhausted, "Quota exceeded for quota metric 'Publisher throughput' of topic %s", id)
	case strings.HasPrefix(id, "denied-"):
		return true, nil, status.Errorf(codes.PermissionDenied, "User not authorized to perform this action (pubsub.topics.publish on %s)", id)
	}
	return false, nil, nil
}

func main() {
	port := flag.Int("port", 0, "TCP port on 127.0.0.1 (0: any free port)")
	flag.Parse()
	srv := pstest.NewServerWithPort(*port, pstest.ServerReactorOption{FuncName: "Publish", Reactor: byTopic{}})
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
