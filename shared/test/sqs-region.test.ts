// The region an sqs destination signs for when its region is left empty: the one in its queue URL
// (shared/src/destinations/types/sqs.ts), whatever shape of AWS queue URL it is.
import t from 'tap';
import { regionOfQueueUrl } from '../src/destinations/types/sqs.ts';

t.test('regionOfQueueUrl: every AWS queue URL shape names its region', async (t) => {
  const cases: [string, string][] = [
    ['https://sqs.eu-west-1.amazonaws.com/123456789012/q', 'eu-west-1'],
    ['https://sqs.cn-north-1.amazonaws.com.cn/123456789012/q', 'cn-north-1'],
    ['https://us-west-2.queue.amazonaws.com/123456789012/q', 'us-west-2'],
    ['https://sqs-fips.us-gov-west-1.amazonaws.com/123456789012/q.fifo', 'us-gov-west-1'],
    ['https://sqs-fips.us-east-2.amazonaws.com/123456789012/q', 'us-east-2'],
    ['https://vpce-0abc123-xyz.sqs.eu-west-1.vpce.amazonaws.com/123456789012/q', 'eu-west-1'],
    ['https://SQS.AP-SOUTHEAST-2.AMAZONAWS.COM/123456789012/q', 'ap-southeast-2'],
  ];
  for (const [url, region] of cases) t.equal(regionOfQueueUrl(url), region, url);
});

t.test('regionOfQueueUrl: other hosts name none', async (t) => {
  for (const url of [
    'http://127.0.0.1:9324/000000000000/q',
    'http://localhost:4566/000000000000/q',
    'https://sqs.eu-west-1.amazonaws.com.example.com/123456789012/q',
    'https://queue.amazonaws.com/123456789012/q',
    'not a url',
  ]) {
    t.equal(regionOfQueueUrl(url), undefined, url);
  }
});
