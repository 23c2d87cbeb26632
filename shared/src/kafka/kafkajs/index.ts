// The changes to kafkajs's internals the Kafka bus runs with, loaded together by ../index.ts before
// any client is made. Each module patches one thing, checks the kafkajs version first (version.ts),
// and says why it exists and when to drop it; docs/architecture.md ("kafkajs patches") has one line
// on each. Test: shared/test/kafkajs-*.test.ts.
import './acked.ts';
import './crc32c.ts';
import './fetch-wait.ts';
import './idle-poll.ts';
import './produce.ts';
