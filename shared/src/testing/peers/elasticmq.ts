// ElasticMQ (SQS protocol) for tests: resolved from Maven Central by infra/elasticmq/elasticmq.sh,
// run with java on a free loopback port, stopped at teardown.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, ROOT, type Teardown } from '../index.ts';
import { runSetup, startPeerProcess } from './process.ts';

export interface ElasticMq {
  port: number;
  /** http://127.0.0.1:<port> */
  url: string;
}

const answers = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });

/**
 * Starts ElasticMQ. `publicPort` is the port its queue URLs name (a front such as the AWS gate that
 * forwards to it); its own port by default.
 */
export async function startElasticMq(t: Teardown, opts: { port?: number; publicPort?: number } = {}): Promise<ElasticMq> {
  const libs = runSetup(join(ROOT, 'infra/elasticmq/elasticmq.sh'), ['libs'], ROOT);
  const port = opts.port ?? (await freePort());
  const dir = mkdtempSync(join(process.env.SWITCHYARD_TEST_RUN ?? tmpdir(), 'elasticmq-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const conf = join(dir, 'elasticmq.conf');
  writeFileSync(
    conf,
    `include classpath("application.conf")
node-address { protocol = "http", host = "127.0.0.1", port = ${opts.publicPort ?? port}, context-path = "" }
rest-sqs { enabled = true, bind-port = ${port}, bind-hostname = "127.0.0.1", sqs-limits = strict }
generate-node-address = false
pekko.loglevel = "WARNING"
`,
  );
  await startPeerProcess(
    t,
    'ElasticMQ',
    'java',
    ['-Xms64m', '-Xmx256m', `-Dconfig.file=${conf}`, '-cp', `${libs}/*`, 'org.elasticmq.server.Main'],
    {
      cwd: dir,
      ready: async (out) => /ElasticMQ server \(.*\) started/.test(out) && (await answers(port)),
    },
  );
  return { port, url: `http://127.0.0.1:${port}` };
}
